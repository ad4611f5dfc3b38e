package pluginapi

// The plugin side: grpcServer turns a Runner into the runnerpb.Runner
// service, and liveStream is the EventWriter its streaming calls hand to
// the runner.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

// maxQueuedFrames bounds the live frames waiting to be sent for one call.
// Beyond it text, reasoning, event and heartbeat writes are dropped (they
// are best effort); heartbeat checkpoints are always kept.
const maxQueuedFrames = 4096

type grpcServer struct {
	runnerpb.UnimplementedRunnerServer
	impl Runner
	// transcripts keeps what RunModelStep was sent (capability
	// TranscriptCache); nil when DEX_RUNNER_TRANSCRIPT_CACHE_BYTES is 0.
	transcripts *transcriptCache
}

func newGRPCServer(impl Runner) *grpcServer {
	return &grpcServer{impl: impl, transcripts: newTranscriptCache(transcriptCacheBytes())}
}

// call runs f and turns a panic in the runner into an Internal error, so one
// bad call does not take down every call the process serves. The stack goes
// to stderr, which the host logs.
func call[T any](method string, f func() (T, error)) (resp T, err error) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "runner panicked in %s: %v\n%s", method, p, debug.Stack())
			err = status.Errorf(codes.Internal, "runner panicked in %s: %v", method, p)
		}
	}()
	resp, err = f()
	var (
		perm  *PermanentError
		retry *RetryAfterError
	)
	switch {
	case err == nil:
	case errors.As(err, &perm):
		err = status.Error(codes.FailedPrecondition, err.Error())
	case errors.As(err, &retry):
		err = retryAfterStatus(err.Error(), retry.Delay)
	}
	return resp, err
}

// retryAfterStatus is the status of a RetryAfterError: RESOURCE_EXHAUSTED
// with a google.rpc.RetryInfo detail.
func retryAfterStatus(msg string, d time.Duration) error {
	st := status.New(codes.ResourceExhausted, msg)
	if with, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)}); err == nil {
		st = with
	}
	return st.Err()
}

func (s *grpcServer) Info(ctx context.Context, _ *runnerpb.InfoRequest) (*runnerpb.InfoResponse, error) {
	resp, err := call("Info", func() (*InfoResponse, error) { return s.impl.Info(ctx, &InfoRequest{}) })
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, malformedStatus("Info returned no response")
	}
	return &runnerpb.InfoResponse{
		Name:             resp.Name,
		Version:          resp.Version,
		ProtocolVersions: []int32{ProtocolVersion},
		Capabilities:     toProtoCapabilities(s.capabilities()),
	}, nil
}

func (s *grpcServer) Configure(ctx context.Context, req *runnerpb.ConfigureRequest) (*runnerpb.ConfigureResponse, error) {
	resp, err := call("Configure", func() (*ConfigureResponse, error) { return s.impl.Configure(ctx, fromProtoConfigure(req)) })
	if err != nil {
		return nil, err
	}
	if resp == nil {
		resp = &ConfigureResponse{}
	}
	if reason := checkConfigureResponse(resp); reason != "" {
		return nil, malformedStatus(reason)
	}
	out := toProtoConfigureResponse(resp)
	if reason := checkUTF8("Configure", out); reason != "" {
		return nil, malformedStatus(reason)
	}
	return out, nil
}

func (s *grpcServer) BuildUserMessage(ctx context.Context, req *runnerpb.BuildUserMessageRequest) (*runnerpb.BuildUserMessageResponse, error) {
	resp, err := call("BuildUserMessage", func() (*BuildUserMessageResponse, error) {
		return s.impl.BuildUserMessage(ctx, &BuildUserMessageRequest{Agent: req.GetAgent(), Text: req.GetText()})
	})
	if err != nil {
		return nil, err
	}
	if reason := checkBuildUserMessageResponse(resp); reason != "" {
		return nil, malformedStatus(reason)
	}
	out := &runnerpb.BuildUserMessageResponse{Message: toProtoFrameworkMessage(resp.Message)}
	if reason := checkUTF8("BuildUserMessage", out); reason != "" {
		return nil, malformedStatus(reason)
	}
	return out, nil
}

// turn decodes a call's turn and puts its transcript back together when
// the host sent only what follows the messages it sent before (capability
// TranscriptCache); it keeps the whole transcript for the next call.
func (s *grpcServer) turn(method string, t *runnerpb.TurnContext) (TurnContext, error) {
	turn := fromProtoTurn(t)
	if through := t.GetCachedThrough(); through > 0 {
		kept, ok := s.transcripts.get(turn.SessionID, t.GetCachedFrom(), through)
		if !ok {
			return TurnContext{}, status.Error(codes.FailedPrecondition, transcriptCacheMiss)
		}
		if len(turn.Messages) > 0 && turn.Messages[0].Sequence != through+1 {
			return TurnContext{}, malformedStatus(fmt.Sprintf("%s: messages start at %d after cached messages through %d", method, turn.Messages[0].Sequence, through))
		}
		turn.Messages = append(kept, turn.Messages...)
	}
	s.transcripts.put(turn.SessionID, turn.Messages)
	return turn, nil
}

// capabilities are the runner's, plus the SDK's transcript cache.
func (s *grpcServer) capabilities() Capabilities {
	c := CapabilitiesOf(s.impl)
	c.TranscriptCache = s.transcripts != nil
	return c
}

func (s *grpcServer) RunModelStep(req *runnerpb.RunModelStepRequest, stream runnerpb.Runner_RunModelStepServer) error {
	ctx := stream.Context()
	turn, err := s.turn("RunModelStep", req.GetTurn())
	if err != nil {
		return err
	}
	live := startLiveStream(func(f liveFrame) error { return stream.Send(f.runModelStepFrame()) })
	resp, err := call("RunModelStep", func() (*RunModelStepResponse, error) {
		return s.impl.RunModelStep(ctx, &RunModelStepRequest{Turn: turn, Events: live})
	})
	if sendErr := live.finish(); err == nil && sendErr != nil {
		return sendFailed(ctx, "RunModelStep", "a live frame", sendErr)
	}
	if err != nil {
		return err
	}
	if reason := checkRunModelStepResponse(resp, &turn); reason != "" {
		return malformedStatus(reason)
	}
	outcome := toProtoRunModelStepResponse(resp)
	if reason := checkUTF8("RunModelStep", outcome); reason != "" {
		return malformedStatus(reason)
	}
	out := &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_Outcome{Outcome: outcome}}
	return sendFailed(ctx, "RunModelStep", "the outcome", stream.Send(out))
}

func (s *grpcServer) ExecuteDeferredToolCall(req *runnerpb.ExecuteToolRequest, stream runnerpb.Runner_ExecuteDeferredToolCallServer) error {
	ctx := stream.Context()
	r := fromProtoExecuteToolRequest(req)
	live := startLiveStream(func(f liveFrame) error { return stream.Send(f.toolCallFrame()) })
	r.Events = live
	resp, err := call("ExecuteDeferredToolCall", func() (*ExecuteToolResponse, error) {
		return s.impl.ExecuteDeferredToolCall(ctx, r)
	})
	return s.finishToolCall(ctx, "ExecuteDeferredToolCall", live, stream.Send, resp, err, false, r.SupportsToolTasks)
}

func (s *grpcServer) PollToolTask(req *runnerpb.PollToolTaskRequest, stream runnerpb.Runner_PollToolTaskServer) error {
	poller, ok := s.impl.(ToolTaskPoller)
	if !ok {
		return unimplemented("PollToolTask", "ToolTaskPoller")
	}
	ctx := stream.Context()
	r := fromProtoPollToolTaskRequest(req)
	live := startLiveStream(func(f liveFrame) error { return stream.Send(f.toolCallFrame()) })
	r.Events = live
	resp, err := call("PollToolTask", func() (*ExecuteToolResponse, error) { return poller.PollToolTask(ctx, r) })
	return s.finishToolCall(ctx, "PollToolTask", live, stream.Send, resp, err, true, true)
}

// finishToolCall ends a tool call stream: it flushes the live frames, then
// sends the outcome. A *ToolExecutionError returned as the error becomes the
// Error outcome, a *ToolInputRequested the InputRequested one.
func (s *grpcServer) finishToolCall(ctx context.Context, method string, live *liveStream, send func(*runnerpb.ToolCallFrame) error,
	resp *ExecuteToolResponse, err error, poll, supportsTasks bool,
) error {
	if sendErr := live.finish(); err == nil && sendErr != nil {
		return sendFailed(ctx, method, "a live frame", sendErr)
	}
	var toolErr *ToolExecutionError
	var asked *ToolInputRequested
	var started *ToolTaskStarted
	switch {
	case errors.As(err, &toolErr):
		resp, err = &ExecuteToolResponse{Error: &ToolExecutionError{Message: toolErr.Message}}, nil
	case errors.As(err, &asked):
		resp, err = &ExecuteToolResponse{InputRequested: asked}, nil
	case errors.As(err, &started):
		resp, err = &ExecuteToolResponse{TaskStarted: started}, nil
	}
	if err != nil {
		return err
	}
	if reason := checkExecuteToolResponse(method, resp, poll, supportsTasks); reason != "" {
		return malformedStatus(reason)
	}
	outcome := toProtoExecuteToolResponse(resp)
	if reason := checkUTF8(method, outcome); reason != "" {
		return malformedStatus(reason)
	}
	out := &runnerpb.ToolCallFrame{Frame: &runnerpb.ToolCallFrame_Outcome{Outcome: outcome}}
	return sendFailed(ctx, method, "the outcome", send(out))
}

func (s *grpcServer) BuildUnfinishedTurnMessages(ctx context.Context, req *runnerpb.BuildUnfinishedTurnMessagesRequest) (*runnerpb.BuildUnfinishedTurnMessagesResponse, error) {
	b, ok := s.impl.(UnfinishedTurnMessageBuilder)
	if !ok {
		return nil, unimplemented("BuildUnfinishedTurnMessages", "UnfinishedTurnMessageBuilder")
	}
	turn := fromProtoTurn(req.GetTurn())
	resp, err := call("BuildUnfinishedTurnMessages", func() (*BuildUnfinishedTurnMessagesResponse, error) {
		return b.BuildUnfinishedTurnMessages(ctx, &BuildUnfinishedTurnMessagesRequest{Turn: turn})
	})
	if err != nil {
		return nil, err
	}
	var msgs []FrameworkMessage
	if resp != nil {
		msgs = resp.Messages
	}
	if reason := checkMessages("BuildUnfinishedTurnMessages: messages", msgs); reason != "" {
		return nil, malformedStatus(reason)
	}
	out := &runnerpb.BuildUnfinishedTurnMessagesResponse{Messages: toProtoFrameworkMessages(msgs)}
	if reason := checkUTF8("BuildUnfinishedTurnMessages", out); reason != "" {
		return nil, malformedStatus(reason)
	}
	return out, nil
}

func (s *grpcServer) CancelToolTask(ctx context.Context, req *runnerpb.CancelToolTaskRequest) (*runnerpb.CancelToolTaskResponse, error) {
	c, ok := s.impl.(ToolTaskCanceller)
	if !ok {
		return nil, unimplemented("CancelToolTask", "ToolTaskCanceller")
	}
	_, err := call("CancelToolTask", func() (*CancelToolTaskResponse, error) {
		return c.CancelToolTask(ctx, fromProtoCancelToolTaskRequest(req))
	})
	if err != nil {
		return nil, err
	}
	return &runnerpb.CancelToolTaskResponse{}, nil
}

func (s *grpcServer) EstimateInputTokens(ctx context.Context, req *runnerpb.EstimateInputTokensRequest) (*runnerpb.EstimateInputTokensResponse, error) {
	e, ok := s.impl.(InputTokenEstimator)
	if !ok {
		return nil, unimplemented("EstimateInputTokens", "InputTokenEstimator")
	}
	turn, err := s.turn("EstimateInputTokens", req.GetTurn())
	if err != nil {
		return nil, err
	}
	resp, err := call("EstimateInputTokens", func() (*EstimateInputTokensResponse, error) {
		return e.EstimateInputTokens(ctx, &EstimateInputTokensRequest{Turn: turn})
	})
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, malformedStatus("EstimateInputTokens returned no response")
	}
	return &runnerpb.EstimateInputTokensResponse{InputTokens: resp.InputTokens}, nil
}

func (s *grpcServer) SelectCompactionCutoff(ctx context.Context, req *runnerpb.CompactionCutoffRequest) (*runnerpb.CompactionCutoffResponse, error) {
	c, ok := s.impl.(Compactor)
	if !ok {
		return nil, unimplemented("SelectCompactionCutoff", "Compactor")
	}
	turn, err := s.turn("SelectCompactionCutoff", req.GetTurn())
	if err != nil {
		return nil, err
	}
	r := &CompactionCutoffRequest{Turn: turn, RetainedTokenBudget: req.GetRetainedTokenBudget()}
	resp, err := call("SelectCompactionCutoff", func() (*CompactionCutoffResponse, error) { return c.SelectCompactionCutoff(ctx, r) })
	if err != nil {
		return nil, err
	}
	if reason := checkCompactionCutoffResponse(resp, r); reason != "" {
		return nil, malformedStatus(reason)
	}
	return &runnerpb.CompactionCutoffResponse{ThroughSequence: resp.ThroughSequence}, nil
}

func (s *grpcServer) SummarizeContext(req *runnerpb.SummarizeContextRequest, stream runnerpb.Runner_SummarizeContextServer) error {
	c, ok := s.impl.(Compactor)
	if !ok {
		return unimplemented("SummarizeContext", "Compactor")
	}
	ctx := stream.Context()
	r := fromProtoSummarizeContextRequest(req)
	live := startLiveStream(func(f liveFrame) error { return stream.Send(f.summarizeContextFrame()) })
	r.Events = live
	resp, err := call("SummarizeContext", func() (*SummarizeContextResponse, error) { return c.SummarizeContext(ctx, r) })
	if sendErr := live.finish(); err == nil && sendErr != nil {
		return sendFailed(ctx, "SummarizeContext", "a live frame", sendErr)
	}
	if err != nil {
		return err
	}
	if resp == nil {
		return malformedStatus("SummarizeContext returned no response")
	}
	outcome := &runnerpb.SummarizeContextResponse{Summary: resp.Summary, Usage: toProtoUsage(resp.Usage), Metadata: toProtoMetadata(resp.Metadata)}
	if reason := checkUTF8("SummarizeContext", outcome); reason != "" {
		return malformedStatus(reason)
	}
	out := &runnerpb.SummarizeContextFrame{Frame: &runnerpb.SummarizeContextFrame_Outcome{Outcome: outcome}}
	return sendFailed(ctx, "SummarizeContext", "the outcome", stream.Send(out))
}

func unimplemented(method, iface string) error {
	return status.Errorf(codes.Unimplemented, "runner does not implement %s (pluginapi.%s)", method, iface)
}

// sendFailed reports the error of sending a frame. While the caller is
// still there, a failed send means the frame could not be encoded (such as
// a string that is not UTF-8), which is malformed.
func sendFailed(ctx context.Context, method, what string, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	return malformedStatus(fmt.Sprintf("%s: %s cannot be sent: %s", method, what, status.Convert(err).Message()))
}

type liveKind uint8

const (
	liveText liveKind = iota + 1
	liveReasoning
	liveEvent
	liveHeartbeat
	liveCheckpoint
)

// liveFrame is one live write, before it becomes a stream's own frame type.
type liveFrame struct {
	kind      liveKind
	text      string // text, reasoning, checkpoint; the payload of an event
	eventType string
}

func (f liveFrame) runModelStepFrame() *runnerpb.RunModelStepFrame {
	switch f.kind {
	case liveText:
		return &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_TextDelta{TextDelta: &runnerpb.TextDelta{Text: f.text}}}
	case liveReasoning:
		return &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_ReasoningDelta{ReasoningDelta: &runnerpb.ReasoningDelta{Text: f.text}}}
	case liveEvent:
		return &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_Event{Event: &runnerpb.Event{Type: f.eventType, PayloadJson: f.text}}}
	}
	return &runnerpb.RunModelStepFrame{Frame: &runnerpb.RunModelStepFrame_Heartbeat{Heartbeat: &runnerpb.Heartbeat{}}}
}

func (f liveFrame) toolCallFrame() *runnerpb.ToolCallFrame {
	switch f.kind {
	case liveText:
		return &runnerpb.ToolCallFrame{Frame: &runnerpb.ToolCallFrame_TextDelta{TextDelta: &runnerpb.TextDelta{Text: f.text}}}
	case liveReasoning:
		return &runnerpb.ToolCallFrame{Frame: &runnerpb.ToolCallFrame_ReasoningDelta{ReasoningDelta: &runnerpb.ReasoningDelta{Text: f.text}}}
	case liveEvent:
		return &runnerpb.ToolCallFrame{Frame: &runnerpb.ToolCallFrame_Event{Event: &runnerpb.Event{Type: f.eventType, PayloadJson: f.text}}}
	case liveCheckpoint:
		return &runnerpb.ToolCallFrame{Frame: &runnerpb.ToolCallFrame_HeartbeatCheckpoint{HeartbeatCheckpoint: &runnerpb.HeartbeatCheckpoint{Text: f.text}}}
	}
	return &runnerpb.ToolCallFrame{Frame: &runnerpb.ToolCallFrame_Heartbeat{Heartbeat: &runnerpb.Heartbeat{}}}
}

func (f liveFrame) summarizeContextFrame() *runnerpb.SummarizeContextFrame {
	switch f.kind {
	case liveText:
		return &runnerpb.SummarizeContextFrame{Frame: &runnerpb.SummarizeContextFrame_TextDelta{TextDelta: &runnerpb.TextDelta{Text: f.text}}}
	case liveReasoning:
		return &runnerpb.SummarizeContextFrame{Frame: &runnerpb.SummarizeContextFrame_ReasoningDelta{ReasoningDelta: &runnerpb.ReasoningDelta{Text: f.text}}}
	case liveEvent:
		return &runnerpb.SummarizeContextFrame{Frame: &runnerpb.SummarizeContextFrame_Event{Event: &runnerpb.Event{Type: f.eventType, PayloadJson: f.text}}}
	}
	return &runnerpb.SummarizeContextFrame{Frame: &runnerpb.SummarizeContextFrame_Heartbeat{Heartbeat: &runnerpb.Heartbeat{}}}
}

// liveStream is the ToolEventWriter of one streaming call. Writes append to
// a queue and return at once; one goroutine sends the queue in order. When
// the call returns, finish closes the writer (later writes are dropped) and
// waits until the queue is sent, so every live frame precedes the outcome.
// Checkpoints reach only tool streams: the other streams' frame types have
// no field for them (their requests expose the writer as an EventWriter;
// a checkpoint written there anyway is sent as a plain heartbeat).
type liveStream struct {
	mu      sync.Mutex
	queue   []liveFrame
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	sendErr error
}

func startLiveStream(send func(liveFrame) error) *liveStream {
	s := &liveStream{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run(send)
	return s
}

func (s *liveStream) run(send func(liveFrame) error) {
	defer close(s.done)
	for {
		s.mu.Lock()
		batch, closed := s.queue, s.closed
		s.queue = nil
		s.mu.Unlock()
		for _, f := range batch {
			if s.sendErr == nil {
				s.sendErr = send(f)
			}
		}
		if closed {
			return
		}
		if len(batch) == 0 {
			<-s.wake
		}
	}
}

// finish closes the writer, waits until every queued frame is sent and
// returns the first send error.
func (s *liveStream) finish() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
	<-s.done
	return s.sendErr
}

func (s *liveStream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *liveStream) push(f liveFrame) {
	s.mu.Lock()
	if s.closed || (len(s.queue) >= maxQueuedFrames && f.kind != liveCheckpoint) {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, f)
	s.mu.Unlock()
	s.signal()
}

// WriteTextDelta implements EventWriter. Invalid UTF-8 is replaced, since
// live text is for display only.
func (s *liveStream) WriteTextDelta(text string) {
	s.push(liveFrame{kind: liveText, text: strings.ToValidUTF8(text, "\uFFFD")})
}

// WriteReasoningDelta implements EventWriter.
func (s *liveStream) WriteReasoningDelta(text string) {
	s.push(liveFrame{kind: liveReasoning, text: strings.ToValidUTF8(text, "\uFFFD")})
}

// WriteEvent implements EventWriter.
func (s *liveStream) WriteEvent(eventType string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("pluginapi: WriteEvent %q: %w", eventType, err)
	}
	if !isJSONObject(b) {
		return fmt.Errorf("pluginapi: WriteEvent %q: the payload must marshal to a JSON object, not %.40s", eventType, b)
	}
	eventType = strings.ToValidUTF8(eventType, "\uFFFD")
	if err := CheckEvent(eventType, b); err != nil {
		return fmt.Errorf("pluginapi: WriteEvent: %w", err)
	}
	s.push(liveFrame{kind: liveEvent, eventType: eventType, text: string(b)})
	return nil
}

// Heartbeat implements EventWriter.
func (s *liveStream) Heartbeat() { s.push(liveFrame{kind: liveHeartbeat}) }

// SaveHeartbeatCheckpoint implements ToolEventWriter. A checkpoint that is
// not valid UTF-8 cannot travel and is dropped with a note on stderr:
// mending it would hand a retry different bytes than were saved.
func (s *liveStream) SaveHeartbeatCheckpoint(text string) {
	if !utf8.ValidString(text) {
		fmt.Fprintln(os.Stderr, "pluginapi: SaveHeartbeatCheckpoint: dropped a checkpoint that is not valid UTF-8")
		return
	}
	s.push(liveFrame{kind: liveCheckpoint, text: text})
}

// isJSONObject reports whether b, valid JSON, is an object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// Interface guards
var (
	_ runnerpb.RunnerServer = (*grpcServer)(nil)
	_ ToolEventWriter       = (*liveStream)(nil)
)

// transcriptCacheMiss is the gRPC status message of ErrTranscriptNotCached.
const transcriptCacheMiss = "transcript_cache_miss"
