package pluginapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

// vectorsDir holds the test vectors every runner SDK replays.
var vectorsDir = filepath.Join("..", "proto", "testdata", "vectors")

// vectorFile is one file of proto/testdata/vectors (see its README).
type vectorFile struct {
	ContractVersion int          `json:"contract_version"`
	Case            string       `json:"case"`
	Description     string       `json:"description"`
	Calls           []vectorCall `json:"calls"`
}

type vectorCall struct {
	Method  string          `json:"method"`
	Request json.RawMessage `json:"request"`
	Runner  struct {
		Frames        []json.RawMessage `json:"frames"`
		Response      json.RawMessage   `json:"response"`
		WaitForCancel bool              `json:"wait_for_cancel"`
	} `json:"runner"`
	CancelAfterFrames int `json:"cancel_after_frames"`
	Wire              *struct {
		Frames          []json.RawMessage `json:"frames"`
		Status          string            `json:"status"`
		MessageContains string            `json:"message_contains"`
	} `json:"wire"`
}

func loadVectors(t *testing.T) []vectorFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(vectorsDir, "*.json"))
	if err != nil || len(paths) < 8 {
		t.Fatalf("found %d vector files in %s (%v)", len(paths), vectorsDir, err)
	}
	var out []vectorFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var v vectorFile
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if v.ContractVersion != ProtocolVersion || v.Case+".json" != filepath.Base(p) || v.Description == "" || len(v.Calls) == 0 {
			t.Fatalf("%s: contract_version %d, case %q, %d calls: want version %d, the file's name, a description and calls",
				p, v.ContractVersion, v.Case, len(v.Calls), ProtocolVersion)
		}
		out = append(out, v)
	}
	return out
}

var vectorJSON = protojson.UnmarshalOptions{DiscardUnknown: false}

func decodeInto(t *testing.T, what string, raw json.RawMessage, m proto.Message) {
	t.Helper()
	if err := vectorJSON.Unmarshal(raw, m); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, raw)
	}
}

// vectorRunner plays the runner side of the call the test sets: it checks
// the request the SDK decoded, writes the call's live frames through the
// SDK's writer and returns the call's response.
type vectorRunner struct {
	t       *testing.T
	mu      sync.Mutex
	call    vectorCall
	request proto.Message // the call's request, decoded from the vector
	// cancelled is closed when a call that waits for its cancel saw its
	// context end.
	cancelled chan struct{}
}

func (r *vectorRunner) current() (vectorCall, proto.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.call, r.request
}

// checkRequest compares what the SDK handed the runner with the vector's
// request, converted as the SDK converts.
func (r *vectorRunner) checkRequest(got any, want any) error {
	// A copy without the writer, which is the SDK's; every other field
	// must match.
	g, w := reflect.New(reflect.TypeOf(got).Elem()).Elem(), reflect.ValueOf(want).Elem()
	g.Set(reflect.ValueOf(got).Elem())
	if f := g.FieldByName("Events"); f.IsValid() {
		f.Set(reflect.Zero(f.Type()))
	}
	if !reflect.DeepEqual(g.Interface(), w.Interface()) {
		return fmt.Errorf("the runner got %+v, want %+v", g.Interface(), w.Interface())
	}
	return nil
}

// play writes the call's live frames to w and then waits for the cancel
// when the call asks for it.
func (r *vectorRunner) play(ctx context.Context, call vectorCall, w EventWriter, frame func() proto.Message) error {
	for _, raw := range call.Runner.Frames {
		f := frame()
		if err := vectorJSON.Unmarshal(raw, f); err != nil {
			return fmt.Errorf("frame %s: %w", raw, err)
		}
		if err := writeFrame(f, w); err != nil {
			return err
		}
	}
	if call.Runner.WaitForCancel {
		select {
		case <-ctx.Done():
			close(r.cancelled)
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("the call was never cancelled")
		}
	}
	return nil
}

// writeFrame writes one live frame of any stream type through the SDK's
// writer, as a runner would.
func writeFrame(f proto.Message, w EventWriter) error {
	m := f.ProtoReflect()
	od := m.Descriptor().Oneofs().ByName("frame")
	fd := m.WhichOneof(od)
	if fd == nil {
		return errors.New("a frame with no field set")
	}
	v := m.Get(fd).Message().Interface()
	switch v := v.(type) {
	case *runnerpb.TextDelta:
		w.WriteTextDelta(v.GetText())
	case *runnerpb.ReasoningDelta:
		w.WriteReasoningDelta(v.GetText())
	case *runnerpb.Event:
		return w.WriteEvent(v.GetType(), json.RawMessage(v.GetPayloadJson()))
	case *runnerpb.Heartbeat:
		w.Heartbeat()
	case *runnerpb.HeartbeatCheckpoint:
		tw, ok := w.(ToolEventWriter)
		if !ok {
			return errors.New("a heartbeat checkpoint outside a tool call")
		}
		tw.SaveHeartbeatCheckpoint(v.GetText())
	default:
		return fmt.Errorf("a runner does not write %T frames", v)
	}
	return nil
}

func (r *vectorRunner) Info(context.Context, *InfoRequest) (*InfoResponse, error) {
	return &InfoResponse{Name: "vectors", Version: "1"}, nil
}

func (r *vectorRunner) Configure(context.Context, *ConfigureRequest) (*ConfigureResponse, error) {
	return &ConfigureResponse{}, nil
}

func (r *vectorRunner) BuildUserMessage(_ context.Context, req *BuildUserMessageRequest) (*BuildUserMessageResponse, error) {
	call, want := r.current()
	w := want.(*runnerpb.BuildUserMessageRequest)
	if err := r.checkRequest(req, &BuildUserMessageRequest{Agent: w.GetAgent(), Text: w.GetText()}); err != nil {
		return nil, err
	}
	var resp runnerpb.BuildUserMessageResponse
	decodeInto(r.t, "response", call.Runner.Response, &resp)
	return &BuildUserMessageResponse{Message: fromProtoFrameworkMessage(resp.GetMessage())}, nil
}

func (r *vectorRunner) RunModelStep(ctx context.Context, req *RunModelStepRequest) (*RunModelStepResponse, error) {
	call, want := r.current()
	if err := r.checkRequest(req, &RunModelStepRequest{Turn: fromProtoTurn(want.(*runnerpb.RunModelStepRequest).GetTurn())}); err != nil {
		return nil, err
	}
	if err := r.play(ctx, call, req.Events, func() proto.Message { return &runnerpb.RunModelStepFrame{} }); err != nil {
		return nil, err
	}
	var resp runnerpb.RunModelStepResponse
	decodeInto(r.t, "response", call.Runner.Response, &resp)
	return fromProtoRunModelStepResponse(&resp), nil
}

func (r *vectorRunner) ExecuteDeferredToolCall(ctx context.Context, req *ExecuteToolRequest) (*ExecuteToolResponse, error) {
	call, want := r.current()
	if err := r.checkRequest(req, fromProtoExecuteToolRequest(want.(*runnerpb.ExecuteToolRequest))); err != nil {
		return nil, err
	}
	return r.toolOutcome(ctx, call, req.Events)
}

func (r *vectorRunner) PollToolTask(ctx context.Context, req *PollToolTaskRequest) (*ExecuteToolResponse, error) {
	call, want := r.current()
	if err := r.checkRequest(req, fromProtoPollToolTaskRequest(want.(*runnerpb.PollToolTaskRequest))); err != nil {
		return nil, err
	}
	return r.toolOutcome(ctx, call, req.Events)
}

func (r *vectorRunner) toolOutcome(ctx context.Context, call vectorCall, w ToolEventWriter) (*ExecuteToolResponse, error) {
	if err := r.play(ctx, call, w, func() proto.Message { return &runnerpb.ToolCallFrame{} }); err != nil {
		return nil, err
	}
	var resp runnerpb.ExecuteToolResponse
	decodeInto(r.t, "response", call.Runner.Response, &resp)
	return fromProtoExecuteToolResponse(&resp), nil
}

func (r *vectorRunner) CancelToolTask(context.Context, *CancelToolTaskRequest) (*CancelToolTaskResponse, error) {
	return &CancelToolTaskResponse{}, nil
}

func (r *vectorRunner) BuildUnfinishedTurnMessages(context.Context, *BuildUnfinishedTurnMessagesRequest) (*BuildUnfinishedTurnMessagesResponse, error) {
	return &BuildUnfinishedTurnMessagesResponse{}, nil
}

func (r *vectorRunner) EstimateInputTokens(context.Context, *EstimateInputTokensRequest) (*EstimateInputTokensResponse, error) {
	return &EstimateInputTokensResponse{}, nil
}

func (r *vectorRunner) SelectCompactionCutoff(_ context.Context, req *CompactionCutoffRequest) (*CompactionCutoffResponse, error) {
	call, want := r.current()
	w := want.(*runnerpb.CompactionCutoffRequest)
	if err := r.checkRequest(req, &CompactionCutoffRequest{Turn: fromProtoTurn(w.GetTurn()), RetainedTokenBudget: w.GetRetainedTokenBudget()}); err != nil {
		return nil, err
	}
	var resp runnerpb.CompactionCutoffResponse
	decodeInto(r.t, "response", call.Runner.Response, &resp)
	return &CompactionCutoffResponse{ThroughSequence: resp.GetThroughSequence()}, nil
}

func (r *vectorRunner) SummarizeContext(ctx context.Context, req *SummarizeContextRequest) (*SummarizeContextResponse, error) {
	call, want := r.current()
	if err := r.checkRequest(req, fromProtoSummarizeContextRequest(want.(*runnerpb.SummarizeContextRequest))); err != nil {
		return nil, err
	}
	if err := r.play(ctx, call, req.Events, func() proto.Message { return &runnerpb.SummarizeContextFrame{} }); err != nil {
		return nil, err
	}
	var resp runnerpb.SummarizeContextResponse
	decodeInto(r.t, "response", call.Runner.Response, &resp)
	return &SummarizeContextResponse{Summary: resp.GetSummary(), Usage: fromProtoUsage(resp.GetUsage()), Metadata: fromProtoMetadata(resp.GetMetadata())}, nil
}

// stream is a server stream of any frame type, as the raw client reads it.
type stream interface {
	Recv() (proto.Message, error)
}

type recvFunc func() (proto.Message, error)

func (f recvFunc) Recv() (proto.Message, error) { return f() }

// TestVectors replays every vector through the Go SDK over a real gRPC
// connection, with a raw client in the host's place: the runner must get
// the vector's request, and the wire must carry exactly the vector's frames
// and status.
func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Case, func(t *testing.T) {
			vr := &vectorRunner{t: t}
			conn, server := plugin.TestGRPCConn(t, func(s *grpc.Server) { runnerpb.RegisterRunnerServer(s, newGRPCServer(vr)) })
			t.Cleanup(func() {
				_ = conn.Close()
				server.Stop()
			})
			client := runnerpb.NewRunnerClient(conn)
			for i, call := range v.Calls {
				t.Logf("call %d: %s", i+1, call.Method)
				replayCall(t, client, vr, call)
			}
		})
	}
}

func replayCall(t *testing.T, client runnerpb.RunnerClient, vr *vectorRunner, call vectorCall) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var req proto.Message
	var open func() (stream, error)
	var unary func() (proto.Message, error)
	var outcome func() proto.Message // an empty response message
	var frame func() proto.Message   // an empty frame of the call's stream
	switch call.Method {
	case "BuildUserMessage":
		r := &runnerpb.BuildUserMessageRequest{}
		req, outcome = r, func() proto.Message { return &runnerpb.BuildUserMessageResponse{} }
		unary = func() (proto.Message, error) { return client.BuildUserMessage(ctx, r) }
	case "SelectCompactionCutoff":
		r := &runnerpb.CompactionCutoffRequest{}
		req, outcome = r, func() proto.Message { return &runnerpb.CompactionCutoffResponse{} }
		unary = func() (proto.Message, error) { return client.SelectCompactionCutoff(ctx, r) }
	case "RunModelStep":
		r := &runnerpb.RunModelStepRequest{}
		req, frame = r, func() proto.Message { return &runnerpb.RunModelStepFrame{} }
		outcome = func() proto.Message { return &runnerpb.RunModelStepResponse{} }
		open = func() (stream, error) {
			s, err := client.RunModelStep(ctx, r)
			return recvFunc(func() (proto.Message, error) { return s.Recv() }), err
		}
	case "ExecuteDeferredToolCall":
		r := &runnerpb.ExecuteToolRequest{}
		req, frame = r, func() proto.Message { return &runnerpb.ToolCallFrame{} }
		outcome = func() proto.Message { return &runnerpb.ExecuteToolResponse{} }
		open = func() (stream, error) {
			s, err := client.ExecuteDeferredToolCall(ctx, r)
			return recvFunc(func() (proto.Message, error) { return s.Recv() }), err
		}
	case "PollToolTask":
		r := &runnerpb.PollToolTaskRequest{}
		req, frame = r, func() proto.Message { return &runnerpb.ToolCallFrame{} }
		outcome = func() proto.Message { return &runnerpb.ExecuteToolResponse{} }
		open = func() (stream, error) {
			s, err := client.PollToolTask(ctx, r)
			return recvFunc(func() (proto.Message, error) { return s.Recv() }), err
		}
	case "SummarizeContext":
		r := &runnerpb.SummarizeContextRequest{}
		req, frame = r, func() proto.Message { return &runnerpb.SummarizeContextFrame{} }
		outcome = func() proto.Message { return &runnerpb.SummarizeContextResponse{} }
		open = func() (stream, error) {
			s, err := client.SummarizeContext(ctx, r)
			return recvFunc(func() (proto.Message, error) { return s.Recv() }), err
		}
	default:
		t.Fatalf("unknown method %q", call.Method)
	}
	decodeInto(t, "request", call.Request, req)
	vr.mu.Lock()
	vr.call, vr.request, vr.cancelled = call, req, make(chan struct{})
	vr.mu.Unlock()

	wantStatus, wantText := codes.OK, ""
	if call.Wire != nil && call.Wire.Status != "" {
		c, ok := codeByName[call.Wire.Status]
		if !ok {
			t.Fatalf("unknown status %q", call.Wire.Status)
		}
		wantStatus, wantText = c, call.Wire.MessageContains
	}

	if unary != nil {
		got, err := unary()
		checkStatus(t, err, wantStatus, wantText)
		if err == nil {
			want := outcome()
			decodeInto(t, "response", call.Runner.Response, want)
			if !proto.Equal(got, want) {
				t.Errorf("%s answered %v, want %v", call.Method, got, want)
			}
		}
		return
	}

	// The frames the wire must carry: the vector's own, or the runner's
	// live frames and then its response as the outcome frame.
	var want []proto.Message
	rawFrames := call.Runner.Frames
	if call.Wire != nil && call.Wire.Frames != nil {
		rawFrames = call.Wire.Frames
	}
	for _, raw := range rawFrames {
		f := frame()
		decodeInto(t, "frame", raw, f)
		want = append(want, f)
	}
	if (call.Wire == nil || call.Wire.Frames == nil) && call.Runner.Response != nil {
		o := outcome()
		decodeInto(t, "response", call.Runner.Response, o)
		f := frame()
		m := f.ProtoReflect()
		m.Set(m.Descriptor().Fields().ByName("outcome"), protoreflect.ValueOfMessage(o.ProtoReflect()))
		want = append(want, f)
	}

	s, err := open()
	if err != nil {
		t.Fatalf("%s: %v", call.Method, err)
	}
	var got []proto.Message
	for {
		f, err := s.Recv()
		if errors.Is(err, io.EOF) {
			checkStatus(t, nil, wantStatus, wantText)
			break
		}
		if err != nil {
			checkStatus(t, err, wantStatus, wantText)
			break
		}
		if isHeartbeat(f) {
			continue
		}
		got = append(got, f)
		if call.CancelAfterFrames > 0 && len(got) == call.CancelAfterFrames {
			cancel()
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s sent %d frames %v, want %d %v", call.Method, len(got), got, len(want), want)
	}
	for i := range got {
		if !framesEqual(got[i], want[i]) {
			t.Errorf("%s frame %d = %v, want %v", call.Method, i+1, got[i], want[i])
		}
	}
	if call.Runner.WaitForCancel {
		select {
		case <-vr.cancelled:
		case <-time.After(10 * time.Second):
			t.Errorf("the runner's context did not end after the host cancelled %s", call.Method)
		}
	}
}

var codeByName = map[string]codes.Code{
	"OK": codes.OK, "CANCELLED": codes.Canceled, "INVALID_ARGUMENT": codes.InvalidArgument,
	"FAILED_PRECONDITION": codes.FailedPrecondition, "UNIMPLEMENTED": codes.Unimplemented,
	"UNAVAILABLE": codes.Unavailable, "UNKNOWN": codes.Unknown, "INTERNAL": codes.Internal,
}

func checkStatus(t *testing.T, err error, want codes.Code, text string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != want || !strings.Contains(st.Message(), text) {
		t.Errorf("status %s %q, want %s with a message that contains %q", st.Code(), st.Message(), want, text)
	}
}

func isHeartbeat(f proto.Message) bool {
	m := f.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("frame"))
	return fd != nil && fd.Name() == "heartbeat"
}

// framesEqual compares two frames, an event's payload as JSON: SDKs in
// other languages may order its keys differently.
func framesEqual(a, b proto.Message) bool {
	ea, eb := eventOf(a), eventOf(b)
	if ea == nil || eb == nil {
		return proto.Equal(a, b)
	}
	if ea.GetType() != eb.GetType() {
		return false
	}
	var ja, jb any
	return json.Unmarshal([]byte(ea.GetPayloadJson()), &ja) == nil && json.Unmarshal([]byte(eb.GetPayloadJson()), &jb) == nil &&
		reflect.DeepEqual(ja, jb)
}

func eventOf(f proto.Message) *runnerpb.Event {
	m := f.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("frame"))
	if fd == nil || fd.Name() != "event" {
		return nil
	}
	e, _ := m.Get(fd).Message().Interface().(*runnerpb.Event)
	return e
}

// TestVectorsThroughTheHost replays the vectors with the host's own client
// in place of the raw one: the host must take every outcome the vectors
// send, decode it to what the runner returned, and report a refused one as
// a malformed outcome.
func TestVectorsThroughTheHost(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Case, func(t *testing.T) {
			vr := &vectorRunner{t: t}
			c, _ := connect(t, vr)
			for _, call := range v.Calls {
				if call.CancelAfterFrames > 0 {
					continue // the raw replay cancels; the host's cancel is tested in grpc_test.go
				}
				hostCall(t, c, vr, call)
			}
		})
	}
}

func hostCall(t *testing.T, c *grpcClient, vr *vectorRunner, call vectorCall) {
	t.Helper()
	ctx := testContext(t)
	var got, want any
	var err error
	rec := &recorder{}
	switch call.Method {
	case "BuildUserMessage":
		r := &runnerpb.BuildUserMessageRequest{}
		decodeInto(t, "request", call.Request, r)
		vr.set(call, r)
		got, err = c.BuildUserMessage(ctx, &BuildUserMessageRequest{Agent: r.GetAgent(), Text: r.GetText()})
		var resp runnerpb.BuildUserMessageResponse
		decodeInto(t, "response", call.Runner.Response, &resp)
		want = &BuildUserMessageResponse{Message: fromProtoFrameworkMessage(resp.GetMessage())}
	case "SelectCompactionCutoff":
		r := &runnerpb.CompactionCutoffRequest{}
		decodeInto(t, "request", call.Request, r)
		vr.set(call, r)
		got, err = c.SelectCompactionCutoff(ctx, &CompactionCutoffRequest{Turn: fromProtoTurn(r.GetTurn()), RetainedTokenBudget: r.GetRetainedTokenBudget()})
		var resp runnerpb.CompactionCutoffResponse
		decodeInto(t, "response", call.Runner.Response, &resp)
		want = &CompactionCutoffResponse{ThroughSequence: resp.GetThroughSequence()}
	case "RunModelStep":
		r := &runnerpb.RunModelStepRequest{}
		decodeInto(t, "request", call.Request, r)
		vr.set(call, r)
		got, err = c.RunModelStep(ctx, &RunModelStepRequest{Turn: fromProtoTurn(r.GetTurn()), Events: rec})
		var resp runnerpb.RunModelStepResponse
		decodeInto(t, "response", call.Runner.Response, &resp)
		want = fromProtoRunModelStepResponse(&resp)
	case "ExecuteDeferredToolCall":
		r := &runnerpb.ExecuteToolRequest{}
		decodeInto(t, "request", call.Request, r)
		vr.set(call, r)
		req := fromProtoExecuteToolRequest(r)
		req.Events = rec
		got, err = c.ExecuteDeferredToolCall(ctx, req)
		var resp runnerpb.ExecuteToolResponse
		decodeInto(t, "response", call.Runner.Response, &resp)
		want = fromProtoExecuteToolResponse(&resp)
	case "PollToolTask":
		r := &runnerpb.PollToolTaskRequest{}
		decodeInto(t, "request", call.Request, r)
		vr.set(call, r)
		req := fromProtoPollToolTaskRequest(r)
		req.Events = rec
		got, err = c.PollToolTask(ctx, req)
		var resp runnerpb.ExecuteToolResponse
		decodeInto(t, "response", call.Runner.Response, &resp)
		want = fromProtoExecuteToolResponse(&resp)
	case "SummarizeContext":
		r := &runnerpb.SummarizeContextRequest{}
		decodeInto(t, "request", call.Request, r)
		vr.set(call, r)
		req := fromProtoSummarizeContextRequest(r)
		req.Events = rec
		got, err = c.SummarizeContext(ctx, req)
		var resp runnerpb.SummarizeContextResponse
		decodeInto(t, "response", call.Runner.Response, &resp)
		want = &SummarizeContextResponse{Summary: resp.GetSummary(), Usage: fromProtoUsage(resp.GetUsage()), Metadata: fromProtoMetadata(resp.GetMetadata())}
	default:
		t.Fatalf("unknown method %q", call.Method)
	}
	if call.Wire != nil && call.Wire.Status == "INVALID_ARGUMENT" {
		if err == nil || !strings.HasPrefix(err.Error(), malformedPrefix) || !strings.Contains(err.Error(), call.Wire.MessageContains) {
			t.Errorf("%s: the host returned %v, want a malformed outcome naming %q", call.Method, err, call.Wire.MessageContains)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: the host refused the vector's outcome: %v", call.Method, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the host decoded %+v, want %+v", call.Method, got, want)
	}
	// The live frames reach the host's writer in order.
	var frames []string
	for _, raw := range call.Runner.Frames {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		for k := range f {
			frames = append(frames, k)
		}
	}
	rec.mu.Lock()
	writes := append([]string(nil), rec.writes...)
	rec.mu.Unlock()
	var kinds []string
	for _, w := range writes {
		kind, _, _ := strings.Cut(w, " ")
		if kind != "heartbeat" {
			kinds = append(kinds, kind)
		}
	}
	wantKinds := make([]string, len(frames))
	for i, f := range frames {
		wantKinds[i] = map[string]string{"text_delta": "text", "reasoning_delta": "reasoning", "event": "event", "heartbeat_checkpoint": "checkpoint"}[f]
	}
	if strings.Join(kinds, ",") != strings.Join(wantKinds, ",") {
		t.Errorf("%s: the host's writer got %v, want %v", call.Method, writes, wantKinds)
	}
}

func (r *vectorRunner) set(call vectorCall, req proto.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.call, r.request, r.cancelled = call, req, make(chan struct{})
}

func TestParseVector(t *testing.T) {
	for _, p := range mustGlob(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ParseVector(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, c := range v.Calls {
			if c.Request == nil {
				t.Errorf("%s: %s has no request", v.Case, c.Method)
			}
		}
	}
	fresh := func(name string) []bool {
		b, err := os.ReadFile(filepath.Join(vectorsDir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		v, err := ParseVector(b)
		if err != nil {
			t.Fatal(err)
		}
		var out []bool
		for _, c := range v.Calls {
			out = append(out, c.Fresh)
		}
		return out
	}
	if got := fresh("tool_calls_deferred"); !reflect.DeepEqual(got, []bool{true, false}) {
		t.Errorf("tool_calls_deferred fresh = %v: the resumed call carries the vector runner's run state", got)
	}
	if got := fresh("tool_task"); !reflect.DeepEqual(got, []bool{false, false, false}) {
		t.Errorf("tool_task fresh = %v: its calls need the vector runner's tool", got)
	}
	for _, bad := range []string{
		`{"contract_version": 2, "case": "x", "calls": []}`,
		`{"contract_version": 1, "case": "x", "calls": [{"method": "Dance", "request": {}}]}`,
		`{"contract_version": 1, "case": "x", "calls": [{"method": "RunModelStep", "request": {"turn": {"attempt": "many"}}}]}`,
		`{"contract_version": 1, "case": "x", "calls": [{"method": "RunModelStep", "request": {"no_such_field": 1}}]}`,
	} {
		if _, err := ParseVector([]byte(bad)); err == nil {
			t.Errorf("ParseVector(%s) succeeded", bad)
		}
	}
}

func mustGlob(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(vectorsDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	return paths
}
