package session

import (
	"strconv"
	"time"
)

// RecoveryPolicy is an agent's turn recovery budget. Each Step retries by
// its own limits (Limits.MaximumAttempts, Limits.ScheduleToClose); the
// budget bounds what one turn spends on retries in all, so a turn that
// keeps failing (a crash loop, a provider that keeps erroring) fails with
// a clear last_turn_error instead of retrying for as long as each Step
// allows. Waiting for a person (approvals, questions, durable waits) is
// not a Step and never counts.
type RecoveryPolicy struct {
	// MaxAttempts is the most recovery attempts (Step attempts after each
	// Step's first: RunModel, CompactContext, CallTool) one turn makes; 0:
	// no such bound.
	MaxAttempts int32 `json:"max_attempts,omitempty"`
	// NoProgressTimeoutMs bounds how long one of those Steps may go
	// without finishing, its retries and the wait for a worker included; 0:
	// no such bound.
	NoProgressTimeoutMs int64 `json:"no_progress_timeout_ms,omitempty"`
}

// StepStop says what stopped a Step that failed: its attempts ran out,
// its time ran out (schedule-to-close), or anything else (an error that
// is not retried, a cancel).
type StepStop int8

const (
	StopOther StepStop = iota
	StopAttempts
	StopTimeout
)

// recoveryBound returns a Step's limits under the turn's recovery budget:
// at most the attempts the turn has left, plus the first, and at most the
// no-progress timeout in all.
func (s *State) recoveryBound(l Limits) Limits {
	r := s.Options.Recovery
	if r == nil {
		return l
	}
	if r.MaxAttempts > 0 {
		allowed := 1 + max(int32(0), r.MaxAttempts-int32(s.TurnRetries))
		if l.MaximumAttempts == 0 || l.MaximumAttempts > allowed {
			l.MaximumAttempts = allowed
		}
	}
	if d := time.Duration(r.NoProgressTimeoutMs) * time.Millisecond; d > 0 && (l.ScheduleToClose == 0 || l.ScheduleToClose > d) {
		l.ScheduleToClose = d
	}
	return l
}

// countRetries adds a finished Step's recovery attempts to the turn's.
func (s *State) countRetries(attempt int) {
	if attempt > 1 {
		s.TurnRetries += attempt - 1
	}
}

// recoveryStopped returns why the turn's recovery budget, not the Step's
// own limits (own), stopped a Step that failed on attempt with stop, or ""
// when it did not. It counts the failed Step's retries first.
func (s *State) recoveryStopped(step string, own Limits, attempt int, stop StepStop) string {
	s.countRetries(attempt)
	r := s.Options.Recovery
	if r == nil {
		return ""
	}
	switch {
	case stop == StopAttempts && r.MaxAttempts > 0 && (own.MaximumAttempts == 0 || int32(attempt) < own.MaximumAttempts):
		return "the turn ran out of its recovery budget: its Steps were retried " + strconv.Itoa(s.TurnRetries) +
			" times (recovery.max_attempts " + strconv.Itoa(int(r.MaxAttempts)) + "), and " + step + " failed on attempt " + strconv.Itoa(attempt)
	case stop == StopTimeout && r.NoProgressTimeoutMs > 0 && (own.ScheduleToClose == 0 || own.ScheduleToClose.Milliseconds() > r.NoProgressTimeoutMs):
		return "the turn made no progress: " + step + " did not finish within recovery.no_progress_timeout (" +
			formatDurationMs(r.NoProgressTimeoutMs) + ") after " + strconv.Itoa(attempt) + " attempt(s)"
	}
	return ""
}

// stepFailedReason is the last_turn_error of a turn whose model Step
// failed: the recovery budget's reason first, when it stopped the Step.
func (s *State) stepFailedReason(step string, own Limits, attempt int, stop StepStop, reason string) string {
	if why := s.recoveryStopped(step, own, attempt, stop); why != "" {
		return why + ": " + reason
	}
	return reason
}

// formatDurationMs renders ms the way Go renders a time.Duration.
func formatDurationMs(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}
