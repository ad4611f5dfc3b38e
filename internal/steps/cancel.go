package steps

import (
	"context"
	"errors"

	"github.com/dex-agents/dex-agent-worker/internal/wireconv"
	"github.com/dex-agents/dex-agent-worker/wire"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// CancelToolTask asks the runner to stop an abandoned tool task's remote
// work, best effort, when it implements ToolTaskCanceller (capability
// tool_task_cancelling); the session then records the call
// outcome_unknown. A runner without the capability is not asked. A crash
// or a failed attempt asks again, so the runner's cancel must be
// idempotent by task ID.
func (a *Activities) CancelToolTask(ctx context.Context, in session.PollInput) (session.TaskCancelOutcome, error) {
	defer a.begin()()
	out := session.TaskCancelOutcome{Attempt: int(activity.GetInfo(ctx).Attempt)}
	if in.HostSource != "" {
		// An MCP task: tasks/cancel on its server. Any answer ends it.
		if a.MCP == nil {
			return out, a.finish(ctx, errors.New("this worker runs no MCP tools (no mcp_servers in its config)"))
		}
		if err := a.MCP.CancelTask(ctx, in.Agent, in.HostSource, in.ToolCall.TaskID); err != nil {
			return out, a.finish(ctx, temporal.NewApplicationError(a.redact(err.Error()), wire.MCPInterruptedErrorType))
		}
		out.Cancelled = true
		return out, nil
	}
	r, caps, err := a.Runners.Runner(in.Agent)
	if err != nil {
		return out, a.finish(ctx, err)
	}
	c, ok := r.(pluginapi.ToolTaskCanceller)
	if !ok || !caps.ToolTaskCancelling {
		return out, nil
	}
	if _, err := c.CancelToolTask(ctx, &pluginapi.CancelToolTaskRequest{
		Agent: in.Agent, SessionID: in.SessionID, ToolCall: wireconv.RunnerToolCall(in.ToolCall), TaskID: in.ToolCall.TaskID,
	}); err != nil {
		return out, a.finish(ctx, stepError("cancel_tool_task", err))
	}
	a.stepLogger(ctx, in.TurnID).Info("cancelled a tool task",
		"tool_call_id", in.ToolCall.ToolCallID, "task_id", in.ToolCall.TaskID)
	out.Cancelled = true
	return out, nil
}
