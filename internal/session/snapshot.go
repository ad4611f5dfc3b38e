package session

import (
	"slices"

	"github.com/dex-agents/dex-agent-worker/internal/wireconv"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// SnapshotMessageLimit is how many of the newest messages a snapshot holds.
const SnapshotMessageLimit = wire.SnapshotMessageLimit

// Snapshot renders get_agent_snapshot.
func (s *State) Snapshot() wire.Snapshot {
	snap := wire.Snapshot{
		SessionID:         s.SessionID,
		Agent:             s.Options.Agent,
		Messages:          []wire.Message{},
		PendingInterrupts: []wire.Interrupt{},
		ToolCalls:         []wire.ToolCall{},
		QueuedMessages:    []wire.QueuedMessage{},
		SteeredMessages:   []wire.QueuedMessage{},
		Usage:             wireconv.Usage(s.Usage),
		QueuedCount:       len(s.Queued),
		SessionSettings:   []byte("{}"),
	}
	if s.Settings != "" {
		snap.SessionSettings = []byte(s.Settings)
	}
	snap.ContextSummary = s.snapshotSummary()
	if s.ForkedFrom != nil {
		f := *s.ForkedFrom
		snap.ForkedFrom = &f
	}
	snap.Spend = s.snapshotSpend()
	if s.Plan != nil {
		p := *s.Plan
		p.Tasks = append([]wire.PlanTask{}, p.Tasks...)
		snap.Plan = &p
	}
	if s.Started {
		snap.State = &wire.SessionState{
			Status:        s.Status,
			ActiveTurnID:  s.ActiveTurnID,
			LastTurnError: s.LastTurnError,
			TurnCount:     s.TurnCount,
			// Every wait of a turn is in this workflow's one loop, so a
			// steer or a cancel reaches any turn this worker runs.
			AcceptsTurnControl: !s.Finished(),
			TurnControl:        s.Control,
			Closed:             s.Closed,
		}
		snap.State.InteractionMode = wire.InteractionChat
		if s.ActiveTurnID != "" && s.Mode != "" {
			snap.State.InteractionMode = s.Mode
		}
	}
	msgs := s.messages()
	if len(msgs) > SnapshotMessageLimit {
		msgs = msgs[len(msgs)-SnapshotMessageLimit:]
	}
	snap.Messages = append(snap.Messages, msgs...)
	// The workflow holds only the window: say where it begins when older
	// messages are in the store, so a reader of the store fills them in.
	if s.Options.Messages.Store && len(msgs) < SnapshotMessageLimit {
		if first := s.windowFirst(); first > max(s.DeletedBefore, 1) {
			snap.WindowFirstSequence = first
		}
	}
	for _, in := range s.Interrupts {
		snap.PendingInterrupts = append(snap.PendingInterrupts, s.wireInterrupt(in))
	}
	// A sub-agent's interrupts follow the session's own: resolved in the
	// child session they name.
	snap.PendingInterrupts = append(snap.PendingInterrupts, s.childInterrupts()...)
	if s.SubAgent != nil {
		snap.SubAgent = &wire.SubAgentOrigin{
			ParentSessionID: s.SubAgent.ParentSessionID, ToolCallID: s.SubAgent.ToolCallID,
			Name: s.SubAgent.Name, Mode: s.SubAgent.Mode, Path: append(append([]string{}, s.SubAgent.Lineage...), s.SessionID),
		}
	}
	for _, c := range append(slices.Clip(s.Children), s.Background...) {
		snap.SubAgents = append(snap.SubAgents, wire.SubAgentChild{SessionID: c.SessionID, ToolCallID: c.ToolCallID, Name: c.Name, Mode: c.Mode})
	}
	snap.ToolCalls = append(snap.ToolCalls, s.ToolCalls...)
	snap.QueuedMessages = append(snap.QueuedMessages, s.Queued...)
	snap.SteeredMessages = append(snap.SteeredMessages, s.Steered...)
	snap.SteeredMessages = append(snap.SteeredMessages, s.TurnMore...)
	return snap
}

// wireInterrupt renders one of the session's own pending interrupts.
func (s *State) wireInterrupt(in Interrupt) wire.Interrupt {
	ci := wire.Interrupt{
		InterruptID: in.InterruptID, ToolCallID: in.ToolCallID, ToolName: in.ToolName,
		Kind: string(in.Kind), Deadline: formatDeadline(in.DeadlineUnixMs),
		Question: in.Question, Choices: in.Choices, AllowsFreeText: in.AllowsFreeText,
	}
	if c := s.findCall(in.ToolCallID); c >= 0 {
		ci.Arguments = s.ToolCalls[c].Arguments
	}
	return ci
}

// messages returns the messages the workflow holds: every message without
// the store, the window (previews) with it.
func (s *State) messages() []wire.Message {
	if s.Options.Messages.Store {
		out := make([]wire.Message, len(s.Window))
		for i, e := range s.Window {
			out[i] = wireconv.Message(e.Message, e.Truncated)
		}
		return out
	}
	out := make([]wire.Message, len(s.Messages))
	for i, m := range s.Messages {
		out[i] = wireconv.Message(m, false)
	}
	return out
}

// MaxPageSize bounds list_agent_messages.
const MaxPageSize = wire.MaxMessagesPageSize

// ListMessages renders list_agent_messages: up to Limit messages (clamped to
// 1..200, as the spec says: a limit of 0 or less reads 1) older than
// BeforeSequence, or the newest, oldest first. With the message store it
// pages the window only; older pages come from the store (the HTTP API,
// package client), and FirstSequence and DeletedBeforeSequence say where
// the stored messages begin.
func (s *State) ListMessages(req wire.ListMessagesRequest) wire.MessagesPage {
	limit := min(max(req.Limit, 1), MaxPageSize)
	msgs := s.messages()
	end := len(msgs)
	if req.BeforeSequence > 0 {
		end = 0
		for end < len(msgs) && msgs[end].Sequence < req.BeforeSequence {
			end++
		}
	}
	start := max(end-limit, 0)
	page := wire.MessagesPage{Messages: append([]wire.Message{}, msgs[start:end]...)}
	if len(msgs) > 0 {
		page.FirstSequence = msgs[0].Sequence
	}
	if s.Options.Messages.Store && s.NextSequence > 1 {
		page.WindowFirstSequence = s.windowFirst()
		page.FirstSequence = max(s.DeletedBefore, 1)
		if s.DeletedBefore > 1 {
			page.DeletedBeforeSequence = s.DeletedBefore
		}
	}
	// Only a page with messages points further back: an empty page before
	// the window's start (older messages live in the store, which this
	// query cannot read) ends the paging, and WindowFirstSequence says
	// where the store's part begins.
	if start < end && msgs[start].Sequence > page.FirstSequence {
		page.HasMore = true
		page.NextBeforeSequence = msgs[start].Sequence
	}
	return page
}
