package steps

import (
	"context"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"go.temporal.io/sdk/activity"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/tracing"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// traceStep names the running Step attempt for its spans.
func traceStep(ctx context.Context, turnID string) tracing.Step {
	info := activity.GetInfo(ctx)
	return tracing.Step{
		SessionID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID, TurnID: turnID,
		Type: info.ActivityType.Name, ExecutionID: info.WorkflowExecution.RunID + "/" + info.ActivityID,
		Attempt: int(info.Attempt),
	}
}

// traceChat writes the chat span of a RunModel attempt that began at
// start: one for a model call that answered or failed, none for an attempt
// that made no call (a compaction first, a spend limit's refusal).
func (a *Activities) traceChat(ctx context.Context, turnID string, start time.Time, out session.ModelOutcome, err error) {
	if a.Tracer == nil {
		return
	}
	c := tracing.Chat{Step: traceStep(ctx, turnID), Start: start, Err: a.spanError(err)}
	var usage pluginapi.Usage
	var md *pluginapi.ModelCallMetadata
	switch {
	case out.TurnCompleted != nil:
		usage, md = out.TurnCompleted.Usage, out.TurnCompleted.Metadata
	case out.ToolCallsRequested != nil:
		usage, md = out.ToolCallsRequested.Usage, out.ToolCallsRequested.Metadata
		for _, tc := range out.ToolCallsRequested.ToolCalls {
			c.RequestedToolCalls = append(c.RequestedToolCalls, tc.ToolCallID)
		}
	case err == nil:
		return
	}
	traceUsage(&c, usage, md)
	a.Tracer.Chat(ctx, c)
}

func traceUsage(c *tracing.Chat, u pluginapi.Usage, md *pluginapi.ModelCallMetadata) {
	if md != nil {
		c.RequestModel, c.ResponseModel, c.Provider, c.ResponseID = md.RequestModel, md.ResponseModel, md.ProviderName, md.ResponseID
		c.FinishReasons = md.FinishReasons
	}
	c.ModelCalls = int(u.ModelCalls)
	c.InputTokens, c.OutputTokens, c.CachedTokens, c.Reasoning = u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.ReasoningTokens
}

// toolExecutionError is a tool's own failure (the model sees it), for the
// span's error.type.
type toolExecutionError struct{ msg string }

func (e toolExecutionError) Error() string { return e.msg }
func (e toolExecutionError) Type() string  { return "ToolExecutionError" }

// startToolSpan starts the execute_tool span of a tool Step attempt; end
// takes the attempt's outcome.
func (a *Activities) startToolSpan(ctx context.Context, turnID string, call wire.ToolCall) (context.Context, func(session.ToolOutcome, error)) {
	if a.Tracer == nil {
		return ctx, func(session.ToolOutcome, error) {}
	}
	ctx, end := a.Tracer.StartTool(ctx, tracing.Tool{
		Step: traceStep(ctx, turnID), Name: call.ToolName, CallID: call.ToolCallID,
		Effect: string(call.Effect), Arguments: a.redact(call.Arguments),
		ApprovalRule: call.ApprovalRule, ApprovalDecision: call.ApprovalDecision, ShadowApprovalDecision: call.ShadowApprovalDecision,
	})
	return ctx, func(out session.ToolOutcome, err error) {
		var result string
		if out.Output != nil {
			result = a.redact(*out.Output)
		}
		status := toolResult(out, err)
		if err == nil && out.Error != nil {
			err = toolExecutionError{*out.Error}
		}
		end(status, result, a.spanError(err))
	}
}

// spanError is err with the secrets the worker knows of redacted, and its
// type kept for error.type.
func (a *Activities) spanError(err error) error {
	if err == nil {
		return nil
	}
	return typedError{msg: a.redact(err.Error()), typ: tracing.ErrorType(err)}
}

type typedError struct{ msg, typ string }

func (e typedError) Error() string { return e.msg }
func (e typedError) Type() string  { return e.typ }
