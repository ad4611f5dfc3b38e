package e2e

import (
	"errors"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/httpclient"
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
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), parent, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, Digest: in.Digest}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the refund's answer", parent, idleWithAnswer)
	wantAnswer(t, snap, "done: approve_write=succeeded:wrote refund-7")
	// 1 user, 2 the call, 3 its result, 4 the answer.
	if n := len(snap.Messages); n != 4 || snap.Messages[2].Role != wire.RoleTool {
		t.Fatalf("the parent's messages: %+v", snap.Messages)
	}

	_, err := sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 2})
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
	// The same fork again is the same session.
	if again, err := sessions.ForkSession(ctx(t), parent, client.ForkOptions{AtSequence: 4, SessionID: fork}); err != nil || again != fork {
		t.Fatalf("the same fork again = %q, %v", again, err)
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
}
