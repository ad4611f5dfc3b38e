package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestStartSessionIsIdempotentWithARequestID(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	opts := client.StartSessionOptions{FlowType: flowType, SessionID: "s-idem", RequestID: "req-1", InitialMessage: "hello"}
	for i := 0; i < 2; i++ {
		id, err := s.Sessions.StartSession(ctx(t), opts)
		if err != nil || id != "s-idem" {
			t.Fatalf("start %d = %q, %v", i, id, err)
		}
	}
	opts.RequestID = "req-2"
	if _, err := s.Sessions.StartSession(ctx(t), opts); !errors.Is(err, client.ErrSessionExists) {
		t.Fatalf("start with another request ID = %v, want ErrSessionExists", err)
	}
	if _, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{}); err == nil {
		t.Fatal("start without a flow type succeeded")
	}
	// The session runs once a worker comes.
	s.StartWorker()
	snap := s.WaitForSnapshot("the answer", "s-idem", idleWithAnswer)
	wantAnswer(t, snap, "echo: hello")
	if snap.Usage.ModelCalls != 1 {
		t.Errorf("model calls = %d, want 1", snap.Usage.ModelCalls)
	}
}

// TestSessionsAreSearchableByTheStepsTheyWaitIn checks the ActiveStepTypes
// search attribute: one query finds every session waiting for a person.
func TestSessionsAreSearchableByTheStepsTheyWaitIn(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	waiting := start(t, s, "call:approve_write:q")
	idle := start(t, s, "hello")
	snap := s.WaitForSnapshot("a pending approval", waiting, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	s.WaitForSnapshot("the answer", idle, idleWithAnswer)
	query := func(q string) ([]string, error) {
		resp, err := s.Client.ListWorkflow(ctx(t), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: q})
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		return ids, nil
	}
	expect := func(q string, want ...string) {
		t.Helper()
		var got []string
		err := agenttest.WaitFor(context.Background(), q, 30*time.Second, func() (bool, error) {
			ids, err := query(q)
			got = ids
			return err == nil && len(ids) == len(want) && (len(want) == 0 || ids[0] == want[0]), err
		})
		if err != nil {
			t.Fatalf("%v; got %v, want %v", err, got, want)
		}
	}
	expect(`ActiveStepTypes = "AwaitToolApproval"`, waiting)
	expect(`ActiveStepTypes = "AwaitUserMessage"`, idle)
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), waiting, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID}); err != nil || !ok {
		t.Fatalf("reject: %v %v", ok, err)
	}
	s.WaitForSnapshot("the answer after the rejection", waiting, idleWithAnswer)
	expect(`ActiveStepTypes = "AwaitToolApproval"`)
}

// TestActiveStepSearchModeDisabled: a session started with the search
// disabled is never found by the Steps it waits in, while one started
// after it with the default mode is; so for a raw Temporal client's start
// without a mode and with active_step_types; an unknown mode is refused
// before anything starts.
func TestActiveStepSearchModeDisabled(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.StartWorker()
	hidden, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, InitialMessage: "call:approve_write:h", ActiveStepSearchMode: wire.ActiveStepSearchDisabled})
	if err != nil {
		t.Fatal(err)
	}
	shown := start(t, s, "call:approve_write:s")
	// A raw Temporal client's start: without a mode it is not searchable
	// (the reference's start_flow), with active_step_types it is.
	for id, mode := range map[string]string{"raw-hidden": "", "raw-shown": wire.ActiveStepSearchTypes} {
		if _, err := s.Client.ExecuteWorkflow(ctx(t), temporalclient.StartWorkflowOptions{ID: id, TaskQueue: wire.DefaultTaskQueue}, flowType,
			wire.StartInput{InitialMessage: "call:approve_write:" + id, ActiveStepSearchMode: mode}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{hidden, shown, "raw-hidden", "raw-shown"} {
		s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	}
	waitingIn(t, s, shown, wire.StepAwaitToolApproval)
	waitingIn(t, s, "raw-shown", wire.StepAwaitToolApproval)
	resp, err := s.Client.ListWorkflow(ctx(t), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: `ActiveStepTypes = "AwaitToolApproval"`})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.GetExecutions() {
		if id := e.GetExecution().GetWorkflowId(); id == hidden || id == "raw-hidden" {
			t.Errorf("the session %s, whose search is off, was found", id)
		}
	}
	if _, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, ActiveStepSearchMode: "everything"}); err == nil || !strings.Contains(err.Error(), `active_step_search_mode "everything"`) {
		t.Errorf("unknown mode: %v", err)
	}
}
