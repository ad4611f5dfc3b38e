package e2e

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/httpclient"
)

// TestHTTPClientDrivesASession drives a session through every route of the
// public Go client against a real worker: start, list, snapshot, the event
// stream from the snapshot's token, an approval, the turn's text, stored
// messages, a queued message deleted, close, and terminate (refused
// without the operator's token).
func TestHTTPClientDrivesASession(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	const tokenOps = "ops-token-0123456789abcdef"
	s := agenttest.NewStack(t, testConfig(plugin)+fmt.Sprintf(`
http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: all, token: %s}
      - {name: ops, token: %s, operator: true}
`, port, tokenAll, tokenOps))
	s.StartWorker()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx := ctx(t)
	c, err := httpclient.New(base, tokenAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := agenttest.WaitFor(ctx, "the API ready", time.Minute, func() (bool, error) { return c.Live(ctx) == nil && c.Ready(ctx) == nil, nil }); err != nil {
		t.Fatal(err)
	}
	agents, err := c.Agents(ctx)
	if err != nil || !slices.ContainsFunc(agents, func(a httpclient.Agent) bool { return a.Name == "test" && a.FlowType == flowType }) {
		t.Fatalf("Agents = %+v, %v", agents, err)
	}
	id, err := c.StartSession(ctx, httpclient.StartRequest{Agent: "test", InitialMessage: "call:approve_write:a"})
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := c.Snapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	es, err := c.Events(ctx, id, token, "")
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	var text httpclient.TurnText
	next := func(until string) httpclient.Event {
		t.Helper()
		for {
			d, err := es.Next()
			if err != nil {
				t.Fatalf("waiting for %s: %v", until, err)
			}
			text.Add(d.Event)
			if d.Event.Type == until {
				return d.Event
			}
		}
	}
	raised := next(wire.EventInterruptRaised)
	var in struct {
		InterruptID string `json:"interrupt_id"`
		ToolName    string `json:"tool_name"`
	}
	if err := raised.Payload.Decode(&in); err != nil || in.ToolName != "approve_write" {
		t.Fatalf("interrupt_raised %s: %v", raised.Payload, err)
	}
	err = agenttest.WaitFor(ctx, "the session listed as waiting for approval", time.Minute, func() (bool, error) {
		page, err := c.ListSessions(ctx, httpclient.ListSessionsOptions{WaitingFor: []string{wire.WaitingForApproval}})
		return err == nil && slices.ContainsFunc(page.Sessions, func(s wire.SessionSummary) bool { return s.SessionID == id }), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.ResolveInterrupt(ctx, id, in.InterruptID, httpclient.Resolution{Approved: true}); !ok || err != nil {
		t.Fatalf("ResolveInterrupt = %v, %v", ok, err)
	}
	if ok, err := c.ResolveInterrupt(ctx, id, in.InterruptID, httpclient.Resolution{Approved: true}); ok || err != nil {
		t.Errorf("a second ResolveInterrupt = %v, %v; want false", ok, err)
	}
	next(wire.EventTurnCompleted)
	answer := "done: approve_write=succeeded:wrote a"
	if !strings.Contains(text.String(), answer) {
		t.Errorf("streamed text %q, want it to hold %q", text.String(), answer)
	}
	page, err := c.Messages(ctx, id, 0, 0)
	if err != nil || len(page.Messages) < 2 || page.Messages[len(page.Messages)-1].Text != answer {
		t.Fatalf("Messages = %+v, %v", page, err)
	}

	// A second turn waits for approval; a message sent meanwhile is queued
	// and deleted before it runs.
	if ok, err := c.SendMessage(ctx, id, "call:approve_write:b"); !ok || err != nil {
		t.Fatalf("SendMessage = %v, %v", ok, err)
	}
	next(wire.EventInterruptRaised)
	if ok, err := c.SendMessage(ctx, id, "queued one"); !ok || err != nil {
		t.Fatalf("SendMessage = %v, %v", ok, err)
	}
	snap, _, err := c.Snapshot(ctx, id)
	if err != nil || len(snap.QueuedMessages) != 1 {
		t.Fatalf("Snapshot = %+v, %v", snap, err)
	}
	if ok, err := c.DeleteQueued(ctx, id, snap.QueuedMessages[0].MessageID); !ok || err != nil {
		t.Errorf("DeleteQueued = %v, %v", ok, err)
	}
	if ok, err := c.DeleteQueued(ctx, id, snap.QueuedMessages[0].MessageID); ok || err != nil {
		t.Errorf("a second DeleteQueued = %v, %v; want false", ok, err)
	}
	if ok, err := c.Close(ctx, id); !ok || err != nil {
		t.Fatalf("Close = %v, %v", ok, err)
	}
	if _, err := c.SendMessage(ctx, id, "after close"); !errors.Is(err, httpclient.ErrSessionClosed) && !httpclient.IsSessionClosed(err) {
		t.Errorf("SendMessage after close = %v, want session_closed", err)
	}
	var apiErr *httpclient.APIError
	if _, err := c.Terminate(ctx, id, "test"); !errors.As(err, &apiErr) || apiErr.StatusCode != 403 {
		t.Errorf("Terminate without the operator token = %v, want 403", err)
	}
	ops, err := httpclient.New(base, tokenOps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := ops.Terminate(ctx, id, "the test is over"); !ok || err != nil {
		t.Errorf("Terminate = %v, %v", ok, err)
	}
}
