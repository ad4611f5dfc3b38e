package session

import (
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// SnapshotMessageLimit is how many of the newest messages a snapshot holds.
const SnapshotMessageLimit = 200

// Snapshot renders get_agent_snapshot.
func (s *State) Snapshot() client.Snapshot {
	snap := client.Snapshot{
		SessionID:         s.SessionID,
		Agent:             s.Options.Agent,
		Messages:          []pluginapi.Message{},
		PendingInterrupts: []client.Interrupt{},
		ToolCalls:         []pluginapi.ToolCall{},
		QueuedMessages:    []client.QueuedMessage{},
		Usage:             s.Usage,
		QueuedCount:       len(s.Queued),
	}
	if s.Started {
		snap.State = &client.SessionState{
			Status:        s.Status,
			ActiveTurnID:  s.ActiveTurnID,
			LastTurnError: s.LastTurnError,
			TurnCount:     s.TurnCount,
		}
	}
	msgs := s.Messages
	if len(msgs) > SnapshotMessageLimit {
		msgs = msgs[len(msgs)-SnapshotMessageLimit:]
	}
	snap.Messages = append(snap.Messages, msgs...)
	for _, in := range s.Interrupts {
		ci := client.Interrupt{
			InterruptID: in.InterruptID, ToolCallID: in.ToolCallID, ToolName: in.ToolName,
			Kind: string(in.Kind), Deadline: formatDeadline(in.DeadlineUnixMs),
		}
		if c := s.findCall(in.ToolCallID); c >= 0 {
			ci.Arguments = s.ToolCalls[c].Arguments
		}
		snap.PendingInterrupts = append(snap.PendingInterrupts, ci)
	}
	snap.ToolCalls = append(snap.ToolCalls, s.ToolCalls...)
	snap.QueuedMessages = append(snap.QueuedMessages, s.Queued...)
	return snap
}

// MaxPageSize bounds list_agent_messages.
const MaxPageSize = 200

// ListMessages renders list_agent_messages: up to Limit messages (clamped to
// 1..200, as the spec says: a limit of 0 or less reads 1) older than
// BeforeSequence, or the newest, oldest first.
func (s *State) ListMessages(req client.ListMessagesRequest) client.MessagesPage {
	limit := min(max(req.Limit, 1), MaxPageSize)
	end := len(s.Messages)
	if req.BeforeSequence > 0 {
		end = 0
		for end < len(s.Messages) && s.Messages[end].Sequence < req.BeforeSequence {
			end++
		}
	}
	start := end - limit
	if start < 0 {
		start = 0
	}
	page := client.MessagesPage{Messages: append([]pluginapi.Message{}, s.Messages[start:end]...)}
	if len(s.Messages) > 0 {
		page.FirstSequence = s.Messages[0].Sequence
	}
	if start > 0 {
		page.HasMore = true
		page.NextBeforeSequence = s.Messages[start].Sequence
	}
	return page
}
