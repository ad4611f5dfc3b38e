package pluginapi

// The host side: grpcClient implements Runner and every optional interface
// by calling a plugin's runnerpb.Runner service, so host code calls a
// plugin exactly as it would call a Runner in its own process.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

// grpcClient is what RunnerPlugin.GRPCClient dispenses.
//
// Errors: the runner's own failures keep the runner's message. The client's
// own errors are *rpcError values whose gRPC status code classifies them:
// Unavailable when the plugin went away (its process exited, its connection
// broke, or it returned Unavailable), InvalidArgument for a malformed
// outcome, Unimplemented for an optional call the runner lacks. When the
// caller's ctx ends first, the error wraps ctx.Err().
type grpcClient struct {
	client runnerpb.RunnerClient
	// pluginCtx is the ctx go-plugin gave GRPCClient: it is cancelled when
	// the plugin process exits, which ends every call in flight.
	pluginCtx context.Context
}

func newGRPCClient(pluginCtx context.Context, client runnerpb.RunnerClient) *grpcClient {
	return &grpcClient{client: client, pluginCtx: pluginCtx}
}

// callContext returns a ctx that ends with ctx or with the plugin process.
func (c *grpcClient) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	callCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.pluginCtx, cancel)
	return callCtx, func() {
		stop()
		cancel()
	}
}

// fail classifies err, an error of a call of method made with ctx.
func (c *grpcClient) fail(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	var own *rpcError
	if errors.As(err, &own) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", method, ctxErr)
	}
	st := status.Convert(err)
	if c.pluginCtx.Err() != nil || st.Code() == codes.Unavailable {
		return &rpcError{
			code:  codes.Unavailable,
			msg:   "runner plugin went away: " + st.Message(),
			cause: err,
		}
	}
	switch st.Code() {
	case codes.InvalidArgument:
		return malformed(st.Message())
	case codes.Unimplemented:
		return &rpcError{code: codes.Unimplemented, msg: "runner does not implement " + method, cause: err}
	case codes.FailedPrecondition:
		if st.Message() == transcriptCacheMiss {
			return fmt.Errorf("%s: %w", method, ErrTranscriptNotCached)
		}
		return &PermanentError{Err: &rpcError{code: st.Code(), msg: st.Message(), cause: err}}
	}
	return RetryAfter(&rpcError{code: st.Code(), msg: st.Message(), cause: err}, retryDelay(st))
}

// retryDelay is the delay of a status's google.rpc.RetryInfo detail, which
// a runner in any language may attach; 0 without one.
func retryDelay(st *status.Status) time.Duration {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			if err := ri.GetRetryDelay().CheckValid(); err == nil {
				return ri.GetRetryDelay().AsDuration()
			}
		}
	}
	return 0
}

// Describe is Info with what InfoResponse has no field for: the runner's
// capabilities and the protocol versions it speaks. internal/runnerhost
// finds it by type assertion.
func (c *grpcClient) Describe(ctx context.Context) (*InfoResponse, Capabilities, []int, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	resp, err := c.client.Info(callCtx, &runnerpb.InfoRequest{})
	if err != nil {
		return nil, Capabilities{}, nil, c.fail(ctx, "Info", err)
	}
	versions := fromProtoProtocolVersions(resp.GetProtocolVersions())
	if len(versions) == 0 {
		versions = []int{ProtocolVersion}
	}
	return &InfoResponse{Name: resp.GetName(), Version: resp.GetVersion()}, fromProtoCapabilities(resp.GetCapabilities()), versions, nil
}

// Info implements Runner.
func (c *grpcClient) Info(ctx context.Context, _ *InfoRequest) (*InfoResponse, error) {
	info, _, _, err := c.Describe(ctx)
	return info, err
}

// Configure implements Runner.
func (c *grpcClient) Configure(ctx context.Context, req *ConfigureRequest) (*ConfigureResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	resp, err := c.client.Configure(callCtx, toProtoConfigure(req))
	if err != nil {
		return nil, c.fail(ctx, "Configure", err)
	}
	out := fromProtoConfigureResponse(resp)
	if reason := checkConfigureResponse(out); reason != "" {
		return nil, malformed(reason)
	}
	return out, nil
}

// BuildUserMessage implements Runner.
func (c *grpcClient) BuildUserMessage(ctx context.Context, req *BuildUserMessageRequest) (*BuildUserMessageResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	resp, err := c.client.BuildUserMessage(callCtx, &runnerpb.BuildUserMessageRequest{Agent: req.Agent, Text: req.Text})
	if err != nil {
		return nil, c.fail(ctx, "BuildUserMessage", err)
	}
	out := &BuildUserMessageResponse{Message: fromProtoFrameworkMessage(resp.GetMessage())}
	if reason := checkBuildUserMessageResponse(out); reason != "" {
		return nil, malformed(reason)
	}
	return out, nil
}

// RunModelStep implements Runner. Live frames go to req.Events in order.
func (c *grpcClient) RunModelStep(ctx context.Context, req *RunModelStepRequest) (*RunModelStepResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	const method = "RunModelStep"
	stream, err := c.client.RunModelStep(callCtx, &runnerpb.RunModelStepRequest{Turn: toProtoTurn(&req.Turn)})
	if err != nil {
		return nil, c.fail(ctx, method, err)
	}
	outcome, err := receive(method, stream, req.Events, func(f *runnerpb.RunModelStepFrame) (liveFrame, *runnerpb.RunModelStepResponse) {
		switch k := f.GetFrame().(type) {
		case *runnerpb.RunModelStepFrame_TextDelta:
			return liveFrame{kind: liveText, text: k.TextDelta.GetText()}, nil
		case *runnerpb.RunModelStepFrame_ReasoningDelta:
			return liveFrame{kind: liveReasoning, text: k.ReasoningDelta.GetText()}, nil
		case *runnerpb.RunModelStepFrame_Event:
			return liveFrame{kind: liveEvent, eventType: k.Event.GetType(), text: k.Event.GetPayloadJson()}, nil
		case *runnerpb.RunModelStepFrame_Heartbeat:
			return liveFrame{kind: liveHeartbeat}, nil
		case *runnerpb.RunModelStepFrame_Outcome:
			return liveFrame{}, nonNil(k.Outcome)
		}
		return liveFrame{}, nil
	})
	if err != nil {
		return nil, c.fail(ctx, method, err)
	}
	resp := fromProtoRunModelStepResponse(outcome)
	if reason := checkRunModelStepResponse(resp, &req.Turn); reason != "" {
		return nil, malformed(reason)
	}
	return resp, nil
}

// ExecuteDeferredToolCall implements Runner. A tool failure the model should
// see comes back as the response's Error, never as the error.
func (c *grpcClient) ExecuteDeferredToolCall(ctx context.Context, req *ExecuteToolRequest) (*ExecuteToolResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	const method = "ExecuteDeferredToolCall"
	stream, err := c.client.ExecuteDeferredToolCall(callCtx, toProtoExecuteToolRequest(req))
	if err != nil {
		return nil, c.fail(ctx, method, err)
	}
	return c.receiveToolCall(ctx, method, stream, req.Events, false, req.SupportsToolTasks)
}

// PollToolTask implements ToolTaskPoller.
func (c *grpcClient) PollToolTask(ctx context.Context, req *PollToolTaskRequest) (*ExecuteToolResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	const method = "PollToolTask"
	stream, err := c.client.PollToolTask(callCtx, toProtoPollToolTaskRequest(req))
	if err != nil {
		return nil, c.fail(ctx, method, err)
	}
	return c.receiveToolCall(ctx, method, stream, req.Events, true, true)
}

func (c *grpcClient) receiveToolCall(ctx context.Context, method string, stream grpc.ServerStreamingClient[runnerpb.ToolCallFrame],
	events ToolEventWriter, poll, supportsTasks bool,
) (*ExecuteToolResponse, error) {
	var w EventWriter
	if events != nil {
		w = events
	}
	outcome, err := receive(method, stream, w, func(f *runnerpb.ToolCallFrame) (liveFrame, *runnerpb.ExecuteToolResponse) {
		switch k := f.GetFrame().(type) {
		case *runnerpb.ToolCallFrame_TextDelta:
			return liveFrame{kind: liveText, text: k.TextDelta.GetText()}, nil
		case *runnerpb.ToolCallFrame_ReasoningDelta:
			return liveFrame{kind: liveReasoning, text: k.ReasoningDelta.GetText()}, nil
		case *runnerpb.ToolCallFrame_Event:
			return liveFrame{kind: liveEvent, eventType: k.Event.GetType(), text: k.Event.GetPayloadJson()}, nil
		case *runnerpb.ToolCallFrame_Heartbeat:
			return liveFrame{kind: liveHeartbeat}, nil
		case *runnerpb.ToolCallFrame_HeartbeatCheckpoint:
			return liveFrame{kind: liveCheckpoint, text: k.HeartbeatCheckpoint.GetText()}, nil
		case *runnerpb.ToolCallFrame_Outcome:
			return liveFrame{}, nonNil(k.Outcome)
		}
		return liveFrame{}, nil
	})
	if err != nil {
		return nil, c.fail(ctx, method, err)
	}
	resp := fromProtoExecuteToolResponse(outcome)
	if reason := checkExecuteToolResponse(method, resp, poll, supportsTasks); reason != "" {
		return nil, malformed(reason)
	}
	return resp, nil
}

// BuildUnfinishedTurnMessages implements UnfinishedTurnMessageBuilder.
func (c *grpcClient) BuildUnfinishedTurnMessages(ctx context.Context, req *BuildUnfinishedTurnMessagesRequest) (*BuildUnfinishedTurnMessagesResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	resp, err := c.client.BuildUnfinishedTurnMessages(callCtx, &runnerpb.BuildUnfinishedTurnMessagesRequest{Turn: toProtoTurn(&req.Turn)})
	if err != nil {
		return nil, c.fail(ctx, "BuildUnfinishedTurnMessages", err)
	}
	msgs := fromProtoFrameworkMessages(resp.GetMessages())
	if reason := checkMessages("BuildUnfinishedTurnMessages: messages", msgs); reason != "" {
		return nil, malformed(reason)
	}
	return &BuildUnfinishedTurnMessagesResponse{Messages: msgs}, nil
}

// CancelToolTask implements ToolTaskCanceller.
func (c *grpcClient) CancelToolTask(ctx context.Context, req *CancelToolTaskRequest) (*CancelToolTaskResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	if _, err := c.client.CancelToolTask(callCtx, toProtoCancelToolTaskRequest(req)); err != nil {
		return nil, c.fail(ctx, "CancelToolTask", err)
	}
	return &CancelToolTaskResponse{}, nil
}

// EstimateInputTokens implements InputTokenEstimator.
func (c *grpcClient) EstimateInputTokens(ctx context.Context, req *EstimateInputTokensRequest) (*EstimateInputTokensResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	resp, err := c.client.EstimateInputTokens(callCtx, &runnerpb.EstimateInputTokensRequest{Turn: toProtoTurn(&req.Turn)})
	if err != nil {
		return nil, c.fail(ctx, "EstimateInputTokens", err)
	}
	return &EstimateInputTokensResponse{InputTokens: resp.GetInputTokens()}, nil
}

// SelectCompactionCutoff implements Compactor.
func (c *grpcClient) SelectCompactionCutoff(ctx context.Context, req *CompactionCutoffRequest) (*CompactionCutoffResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	resp, err := c.client.SelectCompactionCutoff(callCtx, &runnerpb.CompactionCutoffRequest{
		Turn:                toProtoTurn(&req.Turn),
		RetainedTokenBudget: req.RetainedTokenBudget,
	})
	if err != nil {
		return nil, c.fail(ctx, "SelectCompactionCutoff", err)
	}
	out := &CompactionCutoffResponse{ThroughSequence: resp.GetThroughSequence()}
	if reason := checkCompactionCutoffResponse(out, req); reason != "" {
		return nil, malformed(reason)
	}
	return out, nil
}

// SummarizeContext implements Compactor.
func (c *grpcClient) SummarizeContext(ctx context.Context, req *SummarizeContextRequest) (*SummarizeContextResponse, error) {
	callCtx, cancel := c.callContext(ctx)
	defer cancel()
	const method = "SummarizeContext"
	stream, err := c.client.SummarizeContext(callCtx, toProtoSummarizeContextRequest(req))
	if err != nil {
		return nil, c.fail(ctx, method, err)
	}
	outcome, err := receive(method, stream, req.Events, func(f *runnerpb.SummarizeContextFrame) (liveFrame, *runnerpb.SummarizeContextResponse) {
		switch k := f.GetFrame().(type) {
		case *runnerpb.SummarizeContextFrame_TextDelta:
			return liveFrame{kind: liveText, text: k.TextDelta.GetText()}, nil
		case *runnerpb.SummarizeContextFrame_ReasoningDelta:
			return liveFrame{kind: liveReasoning, text: k.ReasoningDelta.GetText()}, nil
		case *runnerpb.SummarizeContextFrame_Event:
			return liveFrame{kind: liveEvent, eventType: k.Event.GetType(), text: k.Event.GetPayloadJson()}, nil
		case *runnerpb.SummarizeContextFrame_Heartbeat:
			return liveFrame{kind: liveHeartbeat}, nil
		case *runnerpb.SummarizeContextFrame_Outcome:
			return liveFrame{}, nonNil(k.Outcome)
		}
		return liveFrame{}, nil
	})
	if err != nil {
		return nil, c.fail(ctx, method, err)
	}
	return &SummarizeContextResponse{Summary: outcome.GetSummary(), Usage: fromProtoUsage(outcome.GetUsage()), Metadata: fromProtoMetadata(outcome.GetMetadata())}, nil
}

// nonNil returns o, or a new zero message when o is nil (an outcome frame
// whose message is empty still counts as an outcome).
func nonNil[O any](o *O) *O {
	if o == nil {
		return new(O)
	}
	return o
}

// receive reads a stream of frames up to its end. split sorts a frame into
// a live frame (kind 0 for a kind this host does not know, which is
// skipped) or the outcome. Live frames go to w (when not nil) in order. It
// returns the one outcome; no outcome, a second outcome or any frame after
// the outcome is malformed.
func receive[F, O any](method string, stream grpc.ServerStreamingClient[F], w EventWriter, split func(*F) (liveFrame, *O)) (*O, error) {
	var outcome *O
	for {
		f, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		live, o := split(f)
		switch {
		case o != nil && outcome != nil:
			return nil, malformed(method + " sent a second outcome")
		case o != nil:
			outcome = o
		case live.kind == 0:
			// A frame kind from a newer protocol version.
		case outcome != nil:
			return nil, malformed(method + " sent a live frame after its outcome")
		default:
			if err := forward(method, live, w); err != nil {
				return nil, err
			}
		}
	}
	if outcome == nil {
		return nil, malformed(method + " ended its stream without an outcome")
	}
	return outcome, nil
}

// forward writes one live frame to w. Write errors are ignored: live events
// are best effort.
func forward(method string, f liveFrame, w EventWriter) error {
	if f.kind == liveEvent {
		if f.eventType == "" {
			return malformed(method + " sent an event without a type")
		}
		if f.text == "" {
			f.text = "{}"
		}
		if !json.Valid([]byte(f.text)) || !isJSONObject([]byte(f.text)) {
			return malformed(fmt.Sprintf("%s sent event %q whose payload_json is not a JSON object", method, f.eventType))
		}
	}
	if w == nil {
		return nil
	}
	switch f.kind {
	case liveText:
		w.WriteTextDelta(f.text)
	case liveReasoning:
		w.WriteReasoningDelta(f.text)
	case liveEvent:
		_ = w.WriteEvent(f.eventType, json.RawMessage(f.text))
	case liveHeartbeat:
		w.Heartbeat()
	case liveCheckpoint:
		if tw, ok := w.(ToolEventWriter); ok {
			tw.SaveHeartbeatCheckpoint(f.text)
		}
	}
	return nil
}

// Interface guards
var (
	_ Runner                       = (*grpcClient)(nil)
	_ UnfinishedTurnMessageBuilder = (*grpcClient)(nil)
	_ ToolTaskPoller               = (*grpcClient)(nil)
	_ ToolTaskCanceller            = (*grpcClient)(nil)
	_ InputTokenEstimator          = (*grpcClient)(nil)
	_ Compactor                    = (*grpcClient)(nil)
)
