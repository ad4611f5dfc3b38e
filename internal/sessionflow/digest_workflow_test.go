package sessionflow

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/dex-agents/dex-agent-worker/internal/approvaldigest"
	"github.com/dex-agents/dex-agent-worker/internal/session"
)

type recordingSink struct {
	mu     sync.Mutex
	events []session.Event
}

func (r *recordingSink) Publish(_ string, e session.Event, _ string, _ uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recordingSink) payload(eventType string) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Type == eventType {
			var p map[string]any
			_ = json.Unmarshal(e.Payload, &p)
			return p
		}
	}
	return nil
}

func signer(t *testing.T, required bool) *approvaldigest.Signer {
	t.Helper()
	s, err := approvaldigest.NewSigner(required, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func updateErrType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

// TestWorkflowApprovalDigests: the snapshot and the live interrupt_raised
// event carry the approval's digest; a resolve_interrupt with another
// digest, or (when required) none, is refused by the validator, so it
// leaves no trace; the right one approves.
func TestWorkflowApprovalDigests(t *testing.T) {
	sink := &recordingSink{}
	rt := runtime(time.Hour)
	rt.Events = sink
	rt.Approvals = signer(t, true)
	env, f := newEnv(t, rt)
	want := rt.Approvals.Sign(approvaldigest.Subject{SessionID: "default-test-workflow-id", ToolCallID: "c1", ToolName: "refund", Arguments: "{}"})
	var tamperedErr, missingErr, okErr error
	var tamperedOK, missingOK, approved bool
	env.RegisterDelayedCallback(func() {
		s := snapshot(t, env)
		if len(s.PendingInterrupts) != 1 || s.PendingInterrupts[0].Digest != want {
			t.Fatalf("snapshot interrupts = %+v, want digest %s", s.PendingInterrupts, want)
		}
		if p := sink.payload(wire.EventInterruptRaised); p == nil || p["digest"] != want {
			t.Fatalf("interrupt_raised = %v, want digest %s", p, want)
		}
		// The digest of other arguments for the same call ID.
		other := rt.Approvals.Sign(approvaldigest.Subject{SessionID: "default-test-workflow-id", ToolCallID: "c1", ToolName: "refund", Arguments: `{"amount":100}`})
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true, Digest: other}, &tamperedOK, &tamperedErr)
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &missingOK, &missingErr)
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		if s := snapshot(t, env); len(s.PendingInterrupts) != 1 {
			t.Fatalf("a refused approval resolved the interrupt: %+v", s.PendingInterrupts)
		}
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true, Digest: want}, &approved, &okErr)
	}, 2*time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, 3*time.Minute)
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
	if tamperedOK || updateErrType(tamperedErr) != wire.ApprovalDigestErrorType || !strings.Contains(tamperedErr.Error(), "the digest does not match approval c1") {
		t.Errorf("tampered digest: %v, %v", tamperedOK, tamperedErr)
	}
	if missingOK || updateErrType(missingErr) != wire.ApprovalDigestErrorType || !strings.Contains(missingErr.Error(), "needs its digest") {
		t.Errorf("missing digest: %v, %v", missingOK, missingErr)
	}
	if !approved || okErr != nil {
		t.Errorf("matching digest: %v, %v", approved, okErr)
	}
	if n := f.toolCalls.Load(); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
}

// TestWorkflowDigestsAreOptionalUnlessRequired: without required, an
// approval without a digest passes; without a signer, digests are absent
// and ignored.
func TestWorkflowDigestsAreOptionalUnlessRequired(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signer *approvaldigest.Signer
	}{{"not required", signer(t, false)}, {"no signer", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := runtime(time.Hour)
			rt.Approvals = tc.signer
			env, f := newEnv(t, rt)
			var ok bool
			var err error
			env.RegisterDelayedCallback(func() {
				s := snapshot(t, env)
				if (s.PendingInterrupts[0].Digest != "") != (tc.signer != nil) {
					t.Errorf("digest %q with signer %v", s.PendingInterrupts[0].Digest, tc.signer != nil)
				}
				update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &ok, &err)
			}, time.Minute)
			env.RegisterDelayedCallback(env.CancelWorkflow, 2*time.Minute)
			env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
			if !ok || err != nil || f.toolCalls.Load() != 1 {
				t.Errorf("approval without digest = %v, %v; tool ran %d times", ok, err, f.toolCalls.Load())
			}
		})
	}
}

// TestWorkflowExpiringAndExtension: interrupt_expiring is written the lead
// before the deadline, extend_interrupt moves the deadline (the approval
// then succeeds past the old one), and an extension past the maximum is
// refused with InterruptNotExtendedErrorType.
func TestWorkflowExpiringAndExtension(t *testing.T) {
	sink := &recordingSink{}
	rt := runtime(time.Hour)
	rt.Events = sink
	rt.Options.InterruptExpiringLeadMs = (10 * time.Minute).Milliseconds()
	rt.Options.MaxInterruptDeadlineMs = (3 * time.Hour).Milliseconds()
	env, f := newEnv(t, rt)
	var ext wire.ExtendInterruptResult
	var extErr, farErr, okErr error
	var approved bool
	env.RegisterDelayedCallback(func() {
		if p := sink.payload(wire.EventInterruptExpiring); p != nil {
			t.Errorf("warned 40 minutes in: %v", p)
		}
	}, 40*time.Minute)
	env.RegisterDelayedCallback(func() {
		if p := sink.payload(wire.EventInterruptExpiring); p == nil || p["seconds_left"] != float64(600) {
			t.Errorf("interrupt_expiring 51 minutes in = %v", p)
		}
		env.UpdateWorkflow(wire.UpdateExtendInterrupt, "", &testsuite.TestUpdateCallback{
			OnReject: func(e error) { extErr = e },
			OnComplete: func(v any, e error) {
				if e != nil {
					extErr = e
					return
				}
				ext, _ = v.(wire.ExtendInterruptResult)
			},
		}, wire.ExtendInterruptRequest{InterruptID: "c1", ExtendBySeconds: 3600})
		env.UpdateWorkflow(wire.UpdateExtendInterrupt, "", &testsuite.TestUpdateCallback{
			OnReject: func(e error) { farErr = e }, OnComplete: func(v any, e error) { farErr = e },
		}, wire.ExtendInterruptRequest{InterruptID: "c1", ExtendBySeconds: 3 * 3600})
	}, 51*time.Minute)
	env.RegisterDelayedCallback(func() {
		// Past the first deadline, before the new one.
		update(env, wire.UpdateResolveInterrupt, wire.ResolveInterruptRequest{InterruptID: "c1", Approved: true}, &approved, &okErr)
	}, 90*time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, 100*time.Minute)
	env.ExecuteWorkflow("TestAgent", WorkflowInput{InitialMessage: "refund"})
	if extErr != nil || !ext.Extended || ext.Deadline == "" {
		t.Errorf("extension = %+v, %v", ext, extErr)
	}
	if updateErrType(farErr) != wire.InterruptNotExtendedErrorType || !strings.Contains(farErr.Error(), "past its latest deadline") {
		t.Errorf("extension past the maximum: %v", farErr)
	}
	if p := sink.payload(wire.EventInterruptExtended); p == nil || p["deadline"] != ext.Deadline {
		t.Errorf("interrupt_extended = %v", p)
	}
	if !approved || okErr != nil || f.toolCalls.Load() != 1 {
		t.Errorf("approval after the old deadline = %v, %v; tool ran %d", approved, okErr, f.toolCalls.Load())
	}
}
