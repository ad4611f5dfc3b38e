package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// changeFeed follows GET /v1/sessions/changes as token; its channel gets
// "session_id type" for each change.
func changeFeed(t *testing.T, base, token string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/changes", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/sessions/changes: %s", resp.Status)
	}
	out := make(chan string, 256)
	opened := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if line == ": stream open" {
				close(opened)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var c wire.SessionChange
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					out <- "malformed: " + data
					continue
				}
				out <- c.SessionID + " " + c.Type
			}
		}
	}()
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the change feed never opened")
	}
	return out
}

// expectChanges reads the changes of session id from feed until it has
// want (in order), skipping other sessions' changes; it fails on a change
// of id that is not next in want.
func expectChanges(t *testing.T, who string, feed <-chan string, id string, want ...string) {
	t.Helper()
	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case c := <-feed:
			sid, typ, _ := strings.Cut(c, " ")
			if sid != id {
				continue
			}
			got = append(got, typ)
			if typ != want[len(got)-1] {
				t.Fatalf("%s: changes of %s were %q, want %q", who, id, got, want)
			}
		case <-timeout:
			t.Fatalf("%s: changes of %s were %q after 30 s, want %q", who, id, got, want)
		}
	}
}

// TestChangeFeedFollowsSessionsOfEveryClient: a session started through
// the Temporal client (as the CLI and other languages' clients start
// them, not through the HTTP API) shows in the change feed of the tokens
// that may see it, through its life: started, a turn that waits for an
// approval and then ends, renamed, closed. A token of another prefix sees
// none of it; an operator's terminate is a change too.
func TestChangeFeedFollowsSessionsOfEveryClient(t *testing.T) {
	t.Parallel()
	s, base := newListStack(t)
	u1 := changeFeed(t, base, tokenU1)
	acme := changeFeed(t, base, tokenAcme)
	all := changeFeed(t, base, tokenAll)

	const id = "u1-feed"
	if _, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, SessionID: id, InitialMessage: "call:approve_write:q"}); err != nil {
		t.Fatal(err)
	}
	expectChanges(t, "u1", u1, id, wire.ChangeSessionStarted, wire.EventTurnStarted, wire.EventInterruptRaised)
	snap := s.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	expectChanges(t, "u1", u1, id, wire.EventInterruptResolved, wire.EventTurnCompleted)
	title := "Renamed"
	if ok, err := s.Sessions.SetSessionMetadata(ctx(t), id, wire.SessionMetadataRequest{Title: &title}); err != nil || !ok {
		t.Fatalf("rename: %v %v", ok, err)
	}
	expectChanges(t, "u1", u1, id, wire.ChangeSessionUpdated)
	if ok, err := s.Sessions.CloseSession(ctx(t), id); err != nil || !ok {
		t.Fatalf("close: %v %v", ok, err)
	}
	expectChanges(t, "u1", u1, id, wire.ChangeSessionEnded)
	// The all-sessions token saw the same life.
	expectChanges(t, "all", all, id, wire.ChangeSessionStarted, wire.EventTurnStarted, wire.EventInterruptRaised,
		wire.EventInterruptResolved, wire.EventTurnCompleted, wire.ChangeSessionUpdated, wire.ChangeSessionEnded)

	// Terminated through the API: no workflow code runs, the API says it.
	const other = "u1-terminated"
	if _, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, SessionID: other}); err != nil {
		t.Fatal(err)
	}
	expectChanges(t, "u1", u1, other, wire.ChangeSessionStarted)
	if code, body := do(t, "POST", base+"/v1/sessions/"+other+"/terminate", tokenAll, `{}`); code != 200 {
		t.Fatalf("terminate: %d %s", code, body)
	}
	expectChanges(t, "u1", u1, other, wire.ChangeSessionEnded)

	// acme's token saw nothing of u1's sessions (read what arrived).
	select {
	case c := <-acme:
		t.Fatalf("the acme- token saw %q", c)
	case <-time.After(100 * time.Millisecond):
	}
}
