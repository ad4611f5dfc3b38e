package session

import "github.com/dex-agents/dex-agent-worker/pluginapi"

// Inputs and outputs of the session's activities. They travel as plain JSON
// through the engine's history.

// BuildUserMessageInput is the input of the BuildUserMessage local activity.
type BuildUserMessageInput struct {
	Agent  string `json:"agent"`
	TurnID string `json:"turn_id"`
	Text   string `json:"text"`
}

// TurnInput is the committed turn state a runner sees; RunModel's input.
type TurnInput struct {
	Agent     string               `json:"agent"`
	SessionID string               `json:"session_id"`
	TurnID    string               `json:"turn_id"`
	Messages  []pluginapi.Message  `json:"messages"`
	RunState  string               `json:"run_state,omitempty"`
	ToolCalls []pluginapi.ToolCall `json:"tool_calls,omitempty"`
	Policies  pluginapi.PolicySet  `json:"policies"`
}

// ToolInput is the input of CallTool and CallSingleAttemptTool.
type ToolInput struct {
	Agent          string             `json:"agent"`
	SessionID      string             `json:"session_id"`
	TurnID         string             `json:"turn_id"`
	ToolCall       pluginapi.ToolCall `json:"tool_call"`
	IdempotencyKey string             `json:"idempotency_key"`
}

// StepHeartbeat is the heartbeat detail of a RunModel or tool Step. Started
// is recorded before a tool runs, so a failed tool Step whose last details
// lack it never ran the tool (attempt progress NOT_STARTED). Attempt lets
// the session name the attempt of a Step that timed out.
type StepHeartbeat struct {
	Started    bool   `json:"started"`
	Checkpoint string `json:"checkpoint,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
}

// StepFailure is the detail of every error a Step returns: the attempt
// that failed.
type StepFailure struct {
	Attempt int `json:"attempt"`
}

// ToolNotStartedErrorType is the application error type a tool Step returns
// when it failed before any attempt reached the tool.
const ToolNotStartedErrorType = "ToolNotStarted"

// TurnFailureInput is the input of the RecordTurnFailure local activity.
type TurnFailureInput struct {
	Turn TurnInput `json:"turn"`
	// Note is the turn-failure note, or "" when no tool call ran.
	Note string `json:"note,omitempty"`
}

// TurnFailureOutput holds the messages RecordTurnFailure stores.
type TurnFailureOutput struct {
	Messages []pluginapi.FrameworkMessage `json:"messages"`
	Attempt  int                          `json:"attempt,omitempty"`
}

// turnInput builds the runner's view of the active turn.
func (s *State) turnInput() TurnInput {
	return TurnInput{
		Agent:     s.Options.Agent,
		SessionID: s.SessionID,
		TurnID:    s.ActiveTurnID,
		Messages:  s.Messages,
		RunState:  s.RunState,
		ToolCalls: s.ToolCalls,
		Policies:  s.Options.Policies,
	}
}

// BuildUserMessageOutput is the result of the BuildUserMessage local activity.
type BuildUserMessageOutput struct {
	Message pluginapi.FrameworkMessage `json:"message"`
	Attempt int                        `json:"attempt,omitempty"`
}
