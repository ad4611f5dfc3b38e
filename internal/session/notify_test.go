package session

import (
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func notifyOpts() Options {
	o := opts() // a 60 s interrupt deadline
	o.Notify = []NotifyRule{{Kinds: []string{wire.InterruptKindApproval}, Channel: "ops-hook", EscalateAfterMs: 20_000, EscalateTo: "ops-mail"}}
	return o
}

// TestApprovalIsNotifiedAndEscalated: a raised approval is sent to the
// rule's channel with its arguments and an idempotency key, its escalation
// timer armed; the timer sends it to the escalation channel; a resolved
// approval's timer is cancelled; a new run arms a pending one again.
func TestApprovalIsNotifiedAndEscalated(t *testing.T) {
	s := startedWith(t, notifyOpts())
	r := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
	sends := commandsOf[SendNotification](r.Commands)
	timers := commandsOf[StartEscalationTimer](r.Commands)
	if len(sends) != 1 || len(timers) != 1 {
		t.Fatalf("commands: %v", renderAll(r.Commands))
	}
	in := sends[0].Input
	if in.Channel != "ops-hook" || in.Escalation || in.ToolName != "refund" || in.Arguments != `{"order_id":"7"}` || in.Key != "s-1/turn-1/c1/ops-hook/0" || in.Deadline == "" {
		t.Fatalf("notification: %+v", in)
	}
	if timers[0].DelayMs != 20_000 || StepKey(timers[0], "") != "escalate:c1/0" {
		t.Fatalf("timer: %+v", timers[0])
	}
	// Nothing more on the next input; the escalation fires once.
	if r := s.Apply(ExtendInterrupt{InterruptID: "nope"}); len(commandsOf[SendNotification](r.Commands)) != 0 {
		t.Fatal("notified twice")
	}
	r = s.Apply(EscalationTimerFired{InterruptID: "c1", Rule: 0})
	if e := commandsOf[SendNotification](r.Commands); len(e) != 1 || e[0].Input.Channel != "ops-mail" || !e[0].Input.Escalation || e[0].Input.Key != "s-1/turn-1/c1/ops-mail/1" {
		t.Fatalf("escalation: %v", renderAll(r.Commands))
	}
	if r := s.Apply(EscalationTimerFired{InterruptID: "c1", Rule: 0}); r.Accepted {
		t.Fatal("escalated twice")
	}
	// A failure is reported, nothing else changes.
	r = s.Apply(NotificationFailed{Input: in, Reason: "channel ops-hook answered 503"})
	if got := eventTypes(r.Commands); len(got) != 1 || got[0] != wire.EventNotificationFailed || !strings.Contains(string(r.Commands[0].(Emit).Event.Payload), "503") {
		t.Fatalf("failure: %v", renderAll(r.Commands))
	}
}

func TestAnsweredApprovalCancelsItsEscalation(t *testing.T) {
	s := startedWith(t, notifyOpts())
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
	// A new run (continue-as-new) arms the pending escalation again, for
	// what is left of it.
	cont := *s
	r := cont.Apply(Continued{NowMs: now + 5_000})
	if tm := commandsOf[StartEscalationTimer](r.Commands); len(tm) != 1 || tm[0].DelayMs != 15_000 {
		t.Fatalf("resume: %v", renderAll(r.Commands))
	}
	r = s.Apply(ResolveInterrupt{InterruptID: "c1", Approved: true, NowMs: now + 1000})
	found := false
	for _, c := range r.Commands {
		if cs, ok := c.(CancelStep); ok && cs.Key == "escalate:c1/0" {
			found = true
		}
	}
	if !found || len(s.Notices) != 0 || len(s.Notified) != 0 {
		t.Fatalf("commands %v, notices %+v, notified %v", renderAll(r.Commands), s.Notices, s.Notified)
	}
	if r := s.Apply(EscalationTimerFired{InterruptID: "c1", Rule: 0}); r.Accepted || len(r.Commands) != 0 {
		t.Fatal("an answered approval escalated")
	}
}

func TestQuestionsFollowTheirRuleKinds(t *testing.T) {
	s := startedWith(t, notifyOpts())
	ask := contract.DeferredToolCall{ToolCallID: "q1", ToolName: BuiltInAskUser, Arguments: `{"question":"Which?","choices":["a","b"]}`}
	s.Options.BuiltInTools = []string{BuiltInAskUser}
	r := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(ask), NowMs: now})
	if n := len(commandsOf[SendNotification](r.Commands)); n != 0 {
		t.Fatalf("a question under an approval-only rule was sent: %v", renderAll(r.Commands))
	}
}

// TestExpiringIsNotified: at interrupt_expiring the rule's channel is told
// the deadline is near, under its own key.
func TestExpiringIsNotified(t *testing.T) {
	o := notifyOpts()
	o.InterruptExpiringLeadMs = 10_000
	s := startedWith(t, o)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: toolsRequested(call("c1", "refund", contract.EffectNonIdempotentWrite)), NowMs: now})
	r := s.Apply(DeadlineTimerFired{InterruptID: "c1", NowMs: now + 50_000})
	sends := commandsOf[SendNotification](r.Commands)
	if len(sends) != 1 || !sends[0].Input.Expiring || sends[0].Input.Channel != "ops-hook" || sends[0].Input.Key != "s-1/turn-1/c1/ops-hook/2" {
		t.Fatalf("commands: %v", renderAll(r.Commands))
	}
	if !slices.Contains(eventTypes(r.Commands), wire.EventInterruptExpiring) {
		t.Fatalf("no interrupt_expiring: %v", eventTypes(r.Commands))
	}
}
