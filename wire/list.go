package wire

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// What a session can wait for, as a list's waiting_for and
// SessionSummary.WaitingFor name it; each is one Step of the
// ActiveStepTypes search attribute (see WaitingForStep).
const (
	WaitingForApproval = "approval" // AwaitToolApproval: a tool call waits for approval
	WaitingForQuestion = "question" // AwaitQuestionAnswer: a question (ask_user, a tool's input request) waits for an answer
	WaitingForTimer    = "timer"    // AwaitTimer: a durable wait runs
	WaitingForTask     = "task"     // PollToolTask: a tool task is polled until it finishes
	WaitingForUser     = "user"     // AwaitUserMessage: the session waits for the next user message
)

// waitingSteps maps each waiting kind to its Step, in the order kinds are
// listed.
var waitingSteps = []struct{ kind, step string }{
	{WaitingForApproval, StepAwaitToolApproval},
	{WaitingForQuestion, StepAwaitQuestionAnswer},
	{WaitingForTimer, StepAwaitTimer},
	{WaitingForTask, StepPollToolTask},
	{WaitingForUser, StepAwaitUserMessage},
}

// WaitingForKinds lists the kinds a session list takes, in a fixed order.
func WaitingForKinds() []string {
	out := make([]string, len(waitingSteps))
	for i, w := range waitingSteps {
		out[i] = w.kind
	}
	return out
}

// WaitingForStep returns the Step a waiting kind stands for.
func WaitingForStep(kind string) (string, bool) {
	for _, w := range waitingSteps {
		if w.kind == kind {
			return w.step, true
		}
	}
	return "", false
}

// ParseWaitingFor parses a comma-separated list of waiting kinds such as
// "approval,question" (blanks around the commas are ignored; a kind named
// twice counts once). An empty list is nil; an unknown or empty item is an
// error that names it and the kinds allowed.
func ParseWaitingFor(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []string
	for _, item := range strings.Split(list, ",") {
		kind := strings.TrimSpace(item)
		if _, ok := WaitingForStep(kind); !ok {
			return nil, fmt.Errorf("waiting_for %q: want one or more of %s, separated by commas", kind, strings.Join(WaitingForKinds(), ", "))
		}
		if !slices.Contains(out, kind) {
			out = append(out, kind)
		}
	}
	return out, nil
}

// Session list statuses (ListSessionsOptions.Status).
const (
	// ListRunning lists running sessions only (the default).
	ListRunning = "running"
	// ListAll lists closed sessions too: each session once, by its newest
	// run (a run that continued as new is not listed).
	ListAll = "all"
)

// Page sizes of ListSessions.
const (
	DefaultListPageSize = 50
	MaxListPageSize     = 100
	// MaxPageTokenLength bounds a page token (base64url text).
	MaxPageTokenLength = 8192
)

// SessionSummary is one session of a list.
type SessionSummary struct {
	SessionID string `json:"session_id"`
	// Title is the session's title: the first line of its first message
	// (the memo MemoTitle the starting client sets), or empty.
	Title string `json:"title,omitempty"`
	// Archived says a person archived the session (set_session_metadata).
	Archived bool `json:"archived,omitempty"`
	// ParentSessionID is set on a sub-agent's session (MemoParent): lists
	// for people show its parent instead.
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// Agent is the agent's name when the caller knows its flow types (the
	// HTTP API and the CLI with a worker config fill it); ListSessions
	// leaves it empty.
	Agent    string `json:"agent,omitempty"`
	FlowType string `json:"flow_type"`
	// WaitingFor are the kinds (WaitingForApproval...) the session waits
	// for, in WaitingForKinds order; empty for a closed session.
	WaitingFor []string `json:"waiting_for"`
	// ActiveStepTypes is the session's ActiveStepTypes search attribute:
	// every Step it waits in or runs (RunModel, CallTool...); empty for a
	// closed session.
	ActiveStepTypes []string `json:"active_step_types"`
	// Status is the run's status in lower case: running, completed,
	// failed, canceled, terminated, timed_out.
	Status string `json:"status"`
	// StartedAt is when the session's current run started (a session that
	// continued as new shows its newest run's start).
	StartedAt time.Time `json:"started_at"`
	// ClosedAt is when a closed session ended.
	ClosedAt *time.Time `json:"closed_at,omitempty"`
	RunID    string     `json:"run_id"`
	// Pending are what a waiting session asks of a person, with
	// include=pending (GET /v1/sessions): its pending interrupts.
	Pending []PendingSummary `json:"pending,omitempty"`
}

// MemoTitle is the memo key of a session's title, which the client that
// starts the session sets from its initial message (see TitleOf).
const MemoTitle = "dex_title"

// MemoArchived is the memo key of a session's archived flag (a bool):
// lists hide an archived session unless asked.
const MemoArchived = "dex_archived"

// MemoParent is the memo key of a sub-agent session's parent session ID:
// lists show the parent, which lists what the child waits on.
const MemoParent = "dex_parent"

// MaxTitleRunes bounds a title.
const MaxTitleRunes = 80

// TitleOf is a session's title from its first message: the first non-blank
// line, with runs of spaces as one, at most MaxTitleRunes ("…" ends a cut
// one); "" for a blank message.
func TitleOf(message string) string {
	for _, line := range strings.Split(message, "\n") {
		t := strings.Join(strings.Fields(line), " ")
		if t == "" {
			continue
		}
		if r := []rune(t); len(r) > MaxTitleRunes {
			t = strings.TrimSpace(string(r[:MaxTitleRunes-1])) + "…"
		}
		return t
	}
	return ""
}

// PendingSummary is one pending interrupt of a listed session: an approval
// (with its approval text when the tool has one) or a question.
type PendingSummary struct {
	InterruptID  string `json:"interrupt_id"`
	Kind         string `json:"kind"`
	ToolName     string `json:"tool_name"`
	ApprovalText string `json:"approval_text,omitempty"`
	Question     string `json:"question,omitempty"`
	Deadline     string `json:"deadline,omitempty"`
	// Choices are a question's; Digest an approval's (send it back);
	// HolderSessionID the sub-agent that holds it (send it as
	// session_id).
	Choices         []string `json:"choices,omitempty"`
	Digest          string   `json:"digest,omitempty"`
	HolderSessionID string   `json:"holder_session_id,omitempty"`
}

// InboxItem is one approval or question a person may answer (GET
// /v1/inbox): the session to answer it through, and the interrupt.
type InboxItem struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title,omitempty"`
	Agent     string `json:"agent"`
	// HolderSessionID is the sub-agent session that holds it, when it is
	// a child's (send it as session_id when answering).
	HolderSessionID string   `json:"holder_session_id,omitempty"`
	InterruptID     string   `json:"interrupt_id"`
	Kind            string   `json:"kind"`
	ToolCallID      string   `json:"tool_call_id"`
	ToolName        string   `json:"tool_name"`
	ApprovalText    string   `json:"approval_text,omitempty"`
	Arguments       string   `json:"arguments,omitempty"`
	Question        string   `json:"question,omitempty"`
	Choices         []string `json:"choices,omitempty"`
	AllowsFreeText  bool     `json:"allows_free_text,omitempty"`
	Deadline        string   `json:"deadline,omitempty"`
	// Digest binds an approval to this call; send it back.
	Digest string `json:"digest,omitempty"`
}

// InboxPage is one page of GET /v1/inbox: the pending interrupts of up to
// page_size sessions, newest session first.
type InboxPage struct {
	Items         []InboxItem `json:"items"`
	NextPageToken string      `json:"next_page_token,omitempty"`
}

// SessionsPage is one page of a session list (GET /v1/sessions).
type SessionsPage struct {
	Sessions []SessionSummary `json:"sessions"`
	// NextPageToken continues the list; empty on the last page. A page may
	// hold fewer sessions than the page size (even none) and still have a
	// next one.
	NextPageToken string `json:"next_page_token,omitempty"`
}

// The change feed (GET /v1/sessions/changes) tells a page that shows
// many sessions, such as a conversation list or a Needs-you count, that
// one of them changed, so it reads the list again or updates a count at
// once instead of polling. A change names the session and what happened:
// one of the event types in ChangeEventTypes, or one of the three below,
// which are not events of the session's own stream. Changes are live
// only: a reader that connects again reads the list again first.
const (
	// ChangeSessionStarted: a session began (by any client: the HTTP API,
	// the CLI, another language's Temporal client).
	ChangeSessionStarted = "session_started"
	// ChangeSessionUpdated: a session's title or archived flag changed.
	ChangeSessionUpdated = "session_updated"
	// ChangeSessionEnded: a session was closed or terminated, or failed.
	ChangeSessionEnded = "session_ended"
	// ChangeResync: the feed lost changes for this reader (it fell behind,
	// or the shared store reconnected): read the list again.
	ChangeResync = "resync"
)

// ChangeTypes lists the change types that are not event types.
var ChangeTypes = []string{ChangeSessionStarted, ChangeSessionUpdated, ChangeSessionEnded, ChangeResync}

// ChangeEventTypes are the event types that also go to the change feed:
// the ones that change what a list shows (whether a session waits for a
// person, whether a turn runs).
var ChangeEventTypes = []string{
	EventTurnStarted, EventTurnCompleted, EventTurnFailed, EventTurnCancelled,
	EventInterruptRaised, EventInterruptResolved,
}

// IsChangeEvent reports whether events of this type go to the change feed.
func IsChangeEvent(eventType string) bool { return slices.Contains(ChangeEventTypes, eventType) }

// SessionChange is one notice of the change feed. SessionID is empty for
// ChangeResync.
type SessionChange struct {
	SessionID string `json:"session_id,omitempty"`
	Type      string `json:"type"`
}
