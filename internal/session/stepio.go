package session

import (
	"strings"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Inputs and outputs of the session's activities. They travel as plain JSON
// through the engine's history, so none of them grows with the session: in
// a session whose messages live in the message store, a Step gets sequence
// ranges and references, loads what it needs from the store, and returns
// short previews.

// PreviewBytes bounds a text the workflow keeps in its own state (a window
// message, a tool call's arguments or output, a run state): a longer one is
// kept in the message store and the workflow keeps its first PreviewBytes.
const PreviewBytes = wire.PreviewBytes

// MaxInlineMessageBytes bounds a user message sent in send_user_message
// itself. A client sends a longer one (up to MaxStoredMessageBytes) by
// storing it first and sending its reference, as the HTTP API does.
const MaxInlineMessageBytes = 64 << 10

// MaxStoredMessageBytes is the hard cap on one message (its encoding).
const MaxStoredMessageBytes = 8 << 20

// StoreWork is what a Step that stores messages does in the message store
// besides its own work, in this order: delete the window rows that
// committed chunks hold, move the oldest committed window rows into the
// planned chunks, delete whole chunks before RetainFrom, then write its own
// messages as window rows from NextSequence on, fenced by Gen. Every part
// is idempotent, so a retried attempt does it again harmlessly.
type StoreWork struct {
	// Gen fences the Step's writes: it grows with every Step the session
	// schedules that stores messages.
	Gen int64 `json:"gen"`
	// NextSequence is the sequence of the Step's first message.
	NextSequence int64 `json:"next_sequence"`
	// DeleteThrough deletes window rows with sequences <= it (0: none).
	DeleteThrough int64 `json:"delete_through,omitempty"`
	// Roll lists the chunks to cut from committed window rows, in order.
	Roll []ChunkPlan `json:"roll,omitempty"`
	// RetainFrom deletes the chunks whose messages all precede it (0: none).
	RetainFrom int64 `json:"retain_from,omitempty"`
	// DeletedBefore is where retention cut before, so the Step lists only
	// chunks after it.
	DeletedBefore int64 `json:"deleted_before,omitempty"`
	// Sweep deletes the session's blobs that are not in SweepKeep (the
	// references the session still holds), sparing recent ones.
	Sweep     bool     `json:"sweep,omitempty"`
	SweepKeep []string `json:"sweep_keep,omitempty"`
}

// ChunkPlan is one chunk to cut: the window rows First..Last.
type ChunkPlan struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// StoreResult is what a Step that stores messages did in the store.
type StoreResult struct {
	// Messages are the Step's own messages, as the window keeps them.
	Messages []Entry `json:"messages,omitempty"`
	// Chunks are the chunks it wrote, as StoreWork.Roll planned them.
	Chunks []ChunkPlan `json:"chunks,omitempty"`
	// DeletedBefore is the first sequence still stored after retention
	// (0: retention deleted nothing).
	DeletedBefore int64 `json:"deleted_before,omitempty"`
}

// Entry is a message as the session's window keeps it: the stored message
// without its framework item, with its text cut to PreviewBytes, and the
// size of its stored encoding.
type Entry struct {
	contract.Message
	// Bytes is the size of the stored message's encoding.
	Bytes int64 `json:"bytes"`
	// Truncated reports that Text holds only the first PreviewBytes.
	Truncated bool `json:"truncated,omitempty"`
}

// Transcript says where a Step finds the session's messages in the store:
// chunks for [From, WindowFirst-1] and window rows for [WindowFirst, Last].
type Transcript struct {
	From        int64 `json:"from"`
	WindowFirst int64 `json:"window_first"`
	Last        int64 `json:"last"`
}

// BuildUserMessageInput is the input of the BuildUserMessage local activity.
type BuildUserMessageInput struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id,omitempty"`
	TurnID    string `json:"turn_id"`
	// Text is the user's text, or its preview when TextRef is set.
	Text string `json:"text"`
	// TextRef is the message store reference of a text sent by reference.
	TextRef string `json:"text_ref,omitempty"`
	// Store is set when the session keeps its messages in the store.
	Store *StoreWork `json:"store,omitempty"`
}

// BuildUserMessageOutput is the result of the BuildUserMessage local activity.
type BuildUserMessageOutput struct {
	// Message is the built message, in a session without the store.
	Message contract.FrameworkMessage `json:"message"`
	// Stored is what the Step stored, in a session with the store.
	Stored  *StoreResult `json:"stored,omitempty"`
	Attempt int          `json:"attempt,omitempty"`
}

// TurnInput is the committed turn state a runner sees; RunModel's input.
type TurnInput struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	// Messages holds every message, in a session without the store.
	Messages []contract.Message `json:"messages"`
	// Transcript locates the messages in the store, in a session with it.
	Transcript *Transcript `json:"transcript,omitempty"`
	// RunState is the framework run state, or its preview when RunStateRef
	// is set.
	RunState    string `json:"run_state,omitempty"`
	RunStateRef string `json:"run_state_ref,omitempty"`
	// ToolCalls are the turn's records; their large arguments and outputs
	// travel by reference (Refs).
	ToolCalls []wire.ToolCall    `json:"tool_calls,omitempty"`
	Refs      []RecordRefs       `json:"refs,omitempty"`
	Policies  contract.PolicySet `json:"policies"`
	// Store is set when the session keeps its messages in the store.
	Store *StoreWork `json:"store,omitempty"`
	// Settings are the turn's session settings, compact JSON of one object
	// ("" for none).
	Settings string `json:"session_settings,omitempty"`
	// Compaction is the session's compaction policy; the Step checks the
	// threshold before its model call. Summary is the current summary,
	// which the transcript starts after.
	Compaction *CompactionPolicy `json:"compaction,omitempty"`
	Summary    *Summary          `json:"context_summary,omitempty"`
	// Spend is what the session and the turn used, for the spend limits
	// the Step checks before its model call.
	Spend SpendInput `json:"spend"`
	// HostTools are the tools the session runs itself (the enabled
	// built-ins), offered to the runner.
	HostTools []contract.ToolDefinition `json:"host_tools,omitempty"`
	// Plan is the session's plan, which the runner shows the model.
	Plan *wire.Plan `json:"plan,omitempty"`
	// Mode is the turn's interaction mode (chat, planning, executing).
	Mode string `json:"interaction_mode,omitempty"`
	// RunnerPolicies says how the session decides the policy of a call of
	// the runner's own tool: RunnerPoliciesTrusted or
	// RunnerPoliciesUntrusted in sessions of RunnerPoliciesVersion, ""
	// in older ones (see Authorize).
	RunnerPolicies string `json:"runner_policies,omitempty"`
	// Streams are the sessions above a sub-agent, whose event streams get
	// the Step's events too.
	Streams []string `json:"streams,omitempty"`
}

// The values of TurnInput.RunnerPolicies.
const (
	RunnerPoliciesTrusted   = "trusted"
	RunnerPoliciesUntrusted = "untrusted"
)

// Authorize returns the policy the session records for a call of the
// turn, as the RunModel Step needs it before the session does (approval
// rules see the call's effect): annotated is the effect of an MCP tool's
// annotations, host is set for a call the worker runs itself.
func (in TurnInput) Authorize(tool string, host bool, annotated contract.Effect, claim contract.ToolPolicy) contract.ToolPolicy {
	switch {
	case host:
		return AuthorizeHostPolicy(in.Policies, tool, annotated, claim)
	case in.RunnerPolicies == RunnerPoliciesTrusted || in.RunnerPolicies == RunnerPoliciesUntrusted:
		return AuthorizeRunnerPolicy(in.Policies, tool, claim, in.RunnerPolicies == RunnerPoliciesTrusted)
	}
	return AuthorizePolicy(in.Policies, tool, claim)
}

// SpendInput is what a model call's Step needs for the spend limits.
type SpendInput struct {
	// APIToken names the API token that started the session.
	APIToken string     `json:"api_token,omitempty"`
	Session  wire.Spend `json:"session"`
	Turn     wire.Spend `json:"turn"`
	// Parent is set for a sub-agent: the budget above it, which its
	// calls count against with Used plus Session.
	Parent *wire.ParentBudget `json:"parent,omitempty"`
}

// StepSpend is what a model call's Step says about spend: the limit that
// refused the call (no call was made), or what the call cost and what the
// budgets left after it.
type StepSpend struct {
	Refused    *wire.SpendRefusal `json:"refused,omitempty"`
	CostMicros int64              `json:"cost_micros,omitempty"`
	Left       *wire.SpendLeft    `json:"left,omitempty"`
}

// CompactInput is the input of CompactContext: summarize the messages
// after the turn's current summary through Through.
type CompactInput struct {
	Turn    TurnInput `json:"turn"`
	Through int64     `json:"through_sequence"`
}

// CompactOutcome is CompactContext's result: the new summary (its
// beginning, and the store reference of a longer text) and the usage of
// the summary call.
type CompactOutcome struct {
	Text    string         `json:"text"`
	TextRef string         `json:"text_ref,omitempty"`
	Usage   contract.Usage `json:"usage"`
	Attempt int            `json:"attempt,omitempty"`
	Spend   *StepSpend     `json:"spend,omitempty"`
}

// RecordRefs are the message store references of a tool call record's
// large fields.
type RecordRefs struct {
	ToolCallID   string `json:"tool_call_id"`
	ArgumentsRef string `json:"arguments_ref,omitempty"`
	OutputRef    string `json:"output_ref,omitempty"`
}

// ToolInput is the input of CallTool and CallSingleAttemptTool.
type ToolInput struct {
	Agent          string        `json:"agent"`
	SessionID      string        `json:"session_id"`
	TurnID         string        `json:"turn_id"`
	ToolCall       wire.ToolCall `json:"tool_call"`
	IdempotencyKey string        `json:"idempotency_key"`
	// ArgumentsRef is the reference of arguments longer than PreviewBytes
	// (ToolCall.Arguments then holds their preview).
	ArgumentsRef string `json:"arguments_ref,omitempty"`
	// StoreOutput asks the Step to store an output longer than
	// PreviewBytes and return its reference.
	StoreOutput bool `json:"store_output,omitempty"`
	// HostSource, when set, is the MCP tool ("mcp:<server>/<tool>") the
	// Step calls instead of the runner.
	HostSource string `json:"host_source,omitempty"`
	// Streams are TurnInput's.
	Streams []string `json:"streams,omitempty"`
}

// PollInput is the input of a PollToolTask Step: the call's record (with
// its task ID, continuation and the pending answer to hand over).
// TaskCancelOutcome is the result of a CancelToolTask Step: Cancelled says
// the runner was asked to cancel (it implements ToolTaskCanceller).
type TaskCancelOutcome struct {
	Attempt   int  `json:"attempt"`
	Cancelled bool `json:"cancelled"`
}

type PollInput struct {
	Agent     string        `json:"agent"`
	SessionID string        `json:"session_id"`
	TurnID    string        `json:"turn_id"`
	ToolCall  wire.ToolCall `json:"tool_call"`
	// StoreOutput asks the Step to store an output longer than
	// PreviewBytes and return its reference.
	StoreOutput bool `json:"store_output,omitempty"`
	// HostSource, when set, is the MCP tool whose task the Step polls
	// (or cancels) on its server instead of through the runner.
	HostSource string `json:"host_source,omitempty"`
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

// TurnFailureInput is the input of the RecordTurnFailure local activity.
type TurnFailureInput struct {
	Turn TurnInput `json:"turn"`
	// Note is the turn-failure note, or "" when no tool call ran.
	Note string `json:"note,omitempty"`
	// NoteOnlyWithoutUnfinished stores the note only when the runner
	// built no unfinished-turn messages: ApplyTurnControl ends a steered
	// or cancelled turn with those messages or the note (the spec's "or"),
	// where a failed turn gets both.
	NoteOnlyWithoutUnfinished bool `json:"note_only_without_unfinished,omitempty"`
	// UserText (or UserTextRef) is the text of a user message that could
	// not be built: with the store, the Step stores it first, as a plain
	// user message.
	UserText    string `json:"user_text,omitempty"`
	UserTextRef string `json:"user_text_ref,omitempty"`
}

// TurnFailureOutput holds the messages RecordTurnFailure stores.
type TurnFailureOutput struct {
	// Messages are the messages, in a session without the store.
	Messages []contract.FrameworkMessage `json:"messages"`
	// Stored is what the Step stored, in a session with the store.
	Stored  *StoreResult `json:"stored,omitempty"`
	Attempt int          `json:"attempt,omitempty"`
}

// preview returns the beginning of text the workflow keeps in its state:
// at most PreviewBytes, cut at a character boundary.
func preview(text string) string { return cutUTF8(text, PreviewBytes) }

// cutUTF8 cuts s to at most n bytes, at a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// validRef reports whether ref looks like a message store reference
// ("sha256:" and 64 hex digits).
func validRef(ref string) bool {
	hexPart, ok := strings.CutPrefix(ref, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	for _, c := range hexPart {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
