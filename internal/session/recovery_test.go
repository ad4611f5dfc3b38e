package session

import (
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func recoveryOpts(r *RecoveryPolicy) Options {
	o := opts()
	o.Recovery = r
	o.RunModel.MaximumAttempts = 10
	o.Tool.MaximumAttempts = 10
	o.Policies.Policies["lookup"] = contract.ToolPolicy{Effect: contract.EffectRead, RequiresApproval: ptr(false)}
	return o
}

// limitsOf returns the limits of the one Step command in cmds.
func limitsOf(t *testing.T, cmds []Command) Limits {
	t.Helper()
	for _, c := range cmds {
		switch c := c.(type) {
		case RunModel:
			return c.Limits
		case RunTool:
			return c.Limits
		case CompactContext:
			return c.Limits
		}
	}
	t.Fatalf("no Step in %s", renderAll(cmds))
	return Limits{}
}

func TestRecoveryBudgetBoundsEachStep(t *testing.T) {
	// The first model call may use the whole budget; the turn's retries
	// shrink what the next Steps may use; a new turn starts afresh.
	s := startedWith(t, recoveryOpts(&RecoveryPolicy{MaxAttempts: 3, NoProgressTimeoutMs: 90_000}))
	if got := s.runModel().Limits; got.MaximumAttempts != 4 || got.ScheduleToClose != 90*time.Second {
		t.Errorf("first RunModel limits %+v; want 4 attempts within 90s", got)
	}
	cmds := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: withAttempt(toolsRequested(call("c1", "lookup", "read")), 3), NowMs: now}).Commands
	if got := limitsOf(t, cmds); got.MaximumAttempts != 2 || got.ScheduleToClose != 90*time.Second || s.TurnRetries != 2 {
		t.Errorf("tool limits %+v after 2 retries (%d); want 2 attempts within 90s", got, s.TurnRetries)
	}
	cmds = s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "c1", Outcome: ToolOutcome{Output: ptr("found"), Attempt: 2}}).Commands
	if got := limitsOf(t, cmds); got.MaximumAttempts != 1 || s.TurnRetries != 3 {
		t.Errorf("RunModel limits %+v after 3 retries (%d); want 1 attempt", got, s.TurnRetries)
	}
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: withAttempt(completed("done"), 1), NowMs: now})
	send(s, "again")
	s.Apply(UserMessageBuilt{TurnID: "turn-2", Message: userMsg("again"), Attempt: 1})
	if got := s.runModel().Limits; got.MaximumAttempts != 4 || s.TurnRetries != 0 {
		t.Errorf("turn-2 RunModel limits %+v (retries %d); want the whole budget again", got, s.TurnRetries)
	}

	// The Step's own limits stay when they are tighter.
	o := recoveryOpts(&RecoveryPolicy{MaxAttempts: 20, NoProgressTimeoutMs: int64(time.Hour / time.Millisecond)})
	s = startedWith(t, o)
	if got := s.runModel().Limits; got.MaximumAttempts != 10 || got.ScheduleToClose != 30*time.Minute {
		t.Errorf("RunModel limits %+v; want its own 10 attempts within 30m", got)
	}
	// Without a budget nothing changes.
	s = startedWith(t, recoveryOpts(nil))
	if got := s.runModel().Limits; got != s.Options.RunModel {
		t.Errorf("RunModel limits %+v; want %+v", got, s.Options.RunModel)
	}
}

func TestTurnPastItsRecoveryBudgetFails(t *testing.T) {
	tests := []struct {
		name    string
		policy  RecoveryPolicy
		failure Input
		wantErr string // "" : the Step's own failure, unchanged
	}{
		{
			name:    "model attempts past the budget",
			policy:  RecoveryPolicy{MaxAttempts: 2},
			failure: ModelStepFailed{TurnID: "turn-1", Reason: "RunModel failed: 503", Attempt: 3, Stop: StopAttempts},
			wantErr: "the turn ran out of its recovery budget: its Steps were retried 2 times (recovery.max_attempts 2), and RunModel failed on attempt 3: RunModel failed: 503",
		},
		{
			name:    "model attempts of its own limit",
			policy:  RecoveryPolicy{MaxAttempts: 20},
			failure: ModelStepFailed{TurnID: "turn-1", Reason: "RunModel failed: 503", Attempt: 10, Stop: StopAttempts},
			wantErr: "RunModel failed: 503",
		},
		{
			name:    "an error that is not retried",
			policy:  RecoveryPolicy{MaxAttempts: 2, NoProgressTimeoutMs: 5000},
			failure: ModelStepFailed{TurnID: "turn-1", Reason: "RunModel failed: bad request", Attempt: 1, Stop: StopOther},
			wantErr: "RunModel failed: bad request",
		},
		{
			name:    "no progress",
			policy:  RecoveryPolicy{NoProgressTimeoutMs: 5000},
			failure: ModelStepFailed{TurnID: "turn-1", Reason: "RunModel failed: activity ScheduleToClose timeout", Attempt: 3, Stop: StopTimeout},
			wantErr: "the turn made no progress: RunModel did not finish within recovery.no_progress_timeout (5s) after 3 attempt(s): RunModel failed: activity ScheduleToClose timeout",
		},
		{
			name:    "no progress longer than the Step's own schedule-to-close",
			policy:  RecoveryPolicy{NoProgressTimeoutMs: int64(time.Hour / time.Millisecond)},
			failure: ModelStepFailed{TurnID: "turn-1", Reason: "RunModel failed: timeout", Attempt: 3, Stop: StopTimeout},
			wantErr: "RunModel failed: timeout",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startedWith(t, recoveryOpts(&tt.policy))
			cmds := s.Apply(tt.failure).Commands
			if _, ok := nonEmit(cmds)[0].(RecordTurnFailure); !ok || s.LastTurnError != tt.wantErr {
				t.Fatalf("commands %s, last_turn_error %q; want record_turn_failure with %q", renderAll(cmds), s.LastTurnError, tt.wantErr)
			}
		})
	}
}

func TestToolStepPastTheRecoveryBudgetFailsTheTurnOnceItsCallsAreFinal(t *testing.T) {
	s := startedWith(t, recoveryOpts(&RecoveryPolicy{MaxAttempts: 2}))
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: withAttempt(toolsRequested(call("c1", "lookup", "read"), call("c2", "lookup", "read")), 1), NowMs: now})
	// c1's Step had 3 attempts (1 + the 2 the turn had left) and failed.
	cmds := s.Apply(ToolStepFailed{TurnID: "turn-1", ToolCallID: "c1", Detail: "connection reset", Attempt: 3, Stop: StopAttempts}).Commands
	if nonEmit(cmds) != nil || s.ToolCalls[0].Status != wire.ToolCallFailed || s.ToolCalls[0].Error != "connection reset" {
		t.Fatalf("commands %s, record %+v; want c1 failed and c2 still running", renderAll(cmds), s.ToolCalls[0])
	}
	// c2 finishes: the turn fails instead of calling the model again, and
	// its note reports both calls.
	cmds = s.Apply(ToolStepDone{TurnID: "turn-1", ToolCallID: "c2", Outcome: ToolOutcome{Output: ptr("found"), Attempt: 1}}).Commands
	rec, ok := nonEmit(cmds)[0].(RecordTurnFailure)
	want := "the turn ran out of its recovery budget: its Steps were retried 2 times (recovery.max_attempts 2), and the tool step of lookup (c1) failed on attempt 3: connection reset"
	if !ok || s.LastTurnError != want || !strings.Contains(rec.Input.Note, "succeeded: found") {
		t.Fatalf("commands %s, last_turn_error %q; want record_turn_failure with %q", renderAll(cmds), s.LastTurnError, want)
	}
	s.Apply(TurnFailureRecorded{TurnID: "turn-1", Attempt: 1})
	if s.Status != wire.StatusWaitingForUserMessage || s.RecoveryError != "" || s.TurnRetries != 0 || s.LastTurnError != want {
		t.Errorf("after the failed turn: status %s, recovery error %q, retries %d, last_turn_error %q", s.Status, s.RecoveryError, s.TurnRetries, s.LastTurnError)
	}
}

// TestSingleAttemptToolFailingUnderARecoveryBudget: a write's Step has one
// attempt of its own, so its failure on attempt 1 is the call's outcome
// (unknown, told to the model), not the turn's budget running out.
func TestSingleAttemptToolFailingUnderARecoveryBudget(t *testing.T) {
	o := recoveryOpts(&RecoveryPolicy{MaxAttempts: 5})
	o.Version = CurrentVersion
	o.Policies.Policies["charge"] = contract.ToolPolicy{Effect: contract.EffectNonIdempotentWrite, RequiresApproval: ptr(false)}
	s := startedWith(t, o)
	cmds := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: withAttempt(toolsRequested(call("c1", "charge", contract.EffectNonIdempotentWrite)), 1), NowMs: now}).Commands
	if l := limitsOf(t, cmds); l.MaximumAttempts != 1 {
		t.Fatalf("the write's Step has %d attempts, want 1", l.MaximumAttempts)
	}
	cmds = s.Apply(ToolStepFailed{TurnID: "turn-1", ToolCallID: "c1", Detail: "worker lost", Attempt: 1, Stop: StopAttempts}).Commands
	if s.RecoveryError != "" || s.ToolCalls[0].Status != wire.ToolCallOutcomeUnknown {
		t.Fatalf("recovery error %q, record %+v; want the call outcome_unknown and no budget failure", s.RecoveryError, s.ToolCalls[0])
	}
	if _, ok := nonEmit(cmds)[0].(RunModel); !ok {
		t.Fatalf("commands %s; want the model told of the outcome", renderAll(cmds))
	}
	// A session of an older version replays as it ran: it weighed the
	// failure against the tool limits, and the budget failed the turn.
	o.Version = ToolBudgetVersion - 1
	s = startedWith(t, o)
	s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: withAttempt(toolsRequested(call("c1", "charge", contract.EffectNonIdempotentWrite)), 1), NowMs: now})
	s.Apply(ToolStepFailed{TurnID: "turn-1", ToolCallID: "c1", Detail: "worker lost", Attempt: 1, Stop: StopAttempts})
	if !strings.HasPrefix(s.RecoveryError, "the turn ran out of its recovery budget") {
		t.Errorf("version %d: recovery error %q; want the budget's, as that version ran", o.Version, s.RecoveryError)
	}
}

func withAttempt(o ModelOutcome, attempt int) ModelOutcome {
	o.Attempt = attempt
	return o
}
