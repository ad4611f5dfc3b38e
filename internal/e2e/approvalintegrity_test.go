package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// integrityStack runs the test agent with 20 s approval deadlines, a
// warning 15 s before them, extensions up to an hour, and required
// approval digests, behind the HTTP API.
func integrityStack(t *testing.T) (*agenttest.Stack, *httpclient.Client) {
	t.Helper()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	cfg := testConfig(plugin) + fmt.Sprintf(`    interrupt_deadline: 20s
    interrupt_expiring_lead: 15s
    max_interrupt_deadline: 1h
approval_digest: {key_env: DEX_E2E_APPROVAL_KEY, required: true}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{name: all, token: %s}]
`, port, tokenAll)
	s := agenttest.NewStack(t, cfg)
	s.Setenv("DEX_E2E_APPROVAL_KEY", "e2e-approval-digest-key-0123456789")
	s.StartWorker()
	return s, apiClient(t, fmt.Sprintf("http://127.0.0.1:%d", port), tokenAll)
}

func apiCode(err error) string {
	var ae *httpclient.APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("%d %s", ae.StatusCode, ae.Code)
	}
	return ""
}

// TestApprovalIntegrity: over the HTTP API of a real worker, an approval
// carries its digest in the snapshot and in interrupt_raised; the digest
// of the same call ID in another session, a digest altered by one
// character, and no digest are refused with 409 digest_mismatch and
// change nothing; interrupt_expiring comes 15 s before the deadline;
// extend_interrupt moves the deadline, within max_interrupt_deadline, so
// the approval succeeds after the first deadline passed; the tool runs
// once. The other session's deadline passes: its call is rejected with
// the deadline's reason and never runs.
func TestApprovalIntegrity(t *testing.T) {
	t.Parallel()
	s, c := integrityStack(t)
	message := "call:approve_write:integrity"
	a, err := c.StartSession(ctx(t), httpclient.StartRequest{Agent: "test", InitialMessage: message})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.StartSession(ctx(t), httpclient.StartRequest{Agent: "test", InitialMessage: message})
	if err != nil {
		t.Fatal(err)
	}
	pending := func(id string) wire.Interrupt {
		s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
		snap, _, err := c.Snapshot(ctx(t), id)
		if err != nil || len(snap.PendingInterrupts) != 1 {
			t.Fatalf("snapshot of %s over HTTP: %v %+v", id, err, snap.PendingInterrupts)
		}
		return snap.PendingInterrupts[0]
	}
	inA, inB := pending(a), pending(b)
	raisedAt := time.Now()
	if inA.InterruptID != inB.InterruptID {
		t.Fatalf("the scripted calls have IDs %s and %s; the test needs one call ID in both sessions", inA.InterruptID, inB.InterruptID)
	}
	if !strings.HasPrefix(inA.Digest, "v1.") || inA.Digest == inB.Digest {
		t.Fatalf("digests %q and %q: want v1. digests that differ by session", inA.Digest, inB.Digest)
	}
	raised := sessionEvents(t, c, a, func(e httpclient.Event) bool { return e.Type == wire.EventInterruptRaised })
	if p := eventPayload(t, raised[len(raised)-1]); p["digest"] != inA.Digest {
		t.Fatalf("interrupt_raised digest = %v, want the snapshot's %s", p["digest"], inA.Digest)
	}

	flipped := []byte(inA.Digest)
	if flipped[10] == 'A' {
		flipped[10] = 'B'
	} else {
		flipped[10] = 'A'
	}
	for name, digest := range map[string]string{"another session's": inB.Digest, "altered": string(flipped), "no": ""} {
		ok, err := c.ResolveInterrupt(ctx(t), a, inA.InterruptID, httpclient.Resolution{Approved: true, Digest: digest})
		if ok || apiCode(err) != "409 digest_mismatch" {
			t.Errorf("%s digest: %v, %v (%s); want 409 digest_mismatch", name, ok, err, apiCode(err))
		}
	}

	// The warning, 15 s before the 20 s deadline.
	events := sessionEvents(t, c, a, func(e httpclient.Event) bool { return e.Type == wire.EventInterruptExpiring })
	warned := time.Since(raisedAt)
	if p := eventPayload(t, events[len(events)-1]); p["interrupt_id"] != inA.InterruptID || p["deadline"] != inA.Deadline || p["seconds_left"] != float64(15) {
		t.Fatalf("interrupt_expiring = %v", p)
	}
	if _, err := c.ExtendInterrupt(ctx(t), a, inA.InterruptID, 2*3600); apiCode(err) != "409 not_extended" || !strings.Contains(err.Error(), "past its latest deadline") {
		t.Fatalf("extension past the maximum: %v (%s)", err, apiCode(err))
	}
	ext, err := c.ExtendInterrupt(ctx(t), a, inA.InterruptID, 60)
	if err != nil || !ext.Extended {
		t.Fatalf("extend: %+v %v", ext, err)
	}
	old, _ := time.Parse(time.RFC3339Nano, inA.Deadline)
	moved, _ := time.Parse(time.RFC3339Nano, ext.Deadline)
	if moved.Sub(old) != time.Minute {
		t.Fatalf("deadline moved from %s to %s, want one minute", inA.Deadline, ext.Deadline)
	}
	if ext, err := c.ExtendInterrupt(ctx(t), a, "no-such-interrupt", 60); err != nil || ext.Extended {
		t.Fatalf("extending an unknown interrupt: %+v %v", ext, err)
	}

	// B's deadline passes: rejected with the deadline's reason.
	snapB := s.WaitForSnapshot("the deadline of the other session's approval", b, func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage
	})
	evB := sessionEvents(t, c, b, func(e httpclient.Event) bool { return e.Type == wire.EventTurnCompleted })
	res := findEvents(t, evB, wire.EventInterruptResolved, nil)
	if len(res) != 1 || eventPayload(t, res[0])["approved"] != false || eventPayload(t, res[0])["rejection_message"] != session.ApprovalDeadlinePassed {
		t.Fatalf("b's interrupt_resolved = %s", eventsString(res))
	}
	// A's first deadline has passed too; its extended one has not.
	if time.Since(raisedAt) < 21*time.Second {
		time.Sleep(21*time.Second - time.Since(raisedAt))
	}
	ok, err := c.ResolveInterrupt(ctx(t), a, inA.InterruptID, httpclient.Resolution{Approved: true, Digest: inA.Digest})
	if err != nil || !ok {
		t.Fatalf("approve with the digest after the first deadline: %v %v", ok, err)
	}
	snapA := s.WaitForSnapshot("a's turn after the approval", a, func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage
	})
	last := snapA.Messages[len(snapA.Messages)-1].Text
	if !strings.Contains(last, "approve_write="+string(pluginapi.ToolCallSucceeded)) {
		t.Fatalf("a's answer = %q, want the approved call's success", last)
	}
	last = snapB.Messages[len(snapB.Messages)-1].Text
	if !strings.Contains(last, "approve_write="+string(pluginapi.ToolCallRejected)) {
		t.Fatalf("b's answer = %q, want the call rejected", last)
	}
	if *updateHistories {
		recordHistory(t, s, a, "deadline_turns.json")
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times across both sessions, want 1", n)
	}
	t.Logf("interrupt_expiring %.1fs after the approval showed (deadline 20s, lead 15s)", warned.Seconds())
}
