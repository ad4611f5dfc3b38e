package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/httpapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

const (
	tokenAll   = "token-all-0123456789abcdef"
	tokenAcme  = "token-acme-0123456789abcdef"
	tokenOther = "token-other-0123456789abcdef"
	tokenU1    = "token-u1-0123456789abcdef"
)

// newHTTPStack is a stack whose worker serves the API, with two agents and
// three tokens of different scopes.
func newHTTPStack(t *testing.T) (*agenttest.Stack, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	cfg := testConfig(plugin) + fmt.Sprintf(`
  - name: other
    flow_type: OtherAgent
    runner: testrunner
    runner_config: {state_dir: "{{DIR}}"}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: all, token: %s}
      - {name: acme, token: %s, session_prefix: "acme-"}
      - {name: other, token: %s, agents: [other]}
      - {name: u1, token: %s, session_prefix: "u1"}
`, port, tokenAll, tokenAcme, tokenOther, tokenU1)
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	return s, fmt.Sprintf("http://127.0.0.1:%d", port)
}

// do sends a request, with header names and values in pairs, and returns
// the status and the body (none for an open event stream).
func do(t *testing.T, method, url, token, body string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasSuffix(url, "/events") && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, nil // a live stream; only its status matters here
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	s, base := newHTTPStack(t)
	id := start(t, s, "hello") // an agent "test" session without the acme- prefix
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	sess := base + "/v1/sessions/" + id
	routes := []struct {
		method, url, body string
		okStatus          int
	}{
		{"GET", base + "/v1/agents", "", 200},
		{"POST", base + "/v1/sessions", `{"agent":"test","session_id":"m-1"}`, 201},
		{"POST", sess + "/messages", `{"text":"again"}`, 200},
		{"POST", sess + "/interrupts/nope", `{"approved":true}`, 200},
		{"PUT", sess + "/settings", `{"session_settings":{"model":"fast"}}`, 200},
		{"GET", sess + "/snapshot", "", 200},
		{"GET", sess + "/messages?limit=5", "", 200},
		{"GET", sess + "/events", "", 200},
		{"POST", base + "/v1/ui/sessions/" + id + "/chat", `{"messages":[{"id":"ui-1","role":"user","parts":[{"type":"text","text":"from useChat"}]}]}`, 200},
	}
	for _, r := range routes {
		name := r.method + " " + strings.ReplaceAll(strings.TrimPrefix(r.url, base), id, "{id}")
		t.Run(name, func(t *testing.T) {
			if code, body := do(t, r.method, r.url, "", r.body); code != 401 || !bytes.Contains(body, []byte(`"code":"unauthorized"`)) {
				t.Errorf("no token: %d %s", code, body)
			}
			if code, _ := do(t, r.method, r.url, "wrong-token-0123456789", r.body); code != 401 {
				t.Errorf("wrong token: %d", code)
			}
			if r.url != base+"/v1/agents" {
				// acme's prefix and other's agent scope both exclude it.
				if code, body := do(t, r.method, r.url, tokenAcme, r.body); code != 403 || !bytes.Contains(body, []byte(`"code":"forbidden"`)) {
					t.Errorf("token of another prefix: %d %s", code, body)
				}
				if code, _ := do(t, r.method, r.url, tokenOther, r.body); code != 403 {
					t.Errorf("token of another agent: %d", code)
				}
			}
			if code, body := do(t, r.method, r.url, tokenAll, r.body); code != r.okStatus {
				t.Errorf("right token: %d %s", code, body)
			}
		})
	}
	// A session prefix matches at a separator only: "u1" reaches u1-abc
	// and never u10-abc, on every route.
	for _, sid := range []string{"u10-abc", "u1-abc"} {
		if code, body := do(t, "POST", base+"/v1/sessions", tokenAll, `{"agent":"test","session_id":"`+sid+`","initial_message":"hello"}`); code != 201 {
			t.Fatalf("start %s: %d %s", sid, code, body)
		}
		s.WaitForSnapshot("the answer", sid, idleWithAnswer)
	}
	for _, r := range routes {
		if !strings.HasPrefix(r.url, sess) {
			continue
		}
		for sid, want := range map[string]int{"u10-abc": 403, "u1-abc": r.okStatus} {
			url := strings.Replace(r.url, sess, base+"/v1/sessions/"+sid, 1)
			if code, body := do(t, r.method, url, tokenU1, r.body); code != want {
				t.Errorf("u1 token: %s %s: %d %s, want %d", r.method, strings.TrimPrefix(url, base), code, body, want)
			}
		}
	}
	if code, body := do(t, "POST", base+"/v1/sessions", tokenU1, `{"agent":"test","session_id":"u10-new"}`); code != 403 {
		t.Errorf("u1 token starting u10-new: %d %s", code, body)
	}
	if code, body := do(t, "POST", base+"/v1/sessions", tokenU1, `{"agent":"test"}`); code != 201 || !bytes.Contains(body, []byte(`"session_id":"u1-session-`)) {
		t.Errorf("u1 start: %d %s, want an ID starting u1-session-", code, body)
	}
	// Unknown sessions are 404 for a token that may see them.
	for _, p := range []string{"/snapshot", "/messages", "/events"} {
		if code, _ := do(t, "GET", base+"/v1/sessions/no-such-session"+p, tokenAll, ""); code != 404 {
			t.Errorf("unknown session %s: %d", p, code)
		}
	}
	// Scoped tokens start sessions inside their scope only.
	code, body := do(t, "POST", base+"/v1/sessions", tokenAcme, `{"agent":"test"}`)
	if code != 201 || !bytes.Contains(body, []byte(`"session_id":"acme-session-`)) {
		t.Errorf("acme start: %d %s", code, body)
	}
	if code, _ := do(t, "GET", base+"/v1/agents", tokenOther, ""); code != 200 {
		t.Errorf("other agents: %d", code)
	}
	if _, body := do(t, "GET", base+"/v1/agents", tokenOther, ""); !bytes.Contains(body, []byte(`"other"`)) || bytes.Contains(body, []byte(`"test"`)) {
		t.Errorf("other token sees agents %s", body)
	}
	// Bad input is a clear 400.
	for _, b := range []string{`{"agent":"test","x":1}`, `{"agent":`, `{"agent":"nope"}`, `{"agent":"test"} {}`, `{"agent":"test","session_id":"a b"}`} {
		if code, body := do(t, "POST", base+"/v1/sessions", tokenAll, b); code != 400 || !bytes.Contains(body, []byte(`"code":"bad_request"`)) {
			t.Errorf("body %s: %d %s", b, code, body)
		}
	}
	if code, _ := do(t, "POST", base+"/v1/sessions", tokenAll, `{"agent":"test","session_id":"m-1"}`); code != 409 {
		t.Errorf("duplicate session: %d", code)
	}
	if code, _ := do(t, "POST", sess+"/interrupts/x", tokenAll, `{}`); code != 400 {
		t.Errorf("resolve without approved: %d", code)
	}
	if code, _ := do(t, "POST", sess+"/messages", tokenAll, `{"text":"`+strings.Repeat("x", httpapi.MaxMessageBodyBytes)+`"}`); code != 413 {
		t.Errorf("oversized body: %d", code)
	}
	if code, _ := do(t, "GET", base+"/healthz", "", ""); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	if code, _ := do(t, "GET", base+"/readyz", "", ""); code != 200 {
		t.Errorf("readyz: %d", code)
	}
}

type sseFrame struct {
	id   string
	data map[string]any
}

// readSSE reads frames from an event stream until stop returns true.
func readSSE(t *testing.T, ctx context.Context, url, token, lastID string, stop func(sseFrame) bool) []sseFrame {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("events: %d %s", resp.StatusCode, b)
	}
	var frames []sseFrame
	var cur sseFrame
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
		case line == "" && cur.id != "":
			frames = append(frames, cur)
			if stop(cur) {
				return frames
			}
			cur = sseFrame{}
		}
	}
	t.Fatalf("stream ended: %v (after %d frames)", sc.Err(), len(frames))
	return nil
}

// seqOf reads the event sequence of a memory broker's token
// (epoch.generation.sequence.mac).
func seqOf(t *testing.T, token string) int {
	parts := strings.Split(token, ".")
	n, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil {
		t.Fatalf("token %q", token)
	}
	return n
}

// TestEventStreamResumesWithoutRepeatsOrGaps disconnects an SSE client
// mid-turn and reconnects with Last-Event-ID.
func TestEventStreamResumesWithoutRepeatsOrGaps(t *testing.T) {
	t.Parallel()
	s, base := newHTTPStack(t)
	gate := s.Gate("tool-sse")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	id := start(t, s, "call:read_gate:sse call:noop:x")
	reached(t, gate)
	_, body := do(t, "GET", base+"/v1/sessions/"+id+"/snapshot", tokenAll, "")
	var snap struct {
		Snapshot    wire.Snapshot `json:"snapshot"`
		ResumeToken string        `json:"resume_token"`
	}
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(body, []byte("framework_item")) {
		t.Errorf("the browser snapshot has framework items: %s", body)
	}
	// While the turn is active, the token replays it from turn_started.
	url := base + "/v1/sessions/" + id + "/events?resume_token=" + snap.ResumeToken
	first := readSSE(t, ctx(t), url, tokenAll, "", func(f sseFrame) bool { return f.data["type"] == "tool_call_started" })
	if first[0].data["type"] != "turn_started" {
		t.Errorf("replay starts with %v, want turn_started", first[0].data["type"])
	}
	// Disconnected mid-turn; the turn finishes while no client listens.
	_ = gate.Release()
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	rest := readSSE(t, ctx(t), url, tokenAll, first[len(first)-1].id, func(f sseFrame) bool { return f.data["type"] == "turn_completed" })
	all := append(first, rest...)
	var types []string
	for i, f := range all {
		types = append(types, fmt.Sprint(f.data["type"]))
		if i > 0 && seqOf(t, f.id) != seqOf(t, all[i-1].id)+1 {
			t.Errorf("frame %d: sequence %d after %d: a repeat or a gap", i, seqOf(t, f.id), seqOf(t, all[i-1].id))
		}
		if _, ok := f.data["payload"].(string); !ok {
			t.Errorf("frame %d payload is %T, want JSON text", i, f.data["payload"])
		}
	}
	for _, want := range []string{"turn_started", "usage_recorded", "tool_call_deferred", "tool_call_started", "tool_call_finished", "text_delta", "turn_completed"} {
		found := false
		for _, typ := range types {
			found = found || typ == want
		}
		if !found {
			t.Errorf("no %s event in %v", want, types)
		}
	}
	// Every event names its turn and Step attempt.
	for _, f := range all {
		if f.data["turn_id"] != "turn-1" || f.data["session_id"] != id || f.data["step_execution_id"] == "" || f.data["step_execution_id"] == nil {
			t.Errorf("event %v lacks its turn, session or step execution", f.data)
		}
	}

	// A token of another session is refused before the stream starts.
	other := start(t, s, "hi")
	_, body = do(t, "GET", base+"/v1/sessions/"+other+"/snapshot", tokenAll, "")
	var otherSnap struct {
		ResumeToken string `json:"resume_token"`
	}
	_ = json.Unmarshal(body, &otherSnap)
	code, body := do(t, "GET", base+"/v1/sessions/"+id+"/events?resume_token="+otherSnap.ResumeToken, tokenAll, "")
	if code != 400 || !bytes.Contains(body, []byte("reload the snapshot")) {
		t.Errorf("foreign token: %d %s", code, body)
	}
	if code, _ := do(t, "GET", base+"/v1/sessions/"+id+"/events?resume_token=forged.1.x", tokenAll, ""); code != 400 {
		t.Errorf("forged token: %d", code)
	}
}

// TestKeepAliveAfterIdle checks that an idle stream sends comments, so
// proxies keep it open (the keep-alive interval is 15 s).
func TestKeepAliveAfterIdle(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	s, base := newHTTPStack(t)
	id := start(t, s, "hello")
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	c, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(c, "GET", base+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+tokenAll)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": keep-alive" {
			return
		}
	}
	t.Fatalf("no keep-alive comment: %v", sc.Err())
}

// userMessages counts the session's user messages with this text.
func userMessages(snap wire.Snapshot, text string) int {
	n := 0
	for _, m := range snap.Messages {
		if m.Role == "user" && m.Text == text {
			n++
		}
	}
	return n
}

// TestHTTPRetriedRequestsApplyOnce retries the two requests whose answer a
// client can lose: a start with an Idempotency-Key names the same session
// and runs its first turn once, and a message sent twice with one
// message_id is queued once (the engine deduplicates updates by ID).
func TestHTTPRetriedRequestsApplyOnce(t *testing.T) {
	t.Parallel()
	s, base := newHTTPStack(t)
	gate := s.Gate("tool-retry")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	startBody := `{"agent":"test","initial_message":"call:read_gate:retry"}`
	var id string
	for i, want := range []int{201, 200} {
		code, body := do(t, "POST", base+"/v1/sessions", tokenAcme, startBody, "Idempotency-Key", "order-42")
		var got struct {
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal(body, &got)
		if code != want || !strings.HasPrefix(got.SessionID, "acme-session-") || (id != "" && got.SessionID != id) {
			t.Fatalf("start %d: %d %s, want %d with one acme-session- ID", i, code, body, want)
		}
		id = got.SessionID
	}
	reached(t, gate) // the first turn waits in its tool: messages queue

	send := base + "/v1/sessions/" + id + "/messages"
	for i := range 2 {
		if code, body := do(t, "POST", send, tokenAcme, `{"text":"second","message_id":"m-1"}`); code != 200 || string(body) != "{\"accepted\":true}\n" {
			t.Fatalf("send %d: %d %s", i, code, body)
		}
	}
	snap := s.WaitForSnapshot("the queued message", id, func(s wire.Snapshot) bool { return s.QueuedCount > 0 })
	if snap.QueuedCount != 1 {
		t.Errorf("queued %d messages after two sends with one message_id, want 1: %+v", snap.QueuedCount, snap.QueuedMessages)
	}
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	snap = s.WaitForSnapshot("both turns", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 2 })
	// Sent again after it was consumed, the message is still not repeated.
	if code, body := do(t, "POST", send, tokenAcme, `{"text":"second","message_id":"m-1"}`); code != 200 {
		t.Fatalf("send after the turn: %d %s", code, body)
	}
	snap = s.WaitForSnapshot("the session idle", id, idleWithAnswer)
	if n := userMessages(snap, "second"); n != 1 || snap.State.TurnCount != 2 {
		t.Errorf("%d user messages \"second\" and %d turns, want 1 and 2", n, snap.State.TurnCount)
	}
	if n := userMessages(snap, "call:read_gate:retry"); n != 1 {
		t.Errorf("the initial message is in the session %d times, want 1", n)
	}
	if n := s.Log().Count("tool", "read_gate"); n != 1 {
		t.Errorf("read_gate ran %d times, want 1", n)
	}
}

// TestHTTPUpdateTimeoutMayStillApply sends a message while no worker runs:
// the answer is a 503 that says the message may still be applied, and a
// retry with the same message_id once a worker runs queues it once,
// whether or not the engine kept the first send.
func TestHTTPUpdateTimeoutMayStillApply(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := httpapi.New(httpapi.Options{
		Temporal: s.Client, Namespace: "default", TaskQueue: wire.DefaultTaskQueue,
		Broker: events.NewMemoryBroker(events.MemoryOptions{}),
		Agents: []httpapi.Agent{{Name: "test", FlowType: flowType}},
		Tokens: []httpapi.Token{{Name: "all", Value: tokenAll}},
		// Short, so the test does not wait 30 s for the missing worker.
		UpdateTimeout: 3 * time.Second,
	})
	hs := httptest.NewServer(api)
	t.Cleanup(func() { api.Close(); hs.Close() })
	id := start(t, s, "hello") // no worker: the session waits for one

	send := hs.URL + "/v1/sessions/" + id + "/messages"
	code, body := do(t, "POST", send, tokenAll, `{"text":"later","message_id":"m-later"}`)
	var e struct {
		Error struct {
			Code          string `json:"code"`
			Message       string `json:"message"`
			MayStillApply *bool  `json:"may_still_apply"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || code != 503 || e.Error.Code != "unavailable" || e.Error.MayStillApply == nil || !*e.Error.MayStillApply {
		t.Fatalf("send without a worker: %d %s, want 503 unavailable with may_still_apply true", code, body)
	}
	if !strings.Contains(e.Error.Message, "retry with the same message_id") {
		t.Errorf("the 503 does not say how to retry: %q", e.Error.Message)
	}

	s.StartWorker()
	if code, body := do(t, "POST", send, tokenAll, `{"text":"later","message_id":"m-later"}`); code != 200 {
		t.Fatalf("retry with a worker: %d %s", code, body)
	}
	snap := s.WaitForSnapshot("both turns", id, func(s wire.Snapshot) bool { return idleWithAnswer(s) && s.State.TurnCount == 2 })
	if n := userMessages(snap, "later"); n != 1 {
		t.Errorf("the message is in the session %d times, want 1", n)
	}
	if code, _ := do(t, "POST", hs.URL+"/v1/sessions/"+id+"/messages", tokenAll, `{"text":"x","message_id":"bad id"}`); code != 400 {
		t.Errorf("bad message_id: %d, want 400", code)
	}
}
