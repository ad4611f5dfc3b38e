package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The standard event types a runner may write. The session writes the
// other standard types (turn_started, tool_call_deferred, usage_recorded,
// ...) itself.
const (
	EventTextDelta        = "text_delta"
	EventReasoningDelta   = "reasoning_delta"
	EventToolCallStarted  = "tool_call_started"
	EventToolCallFinished = "tool_call_finished"
)

// RunnerEventTypes lists the standard event types a runner may write.
var RunnerEventTypes = []string{EventTextDelta, EventReasoningDelta, EventToolCallStarted, EventToolCallFinished}

// sessionEventTypes are the standard types only the worker writes (the
// session, or a Step for an MCP server), which no runner may write.
var sessionEventTypes = []string{
	"turn_started", "turn_completed", "turn_failed", "turn_steered", "turn_cancelled",
	"tool_call_deferred", "interrupt_raised", "interrupt_resolved", "interrupt_expiring", "interrupt_extended", "turn_recovering", "timer_started",
	"plan_updated", "plan_execution_started", "tool_task_started", "usage_recorded",
	"compaction_started", "compaction_finished", "spend_limit_reached",
	"mcp.tool_progress", "mcp.task_status", "sub_agent_started", "sub_agent_finished",
	"notification_failed",
}

// ToolCallEvent is the payload of tool_call_started and tool_call_finished
// (Status is set only in tool_call_finished).
type ToolCallEvent struct {
	ToolCallID string         `json:"tool_call_id"`
	ToolName   string         `json:"tool_name"`
	Status     ToolCallStatus `json:"status,omitempty"`
}

// CheckEvent reports why a runner may not write an event of eventType with
// payload (a JSON object): a standard type the session writes itself, a
// custom type without an adapter prefix, or a standard type whose payload
// lacks its fields.
func CheckEvent(eventType string, payload []byte) error {
	switch {
	case eventType == "":
		return fmt.Errorf("the event type is empty")
	case slices.Contains(sessionEventTypes, eventType):
		return fmt.Errorf("event type %q is written by the session, not by runners (runners write %s, or custom types)",
			eventType, strings.Join(RunnerEventTypes, ", "))
	case !slices.Contains(RunnerEventTypes, eventType) && !strings.Contains(eventType, "."):
		return fmt.Errorf("custom event type %q needs an adapter prefix, such as \"myframework.%s\"", eventType, eventType)
	}
	switch eventType {
	case EventTextDelta, EventReasoningDelta:
		var p struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(payload, &p); err != nil || p.Text == nil {
			return fmt.Errorf("%s needs {\"text\": string}", eventType)
		}
	case EventToolCallStarted, EventToolCallFinished:
		var p ToolCallEvent
		if err := json.Unmarshal(payload, &p); err != nil {
			return fmt.Errorf("%s payload: %w", eventType, err)
		}
		if p.ToolCallID == "" || p.ToolName == "" {
			return fmt.Errorf("%s needs tool_call_id and tool_name", eventType)
		}
		if eventType == EventToolCallFinished && !p.Status.Final() {
			return fmt.Errorf("tool_call_finished needs a final status (succeeded, failed, rejected or outcome_unknown), got %q", p.Status)
		}
		if eventType == EventToolCallStarted && p.Status != "" {
			return fmt.Errorf("tool_call_started has no status")
		}
	}
	return nil
}

// WriteToolCallStarted writes tool_call_started through w, for a tool the
// runner runs itself (one it cannot defer, inside RunModelStep). The
// session writes it for the deferred calls it runs.
func WriteToolCallStarted(w EventWriter, toolCallID, toolName string) error {
	return w.WriteEvent(EventToolCallStarted, ToolCallEvent{ToolCallID: toolCallID, ToolName: toolName})
}

// WriteToolCallFinished writes tool_call_finished through w for such a
// tool, with its final status (succeeded, failed, rejected or
// outcome_unknown).
func WriteToolCallFinished(w EventWriter, toolCallID, toolName string, status ToolCallStatus) error {
	return w.WriteEvent(EventToolCallFinished, ToolCallEvent{ToolCallID: toolCallID, ToolName: toolName, Status: status})
}
