package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestApprovalRulesDecideCalls runs an agent whose approval_rules allow
// one write that its policy makes wait, deny another with a reason the
// model sees, make a read wait for approval, and trial a shadow rule that
// is recorded but not enforced. The tool invocations are counted.
func TestApprovalRulesDecideCalls(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	s := agenttest.NewStack(t, testConfig(plugin)+`
    approval_rules:
      - {tool: approve_write, when: 'args.name.startsWith("ok")', decision: allow, reason: trusted names}
      - {tool: approve_write, when: 'args.name == "no"', decision: deny, reason: "This write is not allowed: ask a person."}
      - {tool: read_gate, when: 'has(args.name) && args.name == "check"', decision: require_approval, reason: checked reads}
      - {tool: "*", when: 'effect == "read" && args.name == "sh"', decision: deny, reason: would deny, shadow: true}
`)
	s.StartWorker()
	log := s.Log()
	var id string
	send := func(message string) {
		t.Helper()
		if ok, err := s.Sessions.SendUserMessage(ctx(t), id, message); err != nil || !ok {
			t.Fatalf("send %q: %v %v", message, ok, err)
		}
	}

	// allow: the write runs without an approval.
	id = start(t, s, "call:approve_write:ok1")
	snap := s.WaitForSnapshot("the allowed write", id, idleWithAnswer)
	wantAnswer(t, snap, "done: approve_write=succeeded:wrote ok1")

	// deny: the write never runs; the model sees the rule's reason.
	send("call:approve_write:no")
	snap = s.WaitForSnapshot("the denied write", id, func(sn wire.Snapshot) bool {
		return idleWithAnswer(sn) && strings.HasPrefix(lastText(sn), "done: approve_write=rejected")
	})
	wantAnswer(t, snap, "done: approve_write=rejected:This write is not allowed: ask a person.")
	if n := log.Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times, want once (the allowed call)", n)
	}

	// require_approval: a read waits for a person.
	send("call:read_gate:check")
	snap = s.WaitForSnapshot("the read waiting for approval", id, func(sn wire.Snapshot) bool { return len(sn.PendingInterrupts) == 1 })
	rec := snap.ToolCalls[len(snap.ToolCalls)-1]
	if rec.ToolName != "read_gate" || !rec.RequiresApproval || rec.Effect != "read" || rec.ApprovalRule != "approval_rules[2]" || rec.ApprovalDecision != "require_approval" {
		t.Fatalf("the read's record: %+v", rec)
	}
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the approved read", id, func(sn wire.Snapshot) bool {
		return idleWithAnswer(sn) && strings.Contains(lastText(sn), "read_gate=succeeded")
	})

	// shadow: recorded, not enforced: the read runs (it waits at its gate
	// while the test reads its record).
	gate := s.Gate("tool-sh")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	send("call:read_gate:sh")
	reached(t, gate)
	snap = s.WaitForSnapshot("the shadowed read running", id, func(sn wire.Snapshot) bool { return len(sn.ToolCalls) == 1 })
	if rec = snap.ToolCalls[0]; rec.ShadowApprovalRule != "approval_rules[3]" || rec.ShadowApprovalDecision != "deny" || rec.ApprovalDecision != "" || rec.RequiresApproval {
		t.Errorf("the shadowed read's record: %+v", rec)
	}
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.WaitForSnapshot("the shadowed read", id, func(sn wire.Snapshot) bool {
		return idleWithAnswer(sn) && strings.Contains(lastText(sn), "read_gate=succeeded:read sh")
	})
	if *updateHistories {
		// Rule decisions in RunModel outcomes (allow, deny, require, shadow)
		// for the replay test of internal/session.
		recordHistory(t, s, id, "rules_turns.json")
	}
	before, err := s.Sessions.GetAgentSnapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}

	// A rule change never replays differently: a worker whose config has
	// no rules replays the session (a query on a worker without its cache)
	// to the same state, and takes its next turn under the policies alone.
	s.KillWorkers()
	cfg, err := os.ReadFile(s.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	noRules := string(cfg[:strings.Index(string(cfg), "    approval_rules:")])
	if err := os.WriteFile(s.ConfigPath, []byte(noRules), 0o644); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	after, err := s.Sessions.GetAgentSnapshot(ctx(t), id)
	if err != nil {
		t.Fatalf("the session does not replay under the config without rules: %v", err)
	}
	if len(after.Messages) != len(before.Messages) || lastText(after) != lastText(before) {
		t.Errorf("replayed to %d messages (%q), want %d (%q)", len(after.Messages), lastText(after), len(before.Messages), lastText(before))
	}
	send("call:approve_write:ok2")
	s.WaitForSnapshot("the write waiting under its policy", id, func(sn wire.Snapshot) bool { return len(sn.PendingInterrupts) == 1 })

	b, err := os.ReadFile(filepath.Join(s.Dir, "worker-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "shadow_decision=deny") {
		t.Error("the worker did not log the shadow decision")
	}
}
