package session

import (
	"slices"
	"strconv"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Notifications. An agent's notify rules send each new approval or
// question to a channel (a webhook, Slack) through the SendNotification
// Step, and, when nobody answered within escalate_after, send it again to
// another channel. The session decides when; the Step (package notify)
// composes and sends. A notification is best effort for the session: its
// Step retries, and a failure is only reported (notification_failed), never
// blocking the turn. Expiry still fails closed: the deadline rejects the
// call whatever was sent.

// NotifyRule is one of an agent's notify rules, fixed when the session
// starts.
type NotifyRule struct {
	// Kinds are the interrupt kinds it sends (approval, question).
	Kinds   []string `json:"kinds"`
	Channel string   `json:"channel"`
	// EscalateAfterMs, when set, sends the interrupt to EscalateTo this
	// long after it was raised if it is still pending.
	EscalateAfterMs int64  `json:"escalate_after_ms,omitempty"`
	EscalateTo      string `json:"escalate_to,omitempty"`
}

// Notice is a notified interrupt whose escalation waits.
type Notice struct {
	InterruptID string `json:"interrupt_id"`
	Rule        int    `json:"rule"`
	AtMs        int64  `json:"at_ms"`
}

// Commands and inputs of notifications.
type (
	// SendNotification runs the SendNotification Step; its failure is
	// NotificationFailed.
	SendNotification struct {
		ActivityID string
		Input      NotificationInput
	}
	// StartEscalationTimer arms an escalation, DelayMs from now; it fires
	// EscalationTimerFired.
	StartEscalationTimer struct {
		InterruptID string
		Rule        int
		DelayMs     int64
	}
	// NotificationFailed says a notification could not be sent.
	NotificationFailed struct {
		Input  NotificationInput
		Reason string
	}
	// EscalationTimerFired is an escalation's timer.
	EscalationTimerFired struct {
		InterruptID string
		Rule        int
	}
)

func (SendNotification) isCommand()     {}
func (StartEscalationTimer) isCommand() {}
func (NotificationFailed) isInput()     {}
func (EscalationTimerFired) isInput()   {}

// NotificationInput is the SendNotification Step's input: the interrupt as
// people see it (the arguments' preview, and their reference, which the
// approval digest binds), the channel and the idempotency key.
type NotificationInput struct {
	SessionID    string   `json:"session_id"`
	Agent        string   `json:"agent"`
	InterruptID  string   `json:"interrupt_id"`
	Kind         string   `json:"kind"`
	ToolCallID   string   `json:"tool_call_id"`
	ToolName     string   `json:"tool_name"`
	Arguments    string   `json:"arguments,omitempty"`
	ArgumentsRef string   `json:"arguments_ref,omitempty"`
	Question     string   `json:"question,omitempty"`
	Choices      []string `json:"choices,omitempty"`
	Deadline     string   `json:"deadline,omitempty"`
	Channel      string   `json:"channel"`
	Escalation   bool     `json:"escalation,omitempty"`
	// Expiring is set on the notice sent when the interrupt's deadline
	// is near (interrupt_expiring).
	Expiring bool `json:"expiring,omitempty"`
	// Key is the same on every attempt: a receiver drops a repeat.
	Key string `json:"key"`
}

// StepSendNotification names the Step.
const StepSendNotification = "SendNotification"

// escalationKey is the StepKey of an escalation's timer.
func escalationKey(interruptID string, rule int) string {
	return "escalate:" + interruptID + "/" + strconv.Itoa(rule)
}

// notifications is what the session sends after an input: a notice of
// each interrupt raised that a rule covers (and its escalation's timer),
// and the cancel of the escalations of interrupts no longer pending.
func (s *State) notifications() []Command {
	if len(s.Options.Notify) == 0 || !s.Started {
		return nil
	}
	var cmds []Command
	kept := s.Notices[:0]
	for _, n := range s.Notices {
		if s.findInterrupt(n.InterruptID) >= 0 {
			kept = append(kept, n)
			continue
		}
		cmds = append(cmds, CancelStep{Key: escalationKey(n.InterruptID, n.Rule)})
	}
	s.Notices = kept
	for _, in := range s.Interrupts {
		if slices.Contains(s.Notified, in.InterruptID) {
			continue
		}
		s.Notified = append(s.Notified, in.InterruptID)
		for r, rule := range s.Options.Notify {
			if !slices.Contains(rule.Kinds, string(in.Kind)) {
				continue
			}
			cmds = append(cmds, s.sendNotice(in, rule.Channel, noticeFirst))
			if rule.EscalateAfterMs > 0 && rule.EscalateTo != "" && in.RaisedUnixMs > 0 {
				s.Notices = append(s.Notices, Notice{InterruptID: in.InterruptID, Rule: r, AtMs: in.RaisedUnixMs + rule.EscalateAfterMs})
				cmds = append(cmds, StartEscalationTimer{InterruptID: in.InterruptID, Rule: r, DelayMs: rule.EscalateAfterMs})
			}
		}
	}
	// The IDs notified are kept only while pending: an interrupt ID is not
	// raised twice in a turn.
	s.Notified = slices.DeleteFunc(s.Notified, func(id string) bool { return s.findInterrupt(id) < 0 })
	return cmds
}

// Notices of one interrupt: the first, the escalation, the deadline's
// warning. Each has its own idempotency key.
const (
	noticeFirst      = "0"
	noticeEscalation = "1"
	noticeExpiring   = "2"
)

// sendNotice is the SendNotification Step of interrupt in to channel.
func (s *State) sendNotice(in Interrupt, channel, level string) SendNotification {
	escalation, expiring := level == noticeEscalation, level == noticeExpiring
	key := s.SessionID + "/" + s.ActiveTurnID + "/" + in.InterruptID + "/" + channel + "/" + level
	n := NotificationInput{
		SessionID: s.SessionID, Agent: s.Options.Agent, InterruptID: in.InterruptID, Kind: string(in.Kind),
		ToolCallID: in.ToolCallID, ToolName: in.ToolName, Question: in.Question, Choices: in.Choices,
		Deadline: formatDeadline(in.DeadlineUnixMs), Channel: channel, Escalation: escalation, Expiring: expiring, Key: key,
	}
	if c := s.findCall(in.ToolCallID); c >= 0 {
		n.Arguments = s.ToolCalls[c].Arguments
		n.ArgumentsRef = s.refs(in.ToolCallID).ArgumentsRef
	}
	return SendNotification{ActivityID: "notify/" + s.ActiveTurnID + "/" + in.InterruptID + "/" + channel + "/" + level, Input: n}
}

// escalationTimerFired sends the escalation of a still pending interrupt.
func (s *State) escalationTimerFired(f EscalationTimerFired) Result {
	i := slices.IndexFunc(s.Notices, func(n Notice) bool { return n.InterruptID == f.InterruptID && n.Rule == f.Rule })
	in := s.findInterrupt(f.InterruptID)
	if i < 0 || in < 0 || f.Rule >= len(s.Options.Notify) {
		return Result{}
	}
	s.Notices = slices.Delete(s.Notices, i, i+1)
	return applied([]Command{s.sendNotice(s.Interrupts[in], s.Options.Notify[f.Rule].EscalateTo, noticeEscalation)})
}

// notificationFailed reports a notification that could not be sent.
func (s *State) notificationFailed(f NotificationFailed) Result {
	return applied([]Command{Emit{Event: newEvent(wire.EventNotificationFailed, s.ActiveTurnID, waitingStepAttempt, wire.NotificationFailedPayload{
		InterruptID: f.Input.InterruptID, Channel: f.Input.Channel, Escalation: f.Input.Escalation, Reason: f.Reason,
	}).forStep(toolStep(s.ActiveTurnID, f.Input.ToolCallID))}})
}

// expiringNotices tell each rule's channel that interrupt in expires
// soon, when interrupt_expiring is written.
func (s *State) expiringNotices(in Interrupt) []Command {
	var cmds []Command
	for _, rule := range s.Options.Notify {
		if slices.Contains(rule.Kinds, string(in.Kind)) {
			cmds = append(cmds, s.sendNotice(in, rule.Channel, noticeExpiring))
		}
	}
	return cmds
}

// resumeEscalations arms the escalation timers again in a new run.
func (s *State) resumeEscalations(nowMs int64) []Command {
	var cmds []Command
	for _, n := range s.Notices {
		cmds = append(cmds, StartEscalationTimer{InterruptID: n.InterruptID, Rule: n.Rule, DelayMs: max(n.AtMs-nowMs, 1000)})
	}
	return cmds
}
