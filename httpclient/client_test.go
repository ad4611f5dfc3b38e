package httpclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestNew(t *testing.T) {
	tests := []struct {
		addr, token, want, err string
	}{
		{addr: "http://127.0.0.1:8080", token: "t", want: "http://127.0.0.1:8080"},
		{addr: "127.0.0.1:8080/", token: "t", want: "http://127.0.0.1:8080"},
		{addr: "https://dex.example/api/", token: "t", want: "https://dex.example/api"},
		{addr: "ftp://x", token: "t", err: `HTTP API address "ftp://x": want http://host:port or https://host:port`},
		{addr: "http://", token: "t", err: `HTTP API address "http://": want http://host:port or https://host:port`},
		{addr: "http://x", err: "no API token"},
	}
	for _, tt := range tests {
		c, err := New(tt.addr, tt.token, nil)
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("New(%q) error = %v, want %q", tt.addr, err, tt.err)
			}
		case err != nil:
			t.Errorf("New(%q): %v", tt.addr, err)
		case c.BaseURL() != tt.want:
			t.Errorf("New(%q).BaseURL() = %q, want %q", tt.addr, c.BaseURL(), tt.want)
		}
	}
}

const testToken = "test-token-0123456789"

// recorder answers every request with status and body and records the last one.
type recorder struct {
	status  int
	ctype   string
	body    string
	req     *http.Request
	reqBody string
}

func (rec *recorder) server(t *testing.T) *Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.req, rec.reqBody = r, string(b)
		ct := rec.ctype
		if ct == "" {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(rec.status)
		io.WriteString(w, rec.body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientCalls(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{status: 201, body: `{"session_id":"s-9"}`}
	c := rec.server(t)
	id, err := c.StartSession(ctx, StartRequest{Agent: "orders", IdempotencyKey: "k1"})
	if err != nil || id != "s-9" {
		t.Fatalf("StartSession = %q, %v", id, err)
	}
	if rec.req.Method != "POST" || rec.req.URL.Path != "/v1/sessions" || rec.reqBody != `{"agent":"orders"}` ||
		rec.req.Header.Get("Idempotency-Key") != "k1" || rec.req.Header.Get("Authorization") != "Bearer "+testToken {
		t.Errorf("start request: %s %s %s %v", rec.req.Method, rec.req.URL.Path, rec.reqBody, rec.req.Header)
	}

	rec.status, rec.body = 200, `{"accepted":true}`
	if ok, err := c.SendMessage(ctx, "a b/c", "hi"); !ok || err != nil {
		t.Errorf("SendMessage = %v, %v", ok, err)
	}
	if got := rec.req.URL.EscapedPath(); got != "/v1/sessions/a%20b%2Fc/messages" || rec.reqBody != `{"text":"hi"}` {
		t.Errorf("send request: %s %s", got, rec.reqBody)
	}

	if ok, err := c.SendPlanningMessage(ctx, "s-1", "plan it"); !ok || err != nil {
		t.Errorf("SendPlanningMessage = %v, %v", ok, err)
	}
	if rec.req.URL.Path != "/v1/sessions/s-1/messages" || rec.reqBody != `{"text":"plan it","plan_mode":true}` {
		t.Errorf("planning send request: %s %s", rec.req.URL.Path, rec.reqBody)
	}

	rec.body = `{"executed":true}`
	if ok, err := c.ExecutePlan(ctx, "s-1", 3); !ok || err != nil {
		t.Errorf("ExecutePlan = %v, %v", ok, err)
	}
	if rec.req.Method != "POST" || rec.req.URL.Path != "/v1/sessions/s-1/plan/execute" || rec.reqBody != `{"revision":3}` {
		t.Errorf("execute request: %s %s %s", rec.req.Method, rec.req.URL.Path, rec.reqBody)
	}
	rec.body = `{"executed":false}`
	if ok, err := c.ExecutePlan(ctx, "s-1", 3); ok || err != nil {
		t.Errorf("refused ExecutePlan = %v, %v", ok, err)
	}

	rec.body = `{"resolved":false}`
	if ok, err := c.ResolveInterrupt(ctx, "s-1", "call_3_0", Resolution{RejectionMessage: "no"}); ok || err != nil {
		t.Errorf("ResolveInterrupt = %v, %v", ok, err)
	}
	if rec.req.URL.Path != "/v1/sessions/s-1/interrupts/call_3_0" || rec.reqBody != `{"approved":false,"rejection_message":"no"}` {
		t.Errorf("resolve request: %s %s", rec.req.URL.Path, rec.reqBody)
	}

	rec.body = `{"snapshot":{"session_id":"s-1","state":{"status":"running_tools","active_turn_id":"turn-2","turn_count":2},"queued_message_count":0},"resume_token":"tok"}`
	snap, tok, err := c.Snapshot(ctx, "s-1")
	if err != nil || tok != "tok" || snap.State == nil || snap.State.ActiveTurnID != "turn-2" {
		t.Errorf("Snapshot = %+v, %q, %v", snap, tok, err)
	}
}

func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		status    int
		body      string
		want      APIError
		msg       string
		temporary bool
	}{
		{name: "JSON error", status: 404, body: `{"error":{"code":"not_found","message":"session s-1 not found"}}`,
			want: APIError{StatusCode: 404, Code: "not_found", Message: "session s-1 not found"}, msg: "session s-1 not found"},
		{name: "code only", status: 503, body: `{"error":{"code":"unavailable"}}`,
			want: APIError{StatusCode: 503, Code: "unavailable"}, msg: "unavailable (HTTP 503)", temporary: true},
		{name: "not JSON", status: 502, body: "<html>bad gateway</html>\nmore",
			want: APIError{StatusCode: 502, Message: "HTTP 502 Bad Gateway: <html>bad gateway</html>"}, msg: "HTTP 502 Bad Gateway: <html>bad gateway</html>", temporary: true},
		{name: "empty", status: 500, want: APIError{StatusCode: 500}, msg: "HTTP 500 Internal Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{status: tt.status, body: tt.body}
			_, _, err := rec.server(t).Snapshot(ctx, "s-1")
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want an *APIError", err)
			}
			if diff := cmp.Diff(tt.want, *apiErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if err.Error() != tt.msg || apiErr.Temporary() != tt.temporary {
				t.Errorf("Error() = %q, Temporary() = %v", err.Error(), apiErr.Temporary())
			}
		})
	}
	rec := &recorder{status: 200, body: `not json`}
	if _, err := rec.server(t).SendMessage(ctx, "s-1", "x"); err == nil {
		t.Error("SendMessage accepted a body that is not JSON")
	}
}

func TestClientEvents(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{status: 400, body: `{"error":{"code":"bad_request","message":"invalid resume token: issued by another worker process"}}`}
	c := rec.server(t)
	_, err := c.Events(ctx, "s-1", "tok 1", "")
	var apiErr *APIError
	if !errors.Is(err, ErrInvalidResumeToken) || !errors.As(err, &apiErr) || apiErr.Code != "bad_request" {
		t.Errorf("400: err = %v, want ErrInvalidResumeToken and the APIError", err)
	}
	if rec.req.URL.Query().Get("resume_token") != "tok 1" || rec.req.Header.Get("Last-Event-ID") != "" {
		t.Errorf("first open: %s %v", rec.req.URL, rec.req.Header)
	}

	rec.status, rec.body = 200, "{}"
	if _, err := c.Events(ctx, "s-1", "", "e1"); err == nil {
		t.Error("a JSON answer opened a stream")
	}
	if rec.req.URL.RawQuery != "" || rec.req.Header.Get("Last-Event-ID") != "e1" {
		t.Errorf("reconnect: %s %v", rec.req.URL, rec.req.Header)
	}

	rec.ctype = "text/event-stream; charset=utf-8"
	rec.body = "id: e2\ndata: {\"type\":\"text_delta\",\"payload\":\"{\\\"text\\\":\\\"hi\\\"}\"}\n\nid: e3\ndata: nope\n\nid: e4\ndata: {\"type\":\"x.y\",\"payload\":{\"a\":1}}\n\n"
	es, err := c.Events(ctx, "s-1", "", "e1")
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	d, err := es.Next()
	if err != nil || d.ID != "e2" || d.Event.Type != wire.EventTextDelta || string(d.Event.Payload) != `{"text":"hi"}` {
		t.Errorf("first event = %+v, %v", d, err)
	}
	var bad *MalformedEventError
	if _, err := es.Next(); !errors.As(err, &bad) || bad.ID != "e3" || es.LastEventID() != "e3" {
		t.Errorf("malformed frame: err = %v, LastEventID %q", err, es.LastEventID())
	}
	if d, err := es.Next(); err != nil || string(d.Event.Payload) != `{"a":1}` {
		t.Errorf("object payload = %+v, %v", d, err)
	}
	if _, err := es.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("end: err = %v, want io.EOF", err)
	}
}

func TestPayloadJSON(t *testing.T) {
	e := Event{Type: "text_delta", Payload: Payload(`{"text":"a\"b"}`)}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"session_id":"","type":"text_delta","attempt":0,"payload":"{\"text\":\"a\\\"b\"}"}`; string(b) != want {
		t.Errorf("marshal = %s, want %s", b, want)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || string(back.Payload) != string(e.Payload) {
		t.Errorf("unmarshal = %s, %v", back.Payload, err)
	}
	var p struct{ Text string }
	if err := back.Payload.Decode(&p); err != nil || p.Text != `a"b` {
		t.Errorf("Decode = %+v, %v", p, err)
	}
}

func TestClientTurnControl(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{status: 200, body: `{"accepted":true}`}
	c := rec.server(t)
	if ok, err := c.SendMessageMode(ctx, "s-1", "hi", SendModeQueue); !ok || err != nil || rec.req.URL.Path != "/v1/sessions/s-1/messages" ||
		rec.reqBody != `{"text":"hi","mode":"queue"}` {
		t.Errorf("SendMessageMode = %v, %v; %s %s", ok, err, rec.req.URL.Path, rec.reqBody)
	}
	if ok, err := c.Steer(ctx, "s-1", "stop that"); !ok || err != nil || rec.req.Method != "POST" ||
		rec.req.URL.Path != "/v1/sessions/s-1/steer" || rec.reqBody != `{"text":"stop that"}` {
		t.Errorf("Steer = %v, %v; %s %s", ok, err, rec.req.URL.Path, rec.reqBody)
	}
	rec.body = `{"accepted":false}`
	if ok, err := c.CancelTurn(ctx, "s-1", "turn-3"); ok || err != nil || rec.req.URL.Path != "/v1/sessions/s-1/cancel" || rec.reqBody != `{"turn_id":"turn-3"}` {
		t.Errorf("CancelTurn = %v, %v; %s %s", ok, err, rec.req.URL.Path, rec.reqBody)
	}
	rec.status, rec.body = 409, `{"error":{"code":"session_closed","message":"session s-1 was closed and takes no new messages"}}`
	if _, err := c.CancelTurn(ctx, "s-1", "turn-3"); !IsSessionClosed(err) {
		t.Errorf("CancelTurn on a closed session = %v", err)
	}
	rec.body = `{"error":{"code":"conflict","message":"x"}}`
	if _, err := c.Steer(ctx, "s-1", "x"); err == nil || IsSessionClosed(err) {
		t.Errorf("Steer on a conflict = %v", err)
	}
}

func TestTurnTextKeepsTheHighestAttempt(t *testing.T) {
	delta := func(step string, attempt int, text string) Event {
		b, _ := json.Marshal(map[string]string{"text": text})
		return Event{Type: wire.EventTextDelta, StepExecutionID: step, Attempt: attempt, Payload: Payload(b)}
	}
	var tt TurnText
	for _, e := range []Event{
		delta("run/12", 1, "Looking up "),
		delta("run/12", 1, "ord"), // the worker died here
		delta("run/12", 2, "Looking up "),
		{Type: wire.EventToolCallStarted, Payload: Payload(`{}`)},
		delta("run/12", 1, "late bytes of the dead attempt"),
		delta("run/12", 2, "order 7."),
		delta("run/25", 1, " Refunded."),
	} {
		tt.Add(e)
	}
	if got, want := tt.String(), "Looking up order 7. Refunded."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

func TestTheOtherRoutes(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{status: 200, body: `{"sessions":[{"session_id":"s-1","flow_type":"OrdersAgent","waiting_for":["approval"],"active_step_types":["AwaitToolApproval"],"status":"running","started_at":"2026-12-01T10:00:00Z","run_id":"r"}],"next_page_token":"p2"}`}
	c := rec.server(t)
	page, err := c.ListSessions(ctx, ListSessionsOptions{WaitingFor: []string{"approval", "question"}, Agent: "orders", PageSize: 10, PageToken: "p1"})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].WaitingFor[0] != "approval" || page.NextPageToken != "p2" {
		t.Fatalf("ListSessions = %+v, %v", page, err)
	}
	if q := rec.req.URL.Query(); rec.req.URL.Path != "/v1/sessions" || q.Get("waiting_for") != "approval,question" ||
		q.Get("agent") != "orders" || q.Get("page_size") != "10" || q.Get("page_token") != "p1" {
		t.Errorf("list request: %s", rec.req.URL)
	}
	rec.body = `{"messages":[{"sequence":5,"role":"user","text":"hi"}],"first_sequence":1,"has_more":true,"next_before_sequence":5}`
	msgs, err := c.Messages(ctx, "s-1", 9, 1)
	if err != nil || len(msgs.Messages) != 1 || msgs.Messages[0].Text != "hi" || !msgs.HasMore || msgs.NextBeforeSequence != 5 {
		t.Fatalf("Messages = %+v, %v", msgs, err)
	}
	if rec.req.URL.RequestURI() != "/v1/sessions/s-1/messages?before_sequence=9&limit=1" {
		t.Errorf("messages request: %s", rec.req.URL.RequestURI())
	}
	rec.body = `{"deleted":true}`
	if ok, err := c.DeleteQueued(ctx, "s-1", "msg-3"); !ok || err != nil || rec.req.Method != "DELETE" || rec.req.URL.Path != "/v1/sessions/s-1/queued/msg-3" {
		t.Errorf("DeleteQueued = %v, %v; %s %s", ok, err, rec.req.Method, rec.req.URL.Path)
	}
	rec.body = `{"accepted":true}`
	if ok, err := c.Close(ctx, "s-1"); !ok || err != nil || rec.req.URL.Path != "/v1/sessions/s-1/close" || rec.reqBody != `{}` {
		t.Errorf("Close = %v, %v; %s %s", ok, err, rec.req.URL.Path, rec.reqBody)
	}
	rec.body = `{"terminated":true}`
	if ok, err := c.Terminate(ctx, "s-1", "runaway"); !ok || err != nil || rec.req.URL.Path != "/v1/sessions/s-1/terminate" || rec.reqBody != `{"reason":"runaway"}` {
		t.Errorf("Terminate = %v, %v; %s %s", ok, err, rec.req.URL.Path, rec.reqBody)
	}
	rec.status, rec.body = 403, `{"error":{"code":"forbidden","message":"terminate needs an operator token"}}`
	if _, err := c.Terminate(ctx, "s-1", ""); err == nil || err.Error() != "terminate needs an operator token" {
		t.Errorf("Terminate without operator: %v", err)
	}
	rec.status, rec.body = 503, `{"error":{"code":"unavailable","message":"Temporal is not reachable"}}`
	if err := c.Ready(ctx); err == nil || err.Error() != "Temporal is not reachable" {
		t.Errorf("Ready on 503: %v", err)
	}
	if rec.req.URL.Path != "/readyz" || rec.req.Header.Get("Authorization") != "" {
		t.Errorf("readyz request: %s %v", rec.req.URL.Path, rec.req.Header)
	}
	rec.status, rec.body = 200, `{"status":"ready"}`
	if err := c.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if err := c.Live(ctx); err != nil || rec.req.URL.Path != "/healthz" {
		t.Errorf("Live: %v (%s)", err, rec.req.URL.Path)
	}
}
