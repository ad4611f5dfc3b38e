package session

import (
	"fmt"
	"strconv"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// This file holds the deadlines of interrupts past the spec: the
// interrupt_expiring warning before a deadline, and extend_interrupt,
// which moves a deadline within the agent's maximum. It is pure, as
// state.go is.

// MaxExtendSeconds bounds one extension (ten years), far past any
// max_interrupt_deadline, so the arithmetic cannot overflow.
const MaxExtendSeconds = 10 * 365 * 24 * 3600

// ExtendInterrupt moves a pending interrupt's deadline ExtendBySeconds
// later (extend_interrupt).
type ExtendInterrupt struct {
	InterruptID     string
	ExtendBySeconds int64
	// NowMs is the workflow clock in Unix milliseconds.
	NowMs int64
}

func (ExtendInterrupt) isInput() {}

// CheckExtend returns why extend_interrupt refuses the request, as a
// message for the caller, or "" when it may apply. pending is false for an
// interrupt that is not pending (unknown, resolved), which the update
// answers with false, as resolve_interrupt does.
func (s *State) CheckExtend(in ExtendInterrupt) (refusal string, pending bool) {
	i := s.findInterrupt(in.InterruptID)
	if i < 0 {
		return "", false
	}
	it := s.Interrupts[i]
	switch {
	case in.ExtendBySeconds <= 0 || in.ExtendBySeconds > MaxExtendSeconds:
		return fmt.Sprintf("extend_by_seconds must be from 1 to %d, got %d", MaxExtendSeconds, in.ExtendBySeconds), true
	case it.DeadlineUnixMs == 0:
		return fmt.Sprintf("interrupt %s has no deadline to extend", it.InterruptID), true
	case in.NowMs >= it.DeadlineUnixMs:
		return fmt.Sprintf("the deadline of interrupt %s has passed (%s)", it.InterruptID, formatDeadline(it.DeadlineUnixMs)), true
	case s.Options.MaxInterruptDeadlineMs <= 0:
		return fmt.Sprintf("agent %s sets no max_interrupt_deadline, so its deadlines cannot be extended", s.Options.Agent), true
	}
	latest := s.latestDeadline(it)
	if to := it.DeadlineUnixMs + in.ExtendBySeconds*1000; to > latest {
		return fmt.Sprintf("extending interrupt %s by %ds would move its deadline to %s, past its latest deadline %s (max_interrupt_deadline %s after it was raised)",
			it.InterruptID, in.ExtendBySeconds, formatDeadline(to), formatDeadline(latest), formatSeconds(s.Options.MaxInterruptDeadlineMs)), true
	}
	return "", true
}

// latestDeadline is the latest deadline extensions may give the interrupt.
func (s *State) latestDeadline(it Interrupt) int64 {
	raised := it.RaisedUnixMs
	if raised == 0 {
		raised = it.DeadlineUnixMs - s.Options.InterruptDeadlineMs
	}
	return raised + s.Options.MaxInterruptDeadlineMs
}

func formatSeconds(ms int64) string {
	return strconv.FormatInt(ms/1000, 10) + "s"
}

// extendInterrupt moves the deadline and arms its timer again; the
// warning, when the agent has one, is written again before the new
// deadline.
func (s *State) extendInterrupt(in ExtendInterrupt) Result {
	if refusal, pending := s.CheckExtend(in); refusal != "" || !pending {
		return Result{}
	}
	i := s.findInterrupt(in.InterruptID)
	it := s.Interrupts[i]
	previous := it.DeadlineUnixMs
	it.DeadlineUnixMs += in.ExtendBySeconds * 1000
	it.Warned = false
	s.Interrupts[i] = it
	return applied([]Command{
		CancelTimer{InterruptID: it.InterruptID},
		Emit{Event: newEvent(wire.EventInterruptExtended, s.ActiveTurnID, waitingStepAttempt, wire.InterruptExtendedPayload{
			InterruptID: it.InterruptID, ToolCallID: it.ToolCallID, ToolName: it.ToolName, Kind: string(it.Kind),
			Deadline: formatDeadline(it.DeadlineUnixMs), PreviousDeadline: formatDeadline(previous),
			LatestDeadline: formatDeadline(s.latestDeadline(it)),
		}).forStep(toolStep(s.ActiveTurnID, it.ToolCallID))},
		s.deadlineTimer(it, in.NowMs),
	})
}

// deadlineTimer arms the timer of an interrupt's deadline: the time left,
// rounded up to whole seconds and at least one, as the spec's
// AwaitToolApproval waits. With a warning lead, the timer first fires at
// the warning (see expiring), unless that time has passed.
func (s *State) deadlineTimer(in Interrupt, nowMs int64) StartTimer {
	at := in.DeadlineUnixMs
	if lead := s.Options.InterruptExpiringLeadMs; lead > 0 && !in.Warned && at-lead > nowMs {
		at -= lead
	}
	ms := at - nowMs
	secs := (ms + 999) / 1000
	if secs < 1 {
		secs = 1
	}
	return StartTimer{InterruptID: in.InterruptID, DelayMs: secs * 1000}
}

// expiring handles a deadline timer that fired before the deadline: at
// the warning time it writes interrupt_expiring once; either way it arms
// the timer again.
func (s *State) expiring(i int, nowMs int64) []Command {
	in := s.Interrupts[i]
	var cmds []Command
	if lead := s.Options.InterruptExpiringLeadMs; lead > 0 && !in.Warned && nowMs >= in.DeadlineUnixMs-lead {
		in.Warned = true
		s.Interrupts[i] = in
		cmds = append(cmds, Emit{Event: newEvent(wire.EventInterruptExpiring, s.ActiveTurnID, waitingStepAttempt, wire.InterruptExpiringPayload{
			InterruptID: in.InterruptID, ToolCallID: in.ToolCallID, ToolName: in.ToolName, Kind: string(in.Kind),
			Deadline: formatDeadline(in.DeadlineUnixMs), SecondsLeft: (in.DeadlineUnixMs - nowMs + 999) / 1000,
		}).forStep(toolStep(s.ActiveTurnID, in.ToolCallID))})
		cmds = append(cmds, s.expiringNotices(in)...)
	}
	return append(cmds, s.deadlineTimer(in, nowMs))
}

// ApprovalSubject is what an approval's digest covers (package
// approvaldigest signs it outside the session's history).
type ApprovalSubject struct {
	SessionID    string
	ToolCallID   string
	ToolName     string
	Arguments    string
	ArgumentsRef string
}

// ApprovalSubject returns the subject of a pending approval interrupt;
// false for a question, or an interrupt that is not pending.
func (s *State) ApprovalSubject(interruptID string) (ApprovalSubject, bool) {
	i := s.findInterrupt(interruptID)
	if i < 0 || s.Interrupts[i].Kind != InterruptApproval {
		return ApprovalSubject{}, false
	}
	c := s.findCall(s.Interrupts[i].ToolCallID)
	if c < 0 {
		return ApprovalSubject{}, false
	}
	call := s.ToolCalls[c]
	return ApprovalSubject{
		SessionID: s.SessionID, ToolCallID: call.ToolCallID, ToolName: call.ToolName,
		Arguments: call.Arguments, ArgumentsRef: s.refs(call.ToolCallID).ArgumentsRef,
	}, true
}

// InterruptDeadline returns a pending interrupt's deadline (RFC 3339 UTC),
// "" without one or when it is not pending.
func (s *State) InterruptDeadline(interruptID string) string {
	if i := s.findInterrupt(interruptID); i >= 0 {
		return formatDeadline(s.Interrupts[i].DeadlineUnixMs)
	}
	return ""
}
