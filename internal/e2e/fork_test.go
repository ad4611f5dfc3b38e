package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestForkNeverRepeatsAnApprovedWrite forks a session right after an
// approved non-idempotent write: the fork's transcript holds the call and
// its result, the fork inherits no approval and no usage, its next turn
// sees the inherited messages, and the write ran once across both
// sessions, which go on independently. A fork point between a tool call
// and its result is refused with the nearest valid points.
func TestForkNeverRepeatsAnApprovedWrite(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	sessions := s.Sessions.WithMessages(s.MessageStore(t))
	parent := start(t, s, "call:approve_write:refund-7")
	snap := s.WaitForSnapshot("the refund's approval", parent, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	// While the approval waits: the call's message is the last, and a fork
	// there would hold a call without its result; a fork at the user's
	// message inherits neither the call nor its approval.
	if _, err := sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 2}); !errors.Is(err, client.ErrForkPoint) || !strings.Contains(err.Error(), "the nearest valid points are 1") {
		t.Fatalf("a fork at a call whose approval waits: %v", err)
	}
	// A message queued behind the waiting turn is not inherited either.
	if ok, err := s.Sessions.SendUserMessage(ctx(t), parent, "queued behind the approval"); err != nil || !ok {
		t.Fatalf("queue: %v %v", ok, err)
	}
	queued := s.WaitForSnapshot("the queued message", parent, func(s wire.Snapshot) bool { return s.QueuedCount == 1 }).QueuedMessages[0]
	early, err := sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	es := s.WaitForSnapshot("the early fork", early, func(s wire.Snapshot) bool { return s.State != nil })
	if len(es.PendingInterrupts) != 0 || len(es.ToolCalls) != 0 || es.State.ActiveTurnID != "" || len(es.Messages) != 1 || es.QueuedCount != 0 {
		t.Fatalf("the early fork inherited the waiting call or the queue: %+v %+v %+v queued %d", es.PendingInterrupts, es.ToolCalls, es.Messages, es.QueuedCount)
	}
	if ok, err := s.Sessions.DeleteQueuedMessage(ctx(t), parent, queued.MessageID); err != nil || !ok {
		t.Fatalf("delete the queued message: %v %v", ok, err)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), parent, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, Digest: in.Digest}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the refund's answer", parent, idleWithAnswer)
	wantAnswer(t, snap, "done: approve_write=succeeded:wrote refund-7")
	// 1 user, 2 the call, 3 its result, 4 the answer.
	if n := len(snap.Messages); n != 4 || snap.Messages[2].Role != wire.RoleTool {
		t.Fatalf("the parent's messages: %+v", snap.Messages)
	}

	_, err = sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 2})
	if !errors.Is(err, client.ErrForkPoint) || !strings.Contains(err.Error(), "the nearest valid points are 1 and 3") {
		t.Fatalf("a fork between the call and its result: %v", err)
	}
	_, err = sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 5})
	if !errors.Is(err, client.ErrForkPoint) || !strings.Contains(err.Error(), "has 4 messages") {
		t.Fatalf("a fork past the last message: %v", err)
	}

	fork, err := sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 4, SessionID: "fork-of-refund"})
	if err != nil {
		t.Fatal(err)
	}
	// The same fork again is the same session; a fork into the ID of
	// another session (a fork elsewhere, or no fork) is refused.
	if again, err := sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 4, SessionID: fork}); err != nil || again != fork {
		t.Fatalf("the same fork again = %q, %v", again, err)
	}
	for _, other := range []string{early, parent} {
		if _, err := sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 4, SessionID: other}); !errors.Is(err, client.ErrSessionExists) {
			t.Fatalf("a fork into the ID of %s: %v", other, err)
		}
	}
	// A fork whose start fails (a first message over the 8 MiB cap) leaves
	// nothing shared behind.
	store := s.MessageStore(t).(transcript.Reader)
	if _, err := sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 4, SessionID: "fork-too-long", InitialMessage: strings.Repeat("x", wire.MaxMessageBytes+1)}); !errors.Is(err, client.ErrMessageTooLarge) {
		t.Fatalf("a fork with an 8 MiB first message: %v", err)
	}
	if _, ok, err := store.ForkOrigin(ctx(t), "fork-too-long"); ok || err != nil {
		t.Fatalf("the failed fork's shares were kept: %v %v", ok, err)
	}
	fs := s.WaitForSnapshot("the fork", fork, func(s wire.Snapshot) bool { return s.State != nil })
	if fs.ForkedFrom == nil || fs.ForkedFrom.ParentSessionID != parent || fs.ForkedFrom.AtSequence != 4 {
		t.Fatalf("forked_from = %+v", fs.ForkedFrom)
	}
	if fs.State.Status != wire.StatusWaitingForUserMessage || len(fs.PendingInterrupts) != 0 || fs.Usage.ModelCalls != 0 || fs.State.TurnCount != 0 {
		t.Fatalf("the fork inherited more than the transcript: %+v %+v %+v", fs.State, fs.PendingInterrupts, fs.Usage)
	}
	full, err := sessions.GetAgentSnapshot(ctx(t), fork)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Messages) != 4 || full.Messages[3].Text != snap.Messages[3].Text || full.Messages[2].ToolCallID != snap.Messages[2].ToolCallID {
		t.Fatalf("the fork's messages: %+v", full.Messages)
	}

	// Both go on. The fork's model sees the inherited messages.
	if ok, err := s.Sessions.SendUserMessage(ctx(t), fork, "items"); err != nil || !ok {
		t.Fatalf("send to the fork: %v %v", ok, err)
	}
	fs = s.WaitForSnapshot("the fork's turn", fork, idleWithAnswer)
	wantAnswer(t, fs, "items=5 users=call:approve_write:refund-7|items")
	if ok, err := s.Sessions.SendUserMessage(ctx(t), parent, "second turn"); err != nil || !ok {
		t.Fatalf("send to the parent: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the parent's second turn", parent, func(s wire.Snapshot) bool { return idleWithAnswer(s) && len(s.Messages) == 6 })
	wantAnswer(t, snap, "echo: second turn")
	if fs, _ = s.Sessions.GetAgentSnapshot(ctx(t), fork); len(fs.Messages) != 6 || lastText(fs) != "items=5 users=call:approve_write:refund-7|items" {
		t.Fatalf("the parent's turn changed the fork: %+v", fs.Messages)
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Fatalf("the write ran %d times across the session and its fork, want 1", n)
	}
	stored, err := s.StoredMessages(fork)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 6 || stored[1].Item == "" || stored[2].Role != pluginapi.RoleTool {
		t.Fatalf("the fork's stored messages: %+v", stored)
	}
}

// TestForkOverHTTP forks over the HTTP API: the route answers 201 with the
// fork's ID, refuses a point between a call and its result with 400
// invalid_fork_point, and starts the fork's first turn with a message
// (edit and resend).
func TestForkOverHTTP(t *testing.T) {
	t.Parallel()
	s, c := integrityStack(t)
	parent, err := c.StartSession(ctx(t), httpclient.StartRequest{Agent: "test", InitialMessage: "call:noop:1"})
	if err != nil {
		t.Fatal(err)
	}
	s.WaitForSnapshot("the parent's answer", parent, idleWithAnswer)
	if _, err := c.Fork(ctx(t), parent, httpclient.ForkRequest{AtSequence: 2}); apiCode(err) != "400 invalid_fork_point" || !strings.Contains(err.Error(), "1 and 3") {
		t.Fatalf("a fork between a call and its result: %v (%s)", err, apiCode(err))
	}
	// Edit and resend: the second turn's message is sent again, changed,
	// as the first message of a fork before it.
	if ok, err := c.SendMessage(ctx(t), parent, "first draft"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap := s.WaitForSnapshot("the second answer", parent, func(s wire.Snapshot) bool { return idleWithAnswer(s) && len(s.Messages) == 6 })
	fork, err := c.Fork(ctx(t), parent, httpclient.ForkRequest{AtSequence: 4, InitialMessage: "items"})
	if err != nil {
		t.Fatal(err)
	}
	fs := s.WaitForSnapshot("the fork's first turn", fork, idleWithAnswer)
	wantAnswer(t, fs, "items=5 users=call:noop:1|items")
	if lastText(snap) != "echo: first draft" {
		t.Fatalf("the parent's answer = %q", lastText(snap))
	}

	// Edit and resend the second user message (sequence 5).
	edited, err := c.Edit(ctx(t), parent, 5, httpclient.EditRequest{Text: "second draft"})
	if err != nil {
		t.Fatal(err)
	}
	es := s.WaitForSnapshot("the edited branch's answer", edited, idleWithAnswer)
	wantAnswer(t, es, "echo: second draft")
	if len(es.Messages) != 6 || es.Messages[4].Text != "second draft" || es.ForkedFrom.AtSequence != 4 {
		t.Fatalf("the edited branch: %+v %+v", es.Messages, es.ForkedFrom)
	}
	if _, err := c.Edit(ctx(t), parent, 6, httpclient.EditRequest{Text: "x"}); apiCode(err) != "400 invalid_fork_point" || !strings.Contains(err.Error(), "only a user message") {
		t.Fatalf("editing an answer: %v (%s)", err, apiCode(err))
	}
	// Editing the first message forks at 0: the branch holds only the new
	// text; and a fork of a fork is a branch of the same root. This one
	// rewinds: the edited branch is closed.
	first, err := c.Edit(ctx(t), edited, 1, httpclient.EditRequest{Text: "items", Rewind: true})
	if err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, s.WaitForSnapshot("the first message's edit", first, idleWithAnswer), "items=1 users=items")
	s.WaitForSnapshot("the rewound branch closed", edited, func(s wire.Snapshot) bool { return s.State != nil && s.State.Closed })

	b, err := c.Branches(ctx(t), first)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, br := range b.Branches {
		got = append(got, br.SessionID+"<"+br.ParentSessionID)
	}
	if want := []string{fork + "<" + parent, edited + "<" + parent, first + "<" + edited}; b.RootSessionID != parent || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("branches = %s %v, want %s %v", b.RootSessionID, got, parent, want)
	}
	if b2, err := c.Branches(ctx(t), parent); err != nil || len(b2.Branches) != 3 {
		t.Fatalf("branches from the root = %+v, %v", b2, err)
	}
}

// TestForkOfACompactedSessionKeepsItsSummaryAndReads forks a session that
// compaction summarized and retention cut: a fork at its last message
// starts from the parent's summary (its model sees what the parent's
// sees), a fork before the summary's end is refused with the earliest
// point, and the parent's later retention never breaks the fork's reads.
func TestForkOfACompactedSessionKeepsItsSummaryAndReads(t *testing.T) {
	t.Parallel()
	s := retentionStack(t)
	s.StartWorker()
	sessions := s.Sessions.WithMessages(s.MessageStore(t))
	text := func(i int) string { return fmt.Sprintf("m%02d %s", i, strings.Repeat("x", 300)) }
	id := start(t, s, text(1))
	// turn sends msg (unless it is the start's) and waits for the
	// session's n-th turn to end.
	turn := func(id, msg string, n int) wire.Snapshot {
		t.Helper()
		if msg != "" {
			if ok, err := s.Sessions.SendUserMessage(ctx(t), id, msg); err != nil || !ok {
				t.Fatalf("send: %v %v", ok, err)
			}
		}
		return s.WaitForSnapshot(fmt.Sprintf("turn %d of %s", n, id), id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == n })
	}
	var snap wire.Snapshot
	var p wire.ForkPoint
	for n := 1; ; n++ {
		msg := text(n)
		if n == 1 {
			msg = "" // the start's
		}
		snap = turn(id, msg, n)
		var err error
		p, err = forkPoint(t, s, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.FirstSequence > 1 && p.SummaryLastSequence > p.FirstSequence {
			break
		}
		if n == 30 {
			t.Fatal("30 turns and no summary with retention")
		}
	}
	last := p.LastSequence
	t.Logf("parent: messages %d..%d, summary through %d", p.FirstSequence, last, p.SummaryLastSequence)
	if _, err := sessions.ForkSession(ctx(t), id, client.ForkOptions{AtSequence: p.FirstSequence}); !errors.Is(err, client.ErrForkPoint) ||
		!strings.Contains(err.Error(), fmt.Sprintf("the earliest fork point is %d", p.SummaryLastSequence)) {
		t.Fatalf("a fork inside the summary after retention: %v", err)
	}
	fork, err := sessions.ForkSession(ctx(t), id, client.ForkOptions{AtSequence: last})
	if err != nil {
		t.Fatal(err)
	}
	fs := s.WaitForSnapshot("the fork", fork, func(s wire.Snapshot) bool { return s.State != nil })
	if fs.ContextSummary == nil || snap.ContextSummary == nil || fs.ContextSummary.LastSequence != snap.ContextSummary.LastSequence ||
		fs.ContextSummary.Generation != snap.ContextSummary.Generation || fs.ContextSummary.Text != snap.ContextSummary.Text {
		t.Fatalf("the fork's summary %+v, the parent's %+v", fs.ContextSummary, snap.ContextSummary)
	}
	// Its window's texts (300 bytes, over what a fork's start carries)
	// read whole through a client with the store.
	pw, err := sessions.GetAgentSnapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := sessions.GetAgentSnapshot(ctx(t), fork)
	if err != nil {
		t.Fatal(err)
	}
	if len(fw.Messages) == 0 || len(fw.Messages) > len(pw.Messages) {
		t.Fatalf("the fork's snapshot holds %d messages, the parent's %d", len(fw.Messages), len(pw.Messages))
	}
	for i, m := range fw.Messages {
		want := pw.Messages[len(pw.Messages)-len(fw.Messages)+i]
		if m.Sequence != want.Sequence || m.Text != want.Text || m.TextTruncated {
			t.Fatalf("the fork's message %d: %q (truncated %v), the parent's %q", m.Sequence, m.Text, m.TextTruncated, want.Text)
		}
	}
	// The same message to both: their models see the same input.
	n := snap.State.TurnCount
	parentView := lastText(turn(id, "items", n+1))
	forkView := lastText(turn(fork, "items", 1))
	if forkView != parentView || !strings.HasPrefix(forkView, "items=") {
		t.Fatalf("the fork's model saw %q, the parent's %q", forkView, parentView)
	}
	// The parent goes on until retention deletes past the fork point; the
	// fork still reads every message from its first.
	for k := n + 2; ; k++ {
		turn(id, text(k), k)
		if p, err = forkPoint(t, s, id); err != nil {
			t.Fatal(err)
		}
		if p.FirstSequence > last {
			break
		}
		if k == n+40 {
			t.Fatalf("40 more turns and retention did not pass the fork point %d (first %d)", last, p.FirstSequence)
		}
	}
	stored, err := s.StoredMessages(fork)
	if err != nil {
		t.Fatalf("the fork's messages after the parent's retention: %v", err)
	}
	if len(stored) == 0 || stored[len(stored)-1].Text != forkView {
		t.Fatalf("the fork's stored messages end with %+v", stored[len(stored)-1:])
	}
	if got := lastText(turn(fork, "items", 2)); !strings.HasPrefix(got, "items=") {
		t.Fatalf("the fork's turn after the parent's retention: %q", got)
	}
}

func forkPoint(t *testing.T, s *agenttest.Stack, id string) (wire.ForkPoint, error) {
	t.Helper()
	v, err := s.Client.QueryWorkflow(ctx(t), id, "", wire.QueryForkPoint, wire.ForkPointRequest{AtSequence: 1})
	if err != nil {
		return wire.ForkPoint{}, err
	}
	var p wire.ForkPoint
	return p, v.Get(&p)
}
