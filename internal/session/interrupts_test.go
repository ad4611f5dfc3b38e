package session

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
)

// deadlineOpts: a 60 s deadline, a 10 s warning, extensions up to 5 min
// after an interrupt was raised.
func deadlineOpts() Options {
	o := opts()
	o.InterruptExpiringLeadMs = 10_000
	o.MaxInterruptDeadlineMs = 300_000
	return o
}

// awaitingApproval returns a session whose call c1 waits for approval,
// raised at now, with the raising commands.
func awaitingApproval(t *testing.T, o Options) (*State, []Command) {
	t.Helper()
	s := startedWith(t, o)
	cmds := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now}).Commands
	return s, cmds
}

func payloadOf(t *testing.T, cmds []Command, eventType string) map[string]any {
	t.Helper()
	for _, c := range cmds {
		if e, ok := c.(Emit); ok && e.Event.Type == eventType {
			var p map[string]any
			if err := json.Unmarshal(e.Event.Payload, &p); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no %s event in %q", eventType, renderAll(cmds))
	return nil
}

func TestInterruptExpiringWarnsOnceBeforeTheDeadline(t *testing.T) {
	s, cmds := awaitingApproval(t, deadlineOpts())
	// The timer first fires at the warning: 60 s - 10 s.
	if diff := cmp.Diff([]string{"start_timer c1 50s"}, renderAll(nonEmit(cmds))); diff != "" {
		t.Fatalf("raise (-want +got):\n%s", diff)
	}
	// Early even for the warning: armed again for it, nothing written.
	cmds = s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 49_000}).Commands
	if diff := cmp.Diff([]string{"start_timer c1 1s"}, renderAll(cmds)); diff != "" {
		t.Fatalf("early (-want +got):\n%s", diff)
	}
	cmds = s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 50_000}).Commands
	if diff := cmp.Diff([]string{wire.EventInterruptExpiring}, eventTypes(cmds)); diff != "" {
		t.Fatalf("events at the warning (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"start_timer c1 10s"}, renderAll(nonEmit(cmds))); diff != "" {
		t.Fatalf("timer after the warning (-want +got):\n%s", diff)
	}
	p := payloadOf(t, cmds, wire.EventInterruptExpiring)
	want := map[string]any{"interrupt_id": "c1", "tool_call_id": "c1", "tool_name": "refund", "kind": "approval",
		"deadline": formatDeadline(now + 60_000), "seconds_left": float64(10)}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Fatalf("interrupt_expiring payload (-want +got):\n%s", diff)
	}
	// A timer that fires early after the warning warns no more.
	cmds = s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 55_000}).Commands
	if diff := cmp.Diff([]string{"start_timer c1 5s"}, renderAll(cmds)); diff != "" {
		t.Fatalf("second early firing (-want +got):\n%s", diff)
	}
	// The deadline rejects the call with its own reason, never grants it.
	cmds = s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 60_000}).Commands
	if diff := cmp.Diff([]string{wire.EventInterruptResolved, wire.EventToolCallFinished}, eventTypes(cmds)); diff != "" {
		t.Fatalf("events at the deadline (-want +got):\n%s", diff)
	}
	if rec := s.ToolCalls[0]; rec.Status != wire.ToolCallRejected || rec.RejectionMessage != ApprovalDeadlinePassed {
		t.Fatalf("record at the deadline = %s %q", rec.Status, rec.RejectionMessage)
	}
	if p := payloadOf(t, cmds, wire.EventInterruptResolved); p["approved"] != false || p["rejection_message"] != ApprovalDeadlinePassed {
		t.Fatalf("interrupt_resolved = %v", p)
	}
}

func TestNoWarningWithoutALead(t *testing.T) {
	// Sessions of older workers (no lead recorded) arm the deadline only.
	s, cmds := awaitingApproval(t, opts())
	if diff := cmp.Diff([]string{"start_timer c1 1m0s"}, renderAll(nonEmit(cmds))); diff != "" {
		t.Fatalf("raise (-want +got):\n%s", diff)
	}
	if types := eventTypes(s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 55_000}).Commands); len(types) != 0 {
		t.Fatalf("events before the deadline without a lead: %q", types)
	}
}

func TestResumeArmsTheWarningOrTheDeadline(t *testing.T) {
	s, _ := awaitingApproval(t, deadlineOpts())
	// Continue-as-new 20 s in: the warning is 30 s away.
	if diff := cmp.Diff([]string{"start_timer c1 30s"}, renderAll(nonEmit(s.Apply(Continued{NowMs: now + 20_000}).Commands))); diff != "" {
		t.Fatalf("resume before the warning (-want +got):\n%s", diff)
	}
	s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 50_000})
	// After the warning, the deadline itself.
	if diff := cmp.Diff([]string{"start_timer c1 8s"}, renderAll(nonEmit(s.Apply(Continued{NowMs: now + 52_000}).Commands))); diff != "" {
		t.Fatalf("resume after the warning (-want +got):\n%s", diff)
	}
}

func TestExtendInterrupt(t *testing.T) {
	tests := []struct {
		name        string
		opts        func(*Options)
		req         ExtendInterrupt
		wantPending bool
		wantRefusal string // substring; "" when it applies
	}{
		{"extends", nil, ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: 120, NowMs: now + 30_000}, true, ""},
		{"to the maximum", nil, ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: 240, NowMs: now + 30_000}, true, ""},
		{"past the maximum", nil, ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: 241, NowMs: now + 30_000}, true,
			"would move its deadline to " + formatDeadline(now+301_000) + ", past its latest deadline " + formatDeadline(now+300_000) + " (max_interrupt_deadline 300s after it was raised)"},
		{"no maximum", func(o *Options) { o.MaxInterruptDeadlineMs = 0 }, ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: 1, NowMs: now}, true,
			"agent orders sets no max_interrupt_deadline"},
		{"no deadline", func(o *Options) { o.InterruptDeadlineMs = 0 }, ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: 1, NowMs: now}, true,
			"interrupt c1 has no deadline to extend"},
		{"passed", nil, ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: 60, NowMs: now + 60_000}, true, "the deadline of interrupt c1 has passed"},
		{"zero seconds", nil, ExtendInterrupt{InterruptID: "c1", NowMs: now}, true, "extend_by_seconds must be from 1"},
		{"negative", nil, ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: -5, NowMs: now}, true, "got -5"},
		{"overflowing", nil, ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: 1 << 62, NowMs: now}, true, "extend_by_seconds must be from 1"},
		{"unknown", nil, ExtendInterrupt{InterruptID: "c9", ExtendBySeconds: 60, NowMs: now}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := deadlineOpts()
			if tt.opts != nil {
				tt.opts(&o)
			}
			s, _ := awaitingApproval(t, o)
			before := s.Interrupts[0]
			refusal, pending := s.CheckExtend(tt.req)
			if pending != tt.wantPending || (tt.wantRefusal == "") != (refusal == "") || !strings.Contains(refusal, tt.wantRefusal) {
				t.Fatalf("CheckExtend = %q, %v; want %q, %v", refusal, pending, tt.wantRefusal, tt.wantPending)
			}
			r := s.Apply(tt.req)
			if r.Accepted != (pending && refusal == "") {
				t.Fatalf("accepted = %v", r.Accepted)
			}
			if !r.Accepted {
				if r.Commands != nil || !cmp.Equal(s.Interrupts[0], before) {
					t.Fatalf("a refused extension changed the session: %q %+v", renderAll(r.Commands), s.Interrupts[0])
				}
				return
			}
			deadline := before.DeadlineUnixMs + tt.req.ExtendBySeconds*1000
			if s.Interrupts[0].DeadlineUnixMs != deadline || s.InterruptDeadline("c1") != formatDeadline(deadline) {
				t.Fatalf("deadline = %d, want %d", s.Interrupts[0].DeadlineUnixMs, deadline)
			}
			warnIn := (deadline - 10_000 - tt.req.NowMs) / 1000
			if diff := cmp.Diff([]string{"cancel_timer c1", "start_timer c1 " + (time.Duration(warnIn) * time.Second).String()}, renderAll(nonEmit(r.Commands))); diff != "" {
				t.Fatalf("commands (-want +got):\n%s", diff)
			}
			p := payloadOf(t, r.Commands, wire.EventInterruptExtended)
			want := map[string]any{"interrupt_id": "c1", "tool_call_id": "c1", "tool_name": "refund", "kind": "approval",
				"deadline": formatDeadline(deadline), "previous_deadline": formatDeadline(now + 60_000), "latest_deadline": formatDeadline(now + 300_000)}
			if diff := cmp.Diff(want, p); diff != "" {
				t.Fatalf("interrupt_extended (-want +got):\n%s", diff)
			}
			// The old deadline no longer rejects: its timer was cancelled,
			// and a late firing of it is armed again.
			if cmds := s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 60_000}).Commands; len(eventTypes(cmds)) != 0 {
				t.Fatalf("the old deadline wrote %q", eventTypes(cmds))
			}
			if ok, _ := resolve(s, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, now+61_000); !ok {
				t.Fatal("approval after the old deadline, before the new one, refused")
			}
		})
	}
}

func TestAnExtensionWarnsAgain(t *testing.T) {
	s, _ := awaitingApproval(t, deadlineOpts())
	if types := eventTypes(s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 50_000}).Commands); len(types) != 1 || types[0] != wire.EventInterruptExpiring {
		t.Fatalf("warning: %q", types)
	}
	if !s.Apply(ExtendInterrupt{InterruptID: "c1", ExtendBySeconds: 60, NowMs: now + 52_000}).Accepted {
		t.Fatal("extension refused")
	}
	// New deadline now+120 s: warned again at now+110 s.
	cmds := s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 110_000}).Commands
	if diff := cmp.Diff([]string{wire.EventInterruptExpiring}, eventTypes(cmds)); diff != "" {
		t.Fatalf("second warning (-want +got):\n%s", diff)
	}
}

func TestQuestionDeadlinesWarnAndExtend(t *testing.T) {
	o := deadlineOpts()
	o.BuiltInTools = []string{BuiltInAskUser}
	s := startedWith(t, o)
	ask := contract.DeferredToolCall{ToolCallID: "q1", ToolName: BuiltInAskUser, Arguments: `{"question":"Which order?"}`}
	cmds := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(ask), NowMs: now}).Commands
	if diff := cmp.Diff([]string{"start_timer q1 50s"}, renderAll(nonEmit(cmds))); diff != "" {
		t.Fatalf("raise (-want +got):\n%s", diff)
	}
	if p := payloadOf(t, s.Apply(DeadlineTimerFired{InterruptID: "q1", NowMs: now + 50_000}).Commands, wire.EventInterruptExpiring); p["kind"] != "question" {
		t.Fatalf("interrupt_expiring = %v", p)
	}
	if !s.Apply(ExtendInterrupt{InterruptID: "q1", ExtendBySeconds: 30, NowMs: now + 51_000}).Accepted {
		t.Fatal("question extension refused")
	}
	if _, ok := s.ApprovalSubject("q1"); ok {
		t.Fatal("a question has an approval subject")
	}
}

func TestApprovalSubject(t *testing.T) {
	s, _ := awaitingApproval(t, opts())
	sub, ok := s.ApprovalSubject("c1")
	want := ApprovalSubject{SessionID: "s-1", ToolCallID: "c1", ToolName: "refund", Arguments: `{"order_id":"7"}`}
	if !ok || sub != want {
		t.Fatalf("subject = %+v %v, want %+v", sub, ok, want)
	}
	// Arguments kept in the store are covered by their reference.
	s.Refs = append(s.Refs, RecordRefs{ToolCallID: "c1", ArgumentsRef: "sha256:" + strings.Repeat("a", 64)})
	if sub, _ := s.ApprovalSubject("c1"); sub.ArgumentsRef != "sha256:"+strings.Repeat("a", 64) {
		t.Fatalf("subject with a stored argument = %+v", sub)
	}
	resolve(s, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, now+1)
	if _, ok := s.ApprovalSubject("c1"); ok {
		t.Fatal("a resolved approval has a subject")
	}
}
