package pluginapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

// Vector is one case of the runner contract's shared test vectors
// (proto/testdata/vectors in the worker's repository): the requests a host
// sends, and what a conforming runner answers. Every runner SDK replays
// them; plugin check sends their requests to any runner.
type Vector struct {
	ContractVersion int
	Case            string
	Description     string
	Calls           []VectorCall
}

// VectorCall is one call of a Vector.
type VectorCall struct {
	// Method is the contract's method: "RunModelStep", "PollToolTask"...
	Method string
	// Request is the host's request in this package's types:
	// *BuildUserMessageRequest, *RunModelStepRequest, *ExecuteToolRequest,
	// *PollToolTaskRequest, *CompactionCutoffRequest or
	// *SummarizeContextRequest (their Events left nil).
	Request any
	// Fresh reports a request any runner can answer once its transcript
	// holds the runner's own framework items: it names no run state, tool
	// call record, tool or task of the vector's own runner.
	Fresh bool
	// CancelAfterFrames, when above 0, is the number of live frames after
	// which the host cancels the call.
	CancelAfterFrames int
}

// ParseVector reads one vector file. It refuses a file of another contract
// version, an unknown method, and a request that is not the method's.
func ParseVector(data []byte) (*Vector, error) {
	var raw struct {
		ContractVersion int    `json:"contract_version"`
		Case            string `json:"case"`
		Description     string `json:"description"`
		Calls           []struct {
			Method            string          `json:"method"`
			Request           json.RawMessage `json:"request"`
			CancelAfterFrames int             `json:"cancel_after_frames"`
		} `json:"calls"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("vector: %w", err)
	}
	if raw.ContractVersion != ProtocolVersion {
		return nil, fmt.Errorf("vector %q: contract version %d, this SDK speaks %d", raw.Case, raw.ContractVersion, ProtocolVersion)
	}
	v := &Vector{ContractVersion: raw.ContractVersion, Case: raw.Case, Description: raw.Description}
	for i, c := range raw.Calls {
		call, err := parseVectorRequest(c.Method, c.Request)
		if err != nil {
			return nil, fmt.Errorf("vector %q call %d (%s): %w", raw.Case, i+1, c.Method, err)
		}
		call.CancelAfterFrames = c.CancelAfterFrames
		v.Calls = append(v.Calls, call)
	}
	return v, nil
}

func parseVectorRequest(method string, data []byte) (VectorCall, error) {
	call := VectorCall{Method: method}
	var err error
	switch method {
	case "BuildUserMessage":
		var r runnerpb.BuildUserMessageRequest
		err = protojson.Unmarshal(data, &r)
		call.Request, call.Fresh = &BuildUserMessageRequest{Agent: r.GetAgent(), Text: r.GetText()}, true
	case "RunModelStep":
		var r runnerpb.RunModelStepRequest
		err = protojson.Unmarshal(data, &r)
		call.Request = &RunModelStepRequest{Turn: fromProtoTurn(r.GetTurn())}
		call.Fresh = r.GetTurn().GetRunState() == "" && len(r.GetTurn().GetToolCalls()) == 0
	case "ExecuteDeferredToolCall":
		var r runnerpb.ExecuteToolRequest
		err = protojson.Unmarshal(data, &r)
		call.Request = fromProtoExecuteToolRequest(&r)
	case "PollToolTask":
		var r runnerpb.PollToolTaskRequest
		err = protojson.Unmarshal(data, &r)
		call.Request = fromProtoPollToolTaskRequest(&r)
	case "SelectCompactionCutoff":
		var r runnerpb.CompactionCutoffRequest
		err = protojson.Unmarshal(data, &r)
		call.Request, call.Fresh = &CompactionCutoffRequest{Turn: fromProtoTurn(r.GetTurn()), RetainedTokenBudget: r.GetRetainedTokenBudget()}, true
	case "SummarizeContext":
		var r runnerpb.SummarizeContextRequest
		err = protojson.Unmarshal(data, &r)
		call.Request, call.Fresh = fromProtoSummarizeContextRequest(&r), true
	default:
		return call, fmt.Errorf("unknown method %q", method)
	}
	return call, err
}
