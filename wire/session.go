package wire

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Names on the wire. A session is driven with plain JSON payloads through
// these names, so a Temporal client in any language can start and drive one.
const (
	// DefaultTaskQueue is the task queue sessions run on unless the config names another.
	DefaultTaskQueue = "dex-agents"

	// UpdateSendUserMessage queues one user message: SendUserMessageRequest -> bool.
	UpdateSendUserMessage = "send_user_message"
	// UpdateResolveInterrupt approves or rejects a pending interrupt:
	// ResolveInterruptRequest -> bool.
	UpdateResolveInterrupt = "resolve_interrupt"
	// UpdateExtendInterrupt moves a pending interrupt's deadline later,
	// within the agent's max_interrupt_deadline: ExtendInterruptRequest ->
	// ExtendInterruptResult.
	UpdateExtendInterrupt = "extend_interrupt"
	// UpdateAnswerQuestion answers a pending question:
	// AnswerQuestionRequest -> bool.
	UpdateAnswerQuestion = "answer_question"
	// UpdateExecutePlan runs the plan the user approved: ExecutePlanRequest
	// -> bool.
	UpdateExecutePlan = "execute_plan"
	// UpdateSessionSettings replaces the session settings the next turn
	// starts with: UpdateSessionSettingsRequest -> bool.
	UpdateSessionSettings = "update_session_settings"
	// UpdateSteerUserMessage steers the running turn with a queued message
	// or new text: SteerUserMessageRequest -> bool.
	UpdateSteerUserMessage = "steer_user_message"
	// UpdateDeleteQueuedMessage deletes a queued message:
	// DeleteQueuedMessageRequest -> bool.
	UpdateDeleteQueuedMessage = "delete_queued_message"
	// UpdateCancelTurn stops the running turn: CancelTurnRequest -> bool.
	UpdateCancelTurn = "cancel_turn"
	// UpdateCloseSession closes the session once its running turn and the
	// messages it already took have run: CloseSessionRequest -> bool.
	UpdateCloseSession = "close_session"
	// UpdateSessionMetadata sets what lists show of a session, its title
	// and whether it is archived, in its memo: SessionMetadataRequest ->
	// bool. It never changes what the session does.
	UpdateSessionMetadata = "set_session_metadata"
	// QueryAgentSnapshot returns the Snapshot.
	QueryAgentSnapshot = "get_agent_snapshot"
	// QueryListAgentMessages returns a MessagesPage for a ListMessagesRequest.
	QueryListAgentMessages = "list_agent_messages"
	// QueryForkPoint returns the ForkPoint of a ForkPointRequest: what a
	// fork of the session at a sequence starts from.
	QueryForkPoint = "get_fork_point"

	// SearchAttributeActiveStepTypes is the KeywordList search attribute that
	// lists the Steps a session waits in, such as "AwaitToolApproval".
	SearchAttributeActiveStepTypes = "ActiveStepTypes"
)

// SignalCheckWorkerVersion wakes a session (no payload) so that it looks
// whether its worker deployment has a newer current version: a session
// between turns then continues as new onto it at once, one in a turn does
// at the turn's end. Sessions without worker versioning ignore it.
const SignalCheckWorkerVersion = "check_worker_version"

// Step names, as listed in ActiveStepTypes and as activity types.
const (
	StepAwaitUserMessage      = "AwaitUserMessage"
	StepRunModel              = "RunModel"
	StepAwaitToolApproval     = "AwaitToolApproval"
	StepAwaitQuestionAnswer   = "AwaitQuestionAnswer"
	StepAwaitTimer            = "AwaitTimer"
	StepCallTool              = "CallTool"
	StepCallSingleAttemptTool = "CallSingleAttemptTool"
	StepPollToolTask          = "PollToolTask"
	StepResumeTurn            = "ResumeTurn"
	StepRecordTurnFailure     = "RecordTurnFailure"
	StepBuildUserMessage      = "BuildUserMessage"
	StepCompactContext        = "CompactContext"
	StepApplyTurnControl      = "ApplyTurnControl"
	StepCancelToolTask        = "CancelToolTask"
)

// StartInput is the workflow input of a session.
type StartInput struct {
	// InitialMessage starts the first turn when it is not blank. Up to
	// MaxInlineMessageBytes travel inline; a longer one is stored first
	// and sent by reference, InitialMessage holding its beginning.
	InitialMessage string `json:"initial_message,omitempty"`
	// InitialMessageRef is the message store reference of an initial
	// message sent by reference.
	InitialMessageRef string `json:"initial_message_ref,omitempty"`
	// SessionSettings are the session's first settings: one JSON object.
	SessionSettings json.RawMessage `json:"session_settings,omitempty"`
	// APIToken names the API token that starts the session (the HTTP API
	// sets it): its spend limits apply to the session, and its per-day
	// budget counts the session's calls.
	APIToken string `json:"api_token,omitempty"`
	// ActiveStepSearchMode is the session's ActiveStepSearchMode. Empty
	// (a raw Temporal client's start) is not searchable, as the
	// reference's start_flow; the Go client sends active_step_types.
	ActiveStepSearchMode string `json:"active_step_search_mode,omitempty"`
	// Fork, when set, starts the session as a fork of another: its
	// transcript begins as the parent's messages 1..AtSequence, which the
	// message store already shares with it.
	Fork *ForkStart `json:"fork,omitempty"`
	// SubAgent, when set, starts the session as a sub-agent of another
	// (only the parent's workflow starts one).
	SubAgent *SubAgentStart `json:"sub_agent,omitempty"`
}

// ForkPointRequest asks get_fork_point about a fork at AtSequence.
type ForkPointRequest struct {
	AtSequence int64 `json:"at_sequence"`
}

// ForkPoint is what get_fork_point answers: where a session's messages
// are, and what a fork at the asked sequence inherits.
type ForkPoint struct {
	Agent string `json:"agent"`
	// Store says the session keeps its messages in the message store;
	// only such a session can be forked.
	Store bool `json:"store"`
	// FirstSequence is the first message still stored (retention deletes
	// older ones), WindowFirstSequence the first the workflow's window
	// holds, LastSequence the last committed one.
	FirstSequence       int64 `json:"first_sequence"`
	WindowFirstSequence int64 `json:"window_first_sequence"`
	LastSequence        int64 `json:"last_sequence"`
	// ResultsPending says the active turn requested tool calls whose
	// results are not stored yet (the Step that resumes the turn stores
	// them): a fork at LastSequence would hold calls without results.
	ResultsPending bool `json:"results_pending,omitempty"`
	// Summary is the context summary a fork at the asked sequence starts
	// from: the session's, when it ends at or before that sequence.
	Summary *ForkSummary `json:"summary,omitempty"`
	// SummaryAfter is set when the session's summary covers messages after
	// the asked sequence: a fork there starts without a summary, from the
	// messages themselves.
	SummaryAfter bool `json:"summary_after,omitempty"`
	// SummaryLastSequence is the last sequence the session's summary
	// covers (0: no summary).
	SummaryLastSequence int64 `json:"summary_last_sequence,omitempty"`
	// SessionSettings are the settings a fork starts with.
	SessionSettings json.RawMessage `json:"session_settings,omitempty"`
}

// ForkSummary is a context summary a fork inherits. TextRef is a blob of
// the parent; the fork's starter copies it to the fork.
type ForkSummary struct {
	Generation    int    `json:"generation"`
	FirstSequence int64  `json:"first_sequence"`
	LastSequence  int64  `json:"last_sequence"`
	Text          string `json:"text"`
	TextRef       string `json:"text_ref,omitempty"`
	CreatedAtMs   int64  `json:"created_at_ms"`
}

// ForkStart is StartInput.Fork: the fork's origin and what the message
// store made of it.
type ForkStart struct {
	ParentSessionID string `json:"parent_session_id"`
	AtSequence      int64  `json:"at_sequence"`
	// FromSequence is the first message the fork can read;
	// ThroughSequence the last one the parent's shared chunks hold.
	FromSequence    int64 `json:"from_sequence"`
	ThroughSequence int64 `json:"through_sequence"`
	// Tail are the messages ThroughSequence+1..AtSequence, which the store
	// copied as the fork's first window rows, as the window keeps them
	// (texts cut to a preview).
	Tail []ForkMessage `json:"tail,omitempty"`
	// Summary is the context summary the fork starts from.
	Summary *ForkSummary `json:"summary,omitempty"`
}

// ForkMessage is a message of ForkStart.Tail.
type ForkMessage struct {
	Sequence   int64  `json:"sequence"`
	Role       string `json:"role"`
	Text       string `json:"text"`
	Truncated  bool   `json:"truncated,omitempty"`
	Bytes      int64  `json:"bytes"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	TurnID     string `json:"turn_id,omitempty"`
	ToolStatus string `json:"tool_status,omitempty"`
}

// Branches are the sessions of one conversation: its root and every fork
// of it or of its forks, oldest first (GET /v1/sessions/{id}/branches).
type Branches struct {
	RootSessionID string   `json:"root_session_id"`
	Branches      []Branch `json:"branches"`
	// HasMore is set when there are more forks than the list holds.
	HasMore bool `json:"has_more,omitempty"`
}

// Branch is one fork in Branches.
type Branch struct {
	SessionID       string `json:"session_id"`
	ParentSessionID string `json:"parent_session_id"`
	AtSequence      int64  `json:"at_sequence"`
	// CreatedAt is RFC 3339 in UTC.
	CreatedAt string `json:"created_at"`
}

// ForkOrigin says where a forked session came from (Snapshot.ForkedFrom).
type ForkOrigin struct {
	ParentSessionID string `json:"parent_session_id"`
	AtSequence      int64  `json:"at_sequence"`
}

// Active step search modes: whether a session upserts the ActiveStepTypes
// search attribute, fixed when it starts. ActiveStepSearchTypes (the Go
// client's default) makes it searchable by the Steps it waits in, when the
// worker's namespace has the attribute; ActiveStepSearchDisabled, or no
// mode at all, never upserts it.
const (
	ActiveStepSearchTypes    = "active_step_types"
	ActiveStepSearchDisabled = "disabled"
)

// CheckActiveStepSearchMode returns an error naming an unknown mode.
func CheckActiveStepSearchMode(mode string) error {
	switch mode {
	case "", ActiveStepSearchTypes, ActiveStepSearchDisabled:
		return nil
	}
	return fmt.Errorf("active_step_search_mode %q: want %q or %q", mode, ActiveStepSearchTypes, ActiveStepSearchDisabled)
}

// SendUserMessageRequest is the input of send_user_message. A text over
// MaxInlineMessageBytes is sent by reference: store it in the session's
// message store first (the HTTP API does) and set TextRef, with Text
// holding its beginning for display.
type SendUserMessageRequest struct {
	Text    string `json:"text"`
	TextRef string `json:"text_ref,omitempty"`
	// PlanMode starts a planning turn: the model may only write the plan
	// (write_todos), which the user reviews and runs with execute_plan.
	// Refused (false) when the agent's plan mode is off.
	PlanMode bool `json:"plan_mode,omitempty"`
	// Mode says what happens when a turn runs or messages wait (see the
	// SendMode constants); "" is SendModeQueue.
	Mode string `json:"mode,omitempty"`
}

// Send modes of send_user_message, beyond the spec, as people know them
// from LangGraph's double-texting and the Claude Agent SDK.
const (
	// SendModeQueue (the default) queues the message: it starts a turn
	// once the running turn and the messages before it are done.
	SendModeQueue = "queue"
	// SendModeSteer steers the running turn with the message, as
	// steer_user_message with text does; while no turn runs it queues.
	SendModeSteer = "steer"
	// SendModeInterrupt cancels the running turn, as cancel_turn does, and
	// starts the next turn with the message, before anything queued.
	SendModeInterrupt = "interrupt"
	// SendModeRejectIfBusy takes the message only when no turn runs and
	// nothing waits; else send_user_message is false.
	SendModeRejectIfBusy = "reject_if_busy"
)

// CheckSendMode returns an error naming an unknown send mode.
func CheckSendMode(mode string) error {
	switch mode {
	case "", SendModeQueue, SendModeSteer, SendModeInterrupt, SendModeRejectIfBusy:
		return nil
	}
	return fmt.Errorf("send mode %q: want %q, %q, %q or %q", mode, SendModeQueue, SendModeSteer, SendModeInterrupt, SendModeRejectIfBusy)
}

// SteerUserMessageRequest is the input of steer_user_message: exactly one
// of MessageID (a message of Snapshot.QueuedMessages) and Text (new text;
// TextRef for one sent by reference, as in SendUserMessageRequest).
type SteerUserMessageRequest struct {
	MessageID string `json:"message_id,omitempty"`
	Text      string `json:"text,omitempty"`
	TextRef   string `json:"text_ref,omitempty"`
	PlanMode  bool   `json:"plan_mode,omitempty"`
}

// DeleteQueuedMessageRequest is the input of delete_queued_message.
type DeleteQueuedMessageRequest struct {
	MessageID string `json:"message_id"`
}

// CancelTurnRequest is the input of cancel_turn: the turn to stop
// (SessionState.ActiveTurnID).
type CancelTurnRequest struct {
	TurnID string `json:"turn_id"`
}

// CloseSessionRequest is the input of close_session.
type CloseSessionRequest struct{}

// SessionMetadataRequest sets a session's title, its archived flag, or
// both (a nil field is left as it is). The title is cut as TitleOf cuts a
// first message; a blank one is refused.
type SessionMetadataRequest struct {
	Title    *string `json:"title,omitempty"`
	Archived *bool   `json:"archived,omitempty"`
}

// CheckSessionMetadata refuses a request that sets nothing or a blank
// title.
func CheckSessionMetadata(req SessionMetadataRequest) error {
	switch {
	case req.Title == nil && req.Archived == nil:
		return errors.New("set a title, archived, or both")
	case req.Title != nil && TitleOf(*req.Title) == "":
		return errors.New("the title is blank")
	}
	return nil
}

// SessionClosedReason is the error of a request a closed session refuses
// (SessionClosedErrorType).
const SessionClosedReason = "session_closed: the session was closed and takes no new messages"

// ExecutePlanRequest is the input of execute_plan: the plan revision the
// user approved.
type ExecutePlanRequest struct {
	Revision int `json:"revision"`
}

// Interaction modes of a turn (SessionState.InteractionMode).
const (
	InteractionChat      = "chat"
	InteractionPlanning  = "planning"
	InteractionExecuting = "executing"
)

// MaxInlineMessageBytes bounds the text of a send_user_message sent
// inline; MaxMessageBytes bounds one message sent by reference.
const (
	MaxInlineMessageBytes = 64 << 10
	MaxMessageBytes       = 8 << 20
)

// PreviewBytes bounds a text a session keeps in its own state (a window
// message, a tool call's arguments or output): a longer one is in the
// message store, and the session keeps its first PreviewBytes.
const PreviewBytes = 2 << 10

// ResolveInterruptRequest is the input of resolve_interrupt.
type ResolveInterruptRequest struct {
	InterruptID      string `json:"interrupt_id"`
	Approved         bool   `json:"approved"`
	RejectionMessage string `json:"rejection_message,omitempty"`
	// Digest is the approval's Interrupt.Digest as shown to the user. When
	// set, the session refuses the request unless it matches the call it
	// waits on (ApprovalDigestErrorType); workers that require digests
	// refuse approvals without one.
	Digest string `json:"digest,omitempty"`
	// SessionID, when set to another session than the one asked, names
	// the sub-agent that raised the interrupt (Interrupt.SessionID): the
	// client routes the request there once the session asked lists it.
	SessionID string `json:"session_id,omitempty"`
	// ResolvedVia and ResolvedBy say how and by whom the answer came
	// ("http", "web", "link:ops-mail", and the token's name or a
	// recipient's address), recorded in interrupt_resolved and on the
	// call. At most MaxResolvedByBytes each; longer is cut.
	ResolvedVia string `json:"resolved_via,omitempty"`
	ResolvedBy  string `json:"resolved_by,omitempty"`
}

// MaxResolvedByBytes bounds ResolvedVia and ResolvedBy.
const MaxResolvedByBytes = 256

// ExtendInterruptRequest is the input of extend_interrupt.
type ExtendInterruptRequest struct {
	InterruptID     string `json:"interrupt_id"`
	ExtendBySeconds int64  `json:"extend_by_seconds"`
	// SessionID is ResolveInterruptRequest's.
	SessionID string `json:"session_id,omitempty"`
}

// ExtendInterruptResult is the answer of extend_interrupt: Extended is
// false for an interrupt that is not pending; Deadline is the new one.
// A request the agent's limits refuse (no deadline, no
// max_interrupt_deadline, past it) fails with InterruptNotExtendedErrorType.
type ExtendInterruptResult struct {
	Extended bool   `json:"extended"`
	Deadline string `json:"deadline,omitempty"`
}

// Page sizes of stored messages: list_agent_messages clamps a limit to
// 1..MaxMessagesPageSize (0 reads 1, as the reference says); the Go client
// and the HTTP API read DefaultMessagesPageSize when no limit is given.
const (
	DefaultMessagesPageSize = 50
	MaxMessagesPageSize     = 200
)

// ListMessagesRequest is the input of list_agent_messages. A zero
// BeforeSequence asks for the newest page.
type ListMessagesRequest struct {
	BeforeSequence int64 `json:"before_sequence,omitempty"`
	Limit          int   `json:"limit,omitempty"`
}

// Message is a stored message as a snapshot or a page shows it. In the
// workflow's own answers (get_agent_snapshot, list_agent_messages), the text
// of a long message is cut to its beginning and TextTruncated is set; the
// HTTP API and the message store serve it whole.
type Message struct {
	Sequence   int64          `json:"sequence"`
	Role       Role           `json:"role"`
	Text       string         `json:"text"`
	Item       string         `json:"framework_item,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	ToolName   string         `json:"tool_name,omitempty"`
	TurnID     string         `json:"turn_id,omitempty"`
	ToolStatus ToolCallStatus `json:"tool_status,omitempty"`
	// TextTruncated says Text is the beginning of a longer message.
	TextTruncated bool `json:"text_truncated,omitempty"`
}

// MessagesPage is one page of stored messages, oldest first.
type MessagesPage struct {
	Messages []Message `json:"messages"`
	// FirstSequence is the oldest stored sequence (0 when none is stored).
	FirstSequence int64 `json:"first_sequence"`
	// DeletedBeforeSequence is set once retention deleted the messages
	// before it.
	DeletedBeforeSequence int64 `json:"deleted_before_sequence,omitempty"`
	// WindowFirstSequence is where the window the workflow holds begins,
	// in a session that keeps its messages in the message store: the
	// workflow's own answer pages only the window, and older messages are
	// read from the store (AgentSessionClient.WithMessages, the HTTP API).
	WindowFirstSequence int64 `json:"window_first_sequence,omitempty"`
	// HasMore reports older messages before this page; pass
	// NextBeforeSequence as before_sequence to read them.
	HasMore            bool  `json:"has_more"`
	NextBeforeSequence int64 `json:"next_before_sequence,omitempty"`
}

// Session statuses.
const (
	StatusWaitingForUserMessage = "waiting_for_user_message"
	StatusRunningModel          = "running_model"
	StatusRunningTools          = "running_tools"
	StatusCompactingContext     = "compacting_context"
	// StatusClosed is a session close_session closed, once nothing is
	// left to run.
	StatusClosed = "closed"
)

// SessionState is the session's position.
type SessionState struct {
	Status        string `json:"status"`
	ActiveTurnID  string `json:"active_turn_id,omitempty"`
	LastTurnError string `json:"last_turn_error,omitempty"`
	TurnCount     int    `json:"turn_count"`
	// InteractionMode is the active turn's: chat, planning (plan mode:
	// only write_todos) or executing (an approved plan runs).
	InteractionMode string `json:"interaction_mode"`
	// AcceptsTurnControl says steer_user_message and cancel_turn can act
	// on the session's turns.
	AcceptsTurnControl bool `json:"accepts_turn_control"`
	// TurnControl is the active turn's stop request: "", "steered" or
	// "turn_cancelled".
	TurnControl string `json:"turn_control,omitempty"`
	// Closed says close_session closed the session: it takes no new
	// messages.
	Closed bool `json:"closed,omitempty"`
}

// Interrupt is a pending interrupt that resolve_interrupt can answer.
type Interrupt struct {
	InterruptID string `json:"interrupt_id"`
	ToolCallID  string `json:"tool_call_id"`
	ToolName    string `json:"tool_name"`
	Arguments   string `json:"arguments,omitempty"`
	// Kind is "approval".
	Kind string `json:"kind"`
	// Deadline is an RFC 3339 UTC time, or empty without a deadline.
	Deadline string `json:"deadline,omitempty"`
	// Digest binds an approval to its call, tool and arguments; send it
	// back in ResolveInterruptRequest.Digest. Empty when the worker has no
	// approval_digest key, and for questions.
	Digest string `json:"digest,omitempty"`
	// Question, Choices and AllowsFreeText are set for a question: answer
	// it with answer_question (one of Choices, or any text when
	// AllowsFreeText), or decline it with resolve_interrupt(approved=false).
	Question       string   `json:"question,omitempty"`
	Choices        []string `json:"choices,omitempty"`
	AllowsFreeText bool     `json:"allows_free_text,omitempty"`
	// ApprovalText is the approval as the action it approves, from the
	// tool's approval_text in the worker's config and the call's arguments
	// ("Refund $77.50 on order 9"). The HTTP API fills it for people; the
	// session never does, and it is empty without a template or when the
	// arguments do not fit one.
	ApprovalText string `json:"approval_text,omitempty"`
	// SessionID is set on an interrupt a sub-agent raised: the child
	// session that waits, where it is resolved (the client and the HTTP
	// API route a resolve through the parent there). Path is the chain of
	// sessions from this one down to that child.
	SessionID string   `json:"session_id,omitempty"`
	Path      []string `json:"path,omitempty"`
	// Agent is the agent of the sub-agent session that holds it.
	Agent string `json:"agent,omitempty"`
}

// Interrupt kinds.
const (
	InterruptKindApproval = "approval"
	InterruptKindQuestion = "question"
)

// AnswerQuestionRequest is the input of answer_question.
type AnswerQuestionRequest struct {
	InterruptID string `json:"interrupt_id"`
	Answer      string `json:"answer"`
	// SessionID, ResolvedVia and ResolvedBy are ResolveInterruptRequest's.
	SessionID   string `json:"session_id,omitempty"`
	ResolvedVia string `json:"resolved_via,omitempty"`
	ResolvedBy  string `json:"resolved_by,omitempty"`
}

// QueuedMessage is a user message waiting for its turn.
type QueuedMessage struct {
	MessageID string `json:"message_id"`
	// Text is the message, or its beginning when TextRef is set.
	Text    string `json:"text"`
	TextRef string `json:"text_ref,omitempty"`
	// PlanMode says the message starts a planning turn.
	PlanMode bool `json:"plan_mode,omitempty"`
}

// Snapshot is what get_agent_snapshot returns: everything a UI renders.
type Snapshot struct {
	SessionID         string          `json:"session_id"`
	Agent             string          `json:"agent"`
	State             *SessionState   `json:"state"`
	Messages          []Message       `json:"messages"`
	PendingInterrupts []Interrupt     `json:"pending_interrupts"`
	ToolCalls         []ToolCall      `json:"tool_calls"`
	Usage             Usage           `json:"usage"`
	QueuedMessages    []QueuedMessage `json:"queued_messages"`
	QueuedCount       int             `json:"queued_message_count"`
	// SteeredMessages are the steered messages not applied yet: the next
	// turn starts with them, in order.
	SteeredMessages []QueuedMessage `json:"steered_messages"`
	// SessionSettings are the settings the next turn starts with ({} for
	// none); the running turn may still use the ones it started with.
	SessionSettings json.RawMessage `json:"session_settings"`
	// ContextSummary is the session's context summary, once compaction
	// recorded one: the model sees it instead of the messages it covers.
	ContextSummary *ContextSummary `json:"context_summary,omitempty"`
	// Spend is what the session's model calls cost and what its spend
	// limits leave, when the worker prices calls or limits spend.
	Spend *SpendStatus `json:"spend,omitempty"`
	// Plan is the session's plan (write_todos), once one was written.
	Plan *Plan `json:"plan,omitempty"`
	// WindowFirstSequence is set when Messages are only the session's
	// window: the workflow's own answer, in a session whose older messages
	// live in the message store, begins its messages there. A reader of
	// the store (package client with WithMessages, the HTTP API, the CLI)
	// fills in the older of the newest SnapshotMessageLimit messages and
	// leaves it unset.
	WindowFirstSequence int64 `json:"window_first_sequence,omitempty"`
	// ForkedFrom is set on a fork: its parent and fork point.
	ForkedFrom *ForkOrigin `json:"forked_from,omitempty"`
	// SubAgent is set on a sub-agent's session: its parent and call.
	SubAgent *SubAgentOrigin `json:"sub_agent,omitempty"`
	// SubAgents are the child sessions the running turn waits on.
	SubAgents []SubAgentChild `json:"sub_agents,omitempty"`
}

// SubAgentChild is a child session in its parent's snapshot.
type SubAgentChild struct {
	SessionID  string `json:"session_id"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Mode       string `json:"mode"`
}

// SnapshotMessageLimit is how many of the newest stored messages a
// snapshot holds.
const SnapshotMessageLimit = 200

// Spend counts model calls, tokens and cost (in millionths of a US
// dollar). As what a budget leaves, -1 means the counter has no bound.
type Spend struct {
	ModelCalls   int64 `json:"model_calls"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CostMicros   int64 `json:"cost_micros"`
}

// SpendStatus is a session's spend: what it used (cost included, counted
// with the worker's price table) and, as of its last model call, what its
// budgets left.
type SpendStatus struct {
	CostMicros int64 `json:"cost_micros"`
	// Left holds the budgets the worker enforced at the session's last
	// model call; nil when none applies.
	Left *SpendLeft `json:"left,omitempty"`
	// Refused is the limit that stopped the last model call, until a call
	// runs again.
	Refused *SpendRefusal `json:"refused,omitempty"`
	// SubAgents is what the session's sub-agents used, as they reported
	// it; it counts against the session's limits too.
	SubAgents *Spend `json:"sub_agents,omitempty"`
}

// SpendLeft is what each budget left after a model call; nil for a budget
// the config does not set.
type SpendLeft struct {
	Session      *Spend `json:"session,omitempty"`
	Day          *Spend `json:"day,omitempty"`
	TokenSession *Spend `json:"token_session,omitempty"`
	TokenDay     *Spend `json:"token_day,omitempty"`
	// AsOf is when the Step counted them (RFC 3339).
	AsOf string `json:"as_of"`
}

// SpendLimitErrorPrefix starts the last_turn_error of a turn that a spend
// limit stopped.
const SpendLimitErrorPrefix = "spend limit reached: "

// ContextSummary describes a session's context summary. Text is its
// beginning when TextTruncated is set.
type ContextSummary struct {
	Generation    int    `json:"generation"`
	FirstSequence int64  `json:"first_sequence"`
	LastSequence  int64  `json:"last_sequence"`
	Text          string `json:"text"`
	TextTruncated bool   `json:"text_truncated,omitempty"`
	CreatedAt     string `json:"created_at"`
}
