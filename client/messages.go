package client

import (
	"context"
	"fmt"

	"github.com/dex-agents/dex-agent-worker/internal/wireconv"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// MessageReader reads a session's stored messages from the message store:
// the chunks that hold [from, windowFirst-1] and the window rows
// [windowFirst, last], oldest first. The worker's store implements it
// (transcript.Reader); an application that shares the store can too.
type MessageReader interface {
	ReadMessages(ctx context.Context, sessionID string, from, windowFirst, last int64) ([]pluginapi.Message, error)
}

// MessageStore is a MessageReader that also stores texts by content
// (transcript.Reader is one): a client with one sends a message over
// wire.MaxInlineMessageBytes by storing it first and sending its reference.
type MessageStore interface {
	MessageReader
	// PutBlob stores data for a session and returns its reference
	// ("sha256:<hex>").
	PutBlob(ctx context.Context, sessionID string, data []byte) (string, error)
}

// WithMessages returns a copy of the client whose ListAgentMessages reads
// what the workflow does not hold from r: the pages before the window, and
// the whole text of a window message the workflow holds cut. When r is a
// MessageStore, StartSession and SendUserMessage send a text over
// wire.MaxInlineMessageBytes (up to wire.MaxMessageBytes) by reference.
func (s *AgentSessionClient) WithMessages(r MessageReader) *AgentSessionClient {
	c := *s
	c.messages = r
	return &c
}

// fillPage completes a page of a session that keeps its messages in the
// store. The workflow holds only the window, as previews without framework
// items; with a MessageReader the page is read whole from the store: the
// same window messages, and older ones from the chunks up to the request's
// limit. When the window moved on between the two reads (its rows went
// into a chunk), the workflow's messages are kept and only their cut texts
// completed.
func (s *AgentSessionClient) fillPage(ctx context.Context, sessionID string, req wire.ListMessagesRequest, page wire.MessagesPage) (wire.MessagesPage, error) {
	if s.messages == nil || page.WindowFirstSequence == 0 {
		return page, nil
	}
	limit := int64(min(max(req.Limit, 1), 200))
	end := page.WindowFirstSequence - 1
	if n := len(page.Messages); n > 0 {
		end = page.Messages[n-1].Sequence
	} else if req.BeforeSequence > 0 {
		end = min(end, req.BeforeSequence-1)
	}
	start := max(page.FirstSequence, 1, end-limit+1)
	if end >= start {
		windowFirst := min(max(page.WindowFirstSequence, start), end+1)
		msgs, err := s.messages.ReadMessages(ctx, sessionID, start, windowFirst, end)
		if err == nil && wholeRange(msgs, start, end) {
			page.Messages = make([]wire.Message, 0, len(msgs))
			for _, m := range msgs {
				page.Messages = append(page.Messages, wireconv.Message(m, false))
			}
			return pageBounds(page), nil
		}
		// The window moved on: keep the workflow's window messages and
		// read only what lies before them from the chunks.
		if err := s.CompleteMessages(ctx, sessionID, page.Messages); err != nil {
			return page, err
		}
		older := page.WindowFirstSequence - 1
		if len(page.Messages) > 0 {
			older = min(older, page.Messages[0].Sequence-1)
		} else {
			older = min(older, end)
		}
		if need := limit - int64(len(page.Messages)); need > 0 && older >= page.FirstSequence {
			from := max(page.FirstSequence, older-need+1)
			msgs, err := s.messages.ReadMessages(ctx, sessionID, from, older+1, older)
			if err != nil {
				return page, fmt.Errorf("read messages %d..%d of session %s: %w", from, older, sessionID, err)
			}
			all := make([]wire.Message, 0, len(msgs)+len(page.Messages))
			for _, m := range msgs {
				all = append(all, wireconv.Message(m, false))
			}
			page.Messages = append(all, page.Messages...)
		}
	}
	return pageBounds(page), nil
}

// wholeRange reports whether msgs are exactly the sequences start..end.
func wholeRange(msgs []pluginapi.Message, start, end int64) bool {
	if int64(len(msgs)) != end-start+1 {
		return false
	}
	for i, m := range msgs {
		if m.Sequence != start+int64(i) {
			return false
		}
	}
	return true
}

// pageBounds sets HasMore and NextBeforeSequence from a filled page.
func pageBounds(page wire.MessagesPage) wire.MessagesPage {
	page.HasMore, page.NextBeforeSequence = false, 0
	if len(page.Messages) > 0 && page.Messages[0].Sequence > page.FirstSequence {
		page.HasMore, page.NextBeforeSequence = true, page.Messages[0].Sequence
	}
	return page
}

// CompleteMessages replaces the cut texts of a snapshot's or a page's
// messages (TextTruncated) with the whole messages from the store. Without
// a MessageReader it does nothing.
func (s *AgentSessionClient) CompleteMessages(ctx context.Context, sessionID string, msgs []wire.Message) error {
	if s.messages == nil {
		return nil
	}
	for i := range msgs {
		if !msgs[i].TextTruncated {
			continue
		}
		seq := msgs[i].Sequence
		// A window row, or, if the window moved on since, a chunk's.
		rows, err := s.messages.ReadMessages(ctx, sessionID, seq, seq, seq)
		if err != nil {
			if rows, err = s.messages.ReadMessages(ctx, sessionID, seq, seq+1, seq); err != nil {
				return fmt.Errorf("read message %d of session %s: %w", seq, sessionID, err)
			}
		}
		if len(rows) == 1 && rows[0].Sequence == seq {
			msgs[i] = wireconv.Message(rows[0], false)
		}
	}
	return nil
}

// fillSnapshot gives a snapshot whose messages are only the window
// (WindowFirstSequence set) the newest wire.SnapshotMessageLimit stored
// messages, whole, read from the store. When a message was stored between
// the snapshot and the read, the snapshot's own window is kept (its texts
// completed) and only the older messages, which chunks hold and which never
// change, come from the store. Without a MessageReader it leaves the
// snapshot as the workflow answered.
func (s *AgentSessionClient) fillSnapshot(ctx context.Context, sessionID string, snap *wire.Snapshot) error {
	if s.messages == nil || snap.WindowFirstSequence == 0 || len(snap.Messages) == 0 {
		return nil
	}
	window := snap.Messages
	page, err := s.ListAgentMessages(ctx, sessionID, wire.ListMessagesRequest{Limit: wire.SnapshotMessageLimit})
	if err != nil {
		return fmt.Errorf("the messages of session %s's snapshot: %w", sessionID, err)
	}
	if n := len(page.Messages); n > 0 && page.Messages[n-1].Sequence == window[len(window)-1].Sequence {
		snap.Messages, snap.WindowFirstSequence = page.Messages, 0
		return nil
	}
	if err := s.CompleteMessages(ctx, sessionID, window); err != nil {
		return err
	}
	var kept []wire.Message
	for _, m := range page.Messages {
		if m.Sequence < snap.WindowFirstSequence {
			kept = append(kept, m)
		}
	}
	if extra := len(kept) + len(window) - wire.SnapshotMessageLimit; extra > 0 {
		kept = kept[min(extra, len(kept)):]
	}
	snap.Messages, snap.WindowFirstSequence = append(kept, window...), 0
	return nil
}
