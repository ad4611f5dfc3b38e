package tracing

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/pluginapi/otelenv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attribute keys: the GenAI semantic conventions' (v1.41.0,
// Development) and the worker's own dex.* ones.
const (
	KeyOperationName   = "gen_ai.operation.name"
	KeyProviderName    = "gen_ai.provider.name"
	KeyAgentName       = "gen_ai.agent.name"
	KeyConversationID  = otelenv.KeyConversationID
	KeyRequestModel    = "gen_ai.request.model"
	KeyResponseModel   = "gen_ai.response.model"
	KeyResponseID      = "gen_ai.response.id"
	KeyFinishReasons   = "gen_ai.response.finish_reasons"
	KeyInputTokens     = "gen_ai.usage.input_tokens"
	KeyOutputTokens    = "gen_ai.usage.output_tokens"
	KeyCacheReadTokens = "gen_ai.usage.cache_read.input_tokens"
	KeyReasoningTokens = "gen_ai.usage.reasoning.output_tokens"
	KeyToolName        = "gen_ai.tool.name"
	KeyToolCallID      = "gen_ai.tool.call.id"
	KeyToolType        = "gen_ai.tool.type"
	KeyToolArguments   = "gen_ai.tool.call.arguments"
	KeyToolResult      = "gen_ai.tool.call.result"
	KeyErrorType       = "error.type"
	KeySessionID       = otelenv.KeySessionID
	KeyFlowID          = "dex.flow.id"
	KeyRunID           = "dex.run.id"
	KeyTurnID          = "dex.agent.turn.id"
	KeyTurnOutcome     = "dex.agent.turn.outcome"
	KeyStepType        = "dex.step.type"
	KeyStepExecutionID = "dex.step.execution_id"
	KeyStepAttempt     = "dex.step.attempt"
	KeyToolEffect      = "dex.agent.tool.effect"
	// The approval rule that decided a call, its decision, and the shadow
	// rule's decision (approval_rules).
	KeyApprovalRule           = "dex.agent.approval.rule"
	KeyApprovalDecision       = "dex.agent.approval.decision"
	KeyShadowApprovalDecision = "dex.agent.approval.shadow_decision"
	KeyToolCallStatus         = "dex.agent.tool_call.status"
	KeyRequestedToolCalls     = "dex.agent.requested_tool_call.ids"
	KeyModelCalls             = "dex.agent.model_calls"
	OperationInvokeAgent      = "invoke_agent"
	OperationChat             = "chat"
	OperationExecuteTool      = "execute_tool"
	toolTypeFunction          = "function"
	maxContentAttributeLen    = 64 << 10
)

// Step names the Step attempt a span belongs to.
type Step struct {
	SessionID, RunID, TurnID string
	// Type is the Step type (RunModel, CallTool, ...).
	Type string
	// ExecutionID is shared by all attempts of one Step execution
	// (run ID / activity ID, the events' step_execution_id).
	ExecutionID string
	Attempt     int
}

func (s Step) attributes() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String(KeyConversationID, s.SessionID),
		attribute.String(KeySessionID, s.SessionID),
		attribute.String(KeyFlowID, s.SessionID),
		attribute.String(KeyRunID, s.RunID),
		attribute.String(KeyTurnID, s.TurnID),
		attribute.String(KeyStepType, s.Type),
		attribute.String(KeyStepExecutionID, s.ExecutionID),
		attribute.Int(KeyStepAttempt, s.Attempt),
	}
}

// Chat is one model call, for its chat span.
type Chat struct {
	Step
	Start time.Time
	// RequestModel .. FinishReasons come from the runner's
	// ModelCallMetadata; empty where it did not say.
	RequestModel, ResponseModel, Provider, ResponseID string
	FinishReasons                                     []string
	// ModelCalls is how many model calls the runner made (1 for one
	// call); the usage goes on the span only for exactly one.
	ModelCalls                                         int
	InputTokens, OutputTokens, CachedTokens, Reasoning int64
	// RequestedToolCalls are the IDs of the tool calls the call asked for.
	RequestedToolCalls []string
	// Err is the attempt's failure, nil when the call answered.
	Err error
}

// Chat writes the chat span of a model call that ended now, under the
// current span of ctx: "chat {request model}", CLIENT for one model call,
// INTERNAL for a runner that made several (their own instrumentation
// counts their tokens).
func (t *Tracer) Chat(ctx context.Context, c Chat) {
	if t == nil {
		return
	}
	defer t.guard("chat")
	name := OperationChat
	if c.RequestModel != "" {
		name += " " + c.RequestModel
	}
	kind := trace.SpanKindClient
	if c.ModelCalls != 1 && c.Err == nil {
		kind = trace.SpanKindInternal
	}
	attrs := append(c.Step.attributes(), attribute.String(KeyOperationName, OperationChat))
	for k, v := range map[string]string{KeyRequestModel: c.RequestModel, KeyResponseModel: c.ResponseModel, KeyProviderName: c.Provider, KeyResponseID: c.ResponseID} {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	if len(c.FinishReasons) > 0 {
		attrs = append(attrs, attribute.StringSlice(KeyFinishReasons, c.FinishReasons))
	}
	if len(c.RequestedToolCalls) > 0 {
		attrs = append(attrs, attribute.StringSlice(KeyRequestedToolCalls, c.RequestedToolCalls))
	}
	if c.Err == nil {
		attrs = append(attrs, attribute.Int(KeyModelCalls, c.ModelCalls))
	}
	if c.ModelCalls == 1 {
		for k, v := range map[string]int64{KeyInputTokens: c.InputTokens, KeyOutputTokens: c.OutputTokens, KeyCacheReadTokens: c.CachedTokens, KeyReasoningTokens: c.Reasoning} {
			if v != 0 {
				attrs = append(attrs, attribute.Int64(k, v))
			}
		}
	}
	_, s := t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(c.Start), trace.WithAttributes(attrs...))
	if c.Err != nil {
		fail(s, c.Err)
	}
	s.End()
}

// Tool is one tool call, for its execute_tool span.
type Tool struct {
	Step
	Name, CallID, Effect string
	// ApprovalRule and ApprovalDecision name the approval rule that
	// decided the call (empty: none), and ShadowApprovalDecision the shadow
	// rule's decision.
	ApprovalRule, ApprovalDecision, ShadowApprovalDecision string
	// Arguments go on the span with CaptureContent.
	Arguments string
}

// ToolEnd ends an execute_tool span with the call's status (succeeded,
// failed, input_requested, task_started, error), its result (on the span
// with CaptureContent) and the attempt's failure.
type ToolEnd func(status, result string, err error)

// StartTool starts the execute_tool span of a tool call and returns ctx
// with it as the current span, so the runner's gRPC call and the MCP
// request carry it.
func (t *Tracer) StartTool(ctx context.Context, c Tool) (sctx context.Context, end ToolEnd) {
	// What a nil Tracer, or a start that fails, returns.
	sctx, end = ctx, func(string, string, error) {}
	if t == nil {
		return sctx, end
	}
	defer t.guard("execute_tool")
	attrs := append(c.Step.attributes(),
		attribute.String(KeyOperationName, OperationExecuteTool),
		attribute.String(KeyToolName, c.Name),
		attribute.String(KeyToolCallID, c.CallID),
		attribute.String(KeyToolType, toolTypeFunction),
		attribute.String(KeyToolEffect, c.Effect))
	if c.ApprovalRule != "" {
		attrs = append(attrs, attribute.String(KeyApprovalRule, c.ApprovalRule), attribute.String(KeyApprovalDecision, c.ApprovalDecision))
	}
	if c.ShadowApprovalDecision != "" {
		attrs = append(attrs, attribute.String(KeyShadowApprovalDecision, c.ShadowApprovalDecision))
	}
	if t.capture && c.Arguments != "" {
		attrs = append(attrs, attribute.String(KeyToolArguments, clip(c.Arguments)))
	}
	started, s := t.tracer.Start(ctx, OperationExecuteTool+" "+c.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return started, func(status, result string, err error) {
		defer t.guard("execute_tool")
		s.SetAttributes(attribute.String(KeyToolCallStatus, status))
		if t.capture && result != "" {
			s.SetAttributes(attribute.String(KeyToolResult, clip(result)))
		}
		if err != nil {
			fail(s, err)
		}
		s.End()
	}
}

// clip bounds content on a span, cutting at a rune boundary: OTLP carries
// strings as protobuf strings, and one invalid UTF-8 value fails the
// export of its whole batch.
func clip(s string) string {
	if len(s) <= maxContentAttributeLen {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := maxContentAttributeLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "…"
}

// Turn is a turn that ended, for its invoke_agent root.
type Turn struct {
	SessionID, FirstRunID, RunID, TurnID, Agent string
	// TurnNumber is n of turn-n: the root links to turn n-1's root.
	TurnNumber int
	Start, End time.Time
	// Outcome is completed, failed, cancelled or steered; Error the
	// failure's text.
	Outcome, Error string
}

// firstEnd reports whether this process has not written the turn root id
// yet, and remembers it.
func (t *Tracer) firstEnd(id trace.SpanID) bool {
	t.endedMu.Lock()
	defer t.endedMu.Unlock()
	if _, ok := t.ended[id]; ok {
		return false
	}
	if t.ended == nil || len(t.ended) >= maxEndedTurns {
		t.ended = map[trace.SpanID]struct{}{}
	}
	t.ended[id] = struct{}{}
	return true
}

// TurnEnded writes the invoke_agent root of a turn, with the IDs TurnRoot
// derives and the turn's start and end. It runs in workflow code outside
// replay. A workflow task that runs again writes it again: in this process
// the second write is skipped; on another worker (the first died after
// writing it) it carries the same IDs, which tracing backends merge.
func (t *Tracer) TurnEnded(tr Turn) {
	if t == nil {
		return
	}
	defer t.guard("invoke_agent")
	root := TurnRoot(tr.SessionID, tr.FirstRunID, tr.TurnID, t.ratio)
	if !t.firstEnd(root.SpanID()) {
		return
	}
	ctx := context.WithValue(WithSession(context.Background(), tr.SessionID), forcedKey{}, root)
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(tr.Start),
		trace.WithAttributes(
			attribute.String(KeyOperationName, OperationInvokeAgent),
			attribute.String(KeyAgentName, tr.Agent),
			attribute.String(KeyConversationID, tr.SessionID),
			attribute.String(KeySessionID, tr.SessionID),
			attribute.String(KeyFlowID, tr.SessionID),
			attribute.String(KeyRunID, tr.RunID),
			attribute.String(KeyTurnID, tr.TurnID),
			attribute.String(KeyTurnOutcome, tr.Outcome),
		),
	}
	if tr.TurnNumber > 1 {
		prev := TurnRoot(tr.SessionID, tr.FirstRunID, "turn-"+strconv.Itoa(tr.TurnNumber-1), t.ratio)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: prev}))
	}
	_, s := t.tracer.Start(ctx, OperationInvokeAgent+" "+tr.Agent, opts...)
	if tr.Outcome == "failed" {
		s.SetStatus(codes.Error, tr.Error)
		s.SetAttributes(attribute.String(KeyErrorType, "TurnFailed"))
	}
	s.End(trace.WithTimestamp(tr.End))
}
