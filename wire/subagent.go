package wire

// Sub-agents: a session whose agent declares sub_agents offers its model one
// host tool per sub-agent, delegate_to_<name>. A call starts a child
// session, a Temporal child workflow of the parent, whose first message is
// the task. The parent and the child talk through two signals, so any
// Temporal client sees the same protocol: the child reports what the parent
// must know (SignalSubAgentReport), the parent steers its child
// (SignalSubAgentControl).

// Signal names of the sub-agent protocol.
const (
	// SignalSubAgentReport is a child's report to its parent:
	// SubAgentReport.
	SignalSubAgentReport = "sub_agent_report"
	// SignalSubAgentControl is a parent's order to its child:
	// SubAgentControl.
	SignalSubAgentControl = "sub_agent_control"
)

// SubAgentToolPrefix starts the name of a sub-agent's host tool.
const SubAgentToolPrefix = "delegate_to_"

// Sub-agent modes.
const (
	// SubAgentModeWait: the delegating call waits for the child's answer,
	// which is its result; the child closes after its first turn.
	SubAgentModeWait = "wait"
	// SubAgentModeBackground: the call answers at once with the child's
	// session ID.
	SubAgentModeBackground = "background"
)

// MaxSubAgentDepth bounds a chain of sub-agents: a child of this depth
// (the root is 0) is offered no delegate_to_ tools.
const MaxSubAgentDepth = 3

// CancellationParentCancelled is the cancellation reason of a child's turn
// that its parent's cancel_turn (or close) stopped.
const CancellationParentCancelled = "parent_cancelled"

// SubAgentStart is in a child's start input: who its parent is.
type SubAgentStart struct {
	// ParentSessionID is the delegating session; ToolCallID its call.
	ParentSessionID string `json:"parent_session_id"`
	ToolCallID      string `json:"tool_call_id"`
	// Name is the sub-agent's name in the parent's agent (the tool's
	// suffix); Mode is SubAgentModeWait or SubAgentModeBackground.
	Name string `json:"name"`
	Mode string `json:"mode"`
	// MaxTurns bounds the child's model calls (0: no bound).
	MaxTurns int `json:"max_turns,omitempty"`
	// Lineage is the chain of sessions above the child, the root first
	// and the parent last. Their event streams also get the child's events.
	Lineage []string `json:"lineage"`
	// Budget is the parent's spend budget the child's model calls count
	// against.
	Budget *ParentBudget `json:"budget,omitempty"`
}

// ParentBudget is what a child's model calls are checked against besides
// its own agent's limits: the parent agent's session limits, with what the
// parent (and its earlier children) used when the child started.
type ParentBudget struct {
	Agent    string `json:"agent"`
	APIToken string `json:"api_token,omitempty"`
	Used     Spend  `json:"used"`
}

// SubAgentOrigin is a child's parent, in its snapshot.
type SubAgentOrigin struct {
	ParentSessionID string   `json:"parent_session_id"`
	ToolCallID      string   `json:"tool_call_id"`
	Name            string   `json:"name"`
	Mode            string   `json:"mode"`
	Path            []string `json:"path"`
}

// Kinds of SubAgentReport.
const (
	// SubAgentInterruptRaised: the child waits for a person; Interrupt is
	// what its snapshot shows of it.
	SubAgentInterruptRaised = "interrupt_raised"
	// SubAgentInterruptResolved: the child's interrupt InterruptID is no
	// longer pending.
	SubAgentInterruptResolved = "interrupt_resolved"
	// SubAgentTurnEnded: the child's turn TurnID ended with Outcome.
	SubAgentTurnEnded = "turn_ended"
)

// Outcomes of a child's turn in SubAgentReport.
const (
	SubAgentCompleted = "completed"
	SubAgentFailed    = "failed"
	SubAgentCancelled = "cancelled"
)

// SubAgentReport is the payload of SignalSubAgentReport.
type SubAgentReport struct {
	Kind           string `json:"kind"`
	ChildSessionID string `json:"child_session_id"`
	ToolCallID     string `json:"tool_call_id"`
	// Interrupt is set for SubAgentInterruptRaised; its SessionID and Path
	// name the session that raised it (a grandchild's travel up too).
	Interrupt   *Interrupt `json:"interrupt,omitempty"`
	InterruptID string     `json:"interrupt_id,omitempty"`
	// TurnID, Outcome, Answer and Error are set for SubAgentTurnEnded:
	// Answer is the child's last assistant text (its beginning when
	// AnswerSequence is set: the whole message is that sequence of the
	// child's transcript in the message store).
	TurnID         string `json:"turn_id,omitempty"`
	Outcome        string `json:"outcome,omitempty"`
	Answer         string `json:"answer,omitempty"`
	AnswerSequence int64  `json:"answer_sequence,omitempty"`
	Error          string `json:"error,omitempty"`
	// Spend is what the child's model calls used so far, in total.
	Spend Spend `json:"spend"`
}

// Actions of SubAgentControl.
const (
	// SubAgentCancelTurn cancels the child's running turn with the reason
	// CancellationParentCancelled.
	SubAgentCancelTurn = "cancel_turn"
	// SubAgentClose cancels the child's running turn and closes it.
	SubAgentClose = "close"
	// SubAgentSend sends the child a message (Text): queued, or steering
	// its running turn with Steer.
	SubAgentSend = "send"
)

// SubAgentControl is the payload of SignalSubAgentControl.
type SubAgentControl struct {
	Action string `json:"action"`
	Text   string `json:"text,omitempty"`
	Steer  bool   `json:"steer,omitempty"`
}

// SubAgentStartedPayload is the payload of sub_agent_started.
type SubAgentStartedPayload struct {
	ToolCallID     string `json:"tool_call_id"`
	ChildSessionID string `json:"child_session_id"`
	Name           string `json:"name"`
	Agent          string `json:"agent"`
	Mode           string `json:"mode"`
	Task           string `json:"task"`
}

// SubAgentFinishedPayload is the payload of sub_agent_finished.
type SubAgentFinishedPayload struct {
	ToolCallID     string `json:"tool_call_id"`
	ChildSessionID string `json:"child_session_id"`
	Outcome        string `json:"outcome"`
	Error          string `json:"error"`
}
