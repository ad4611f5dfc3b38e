package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// fakeTemporal is the part of a Temporal client the server uses: workflows
// it knows by ID and type, and updates answered by a function. The engine's
// own behaviour is tested in internal/e2e; these tests cover the server's
// decisions around it.
type fakeTemporal struct {
	temporalclient.Client
	svc *fakeService

	mu      sync.Mutex
	updates []temporalclient.UpdateWorkflowOptions
	// update answers an update; nil answers true.
	update func(ctx context.Context, opts temporalclient.UpdateWorkflowOptions) (bool, error)
}

type fakeService struct {
	workflowservice.WorkflowServiceClient
	mu         sync.Mutex
	workflows  map[string]string // workflow ID -> type
	requestIDs map[string]string // workflow ID -> request ID of its start
	closed     map[string]bool   // workflow IDs that ended
	untitled   map[string]bool   // workflow IDs started with no title in their memo
	starts     []*workflowservice.StartWorkflowExecutionRequest
}

func newFakeTemporal() *fakeTemporal {
	return &fakeTemporal{svc: &fakeService{workflows: map[string]string{}, requestIDs: map[string]string{}, closed: map[string]bool{}, untitled: map[string]bool{}}}
}

func (f *fakeTemporal) WorkflowService() workflowservice.WorkflowServiceClient { return f.svc }

// CheckHealth answers like a reachable frontend.
func (f *fakeTemporal) CheckHealth(context.Context, *temporalclient.CheckHealthRequest) (*temporalclient.CheckHealthResponse, error) {
	return &temporalclient.CheckHealthResponse{}, nil
}

func (f *fakeTemporal) addWorkflow(id, flowType string) {
	f.svc.mu.Lock()
	defer f.svc.mu.Unlock()
	f.svc.workflows[id] = flowType
}

// StartWorkflowExecution answers a start of an existing workflow ID the way
// the engine (server v1.32, history startworkflow) does with the reuse
// policy REJECT_DUPLICATE: the request ID of that workflow's start is a
// retry, answered as started (the engine says so "for a consistent
// response"); otherwise a running workflow is reused (started false) under
// the conflict policy USE_EXISTING; anything else fails as already started.
func (f *fakeService) StartWorkflowExecution(_ context.Context, req *workflowservice.StartWorkflowExecutionRequest, _ ...grpc.CallOption) (*workflowservice.StartWorkflowExecutionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, req)
	id := req.GetWorkflowId()
	if _, ok := f.workflows[id]; ok {
		switch {
		case f.requestIDs[id] == req.GetRequestId():
			return &workflowservice.StartWorkflowExecutionResponse{RunId: "run-1", Started: true}, nil
		case !f.closed[id] && req.GetWorkflowIdConflictPolicy() == enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING:
			return &workflowservice.StartWorkflowExecutionResponse{RunId: "run-1", Started: false}, nil
		}
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("workflow already started", req.GetRequestId(), "run-1")
	}
	f.workflows[id] = req.GetWorkflowType().GetName()
	f.requestIDs[id] = req.GetRequestId()
	return &workflowservice.StartWorkflowExecutionResponse{RunId: "run-1", Started: true}, nil
}

func (f *fakeService) DescribeWorkflowExecution(_ context.Context, req *workflowservice.DescribeWorkflowExecutionRequest, _ ...grpc.CallOption) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	typ, ok := f.workflows[req.GetExecution().GetWorkflowId()]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	status := enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	if f.closed[req.GetExecution().GetWorkflowId()] {
		status = enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}
	memo := &commonpb.Memo{Fields: map[string]*commonpb.Payload{wire.MemoTitle: {}}}
	if f.untitled[req.GetExecution().GetWorkflowId()] {
		memo = nil
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: req.GetExecution(), Type: &commonpb.WorkflowType{Name: typ}, Status: status, Memo: memo,
	}}, nil
}

func (f *fakeTemporal) UpdateWorkflow(ctx context.Context, opts temporalclient.UpdateWorkflowOptions) (temporalclient.WorkflowUpdateHandle, error) {
	f.mu.Lock()
	f.updates = append(f.updates, opts)
	answer := f.update
	f.mu.Unlock()
	ok := true
	if answer != nil {
		var err error
		if ok, err = answer(ctx, opts); err != nil {
			return nil, err
		}
	}
	return updateHandle{opts: opts, ok: ok}, nil
}

// QueryWorkflow answers every query of a known workflow with an empty
// JSON object.
func (f *fakeTemporal) QueryWorkflow(ctx context.Context, id, _ string, _ string, _ ...any) (converter.EncodedValue, error) {
	f.svc.mu.Lock()
	defer f.svc.mu.Unlock()
	if _, ok := f.svc.workflows[id]; !ok {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	return jsonValue(`{}`), nil
}

type jsonValue string

func (v jsonValue) HasValue() bool    { return true }
func (v jsonValue) Get(out any) error { return json.Unmarshal([]byte(v), out) }

type updateHandle struct {
	opts temporalclient.UpdateWorkflowOptions
	ok   bool
}

func (h updateHandle) WorkflowID() string { return h.opts.WorkflowID }
func (h updateHandle) RunID() string      { return "" }
func (h updateHandle) UpdateID() string   { return h.opts.UpdateID }
func (h updateHandle) Get(_ context.Context, v any) error {
	*v.(*bool) = h.ok
	return nil
}

// Tokens of the unit tests.
const (
	testTokenAll  = "unit-all-0123456789abcdef"
	testTokenU1   = "unit-u1-0123456789abcdef"
	testTokenAcme = "unit-acme-0123456789abcdef"
)

type testAPI struct {
	t        *testing.T
	temporal *fakeTemporal
	server   *Server
	url      string
}

// newTestAPI serves the API over a fake engine with two agents ("test" of
// workflow type TestAgent, "other" of OtherAgent) and three tokens: one for everything, one with
// session prefix "u1" and one with prefix "acme-".
func newTestAPI(t *testing.T, mod func(*Options)) *testAPI {
	t.Helper()
	ft := newFakeTemporal()
	opts := Options{
		Temporal: ft, Namespace: "default", TaskQueue: "q",
		Broker: events.NewMemoryBroker(events.MemoryOptions{}),
		Agents: []Agent{{Name: "test", FlowType: "TestAgent"}, {Name: "other", FlowType: "OtherAgent"}},
		Tokens: []Token{
			{Name: "all", Value: testTokenAll},
			{Name: "u1", Value: testTokenU1, SessionPrefix: "u1"},
			{Name: "acme", Value: testTokenAcme, SessionPrefix: "acme-"},
		},
	}
	if mod != nil {
		mod(&opts)
	}
	s := New(opts)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return &testAPI{t: t, temporal: ft, server: s, url: hs.URL}
}

// do sends a request and returns the status, the headers and the body.
func (a *testAPI) do(method, path, token, body string, header ...string) (int, http.Header, []byte) {
	a.t.Helper()
	req, err := http.NewRequestWithContext(a.t.Context(), method, a.url+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, resp.Header, nil // a live stream; only its status matters here
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// apiErrorBody is the error body of every route.
type apiErrorBody struct {
	Error struct {
		Code          string `json:"code"`
		Message       string `json:"message"`
		MayStillApply *bool  `json:"may_still_apply"`
	} `json:"error"`
}

func decodeError(t *testing.T, b []byte) apiErrorBody {
	t.Helper()
	var e apiErrorBody
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return e
}

func TestInSessionScope(t *testing.T) {
	for _, tt := range []struct {
		prefix, id string
		want       bool
	}{
		{"", "anything", true},
		{"u1", "u1", true},
		{"u1", "u1-abc", true},
		{"u1", "u1_abc", true},
		{"u1", "u1:abc", true},
		{"u1", "u1.abc", true},
		{"u1", "u10-abc", false},
		{"u1", "u1abc", false},
		{"u1", "u", false},
		{"u1", "x-u1-abc", false},
		{"acme-", "acme-abc", true},
		{"acme-", "acme-", true},
		{"acme-", "acme", false},
		{"acme-", "acmex", false},
		{"t:", "t:1", true},
	} {
		if got := InSessionScope(tt.prefix, tt.id); got != tt.want {
			t.Errorf("InSessionScope(%q, %q) = %v, want %v", tt.prefix, tt.id, got, tt.want)
		}
	}
	for _, tt := range []struct{ prefix, want string }{
		{"", "session-1"},
		{"u1", "u1-session-1"},
		{"acme-", "acme-session-1"},
		{"t:", "t:session-1"},
	} {
		got := sessionIDIn(tt.prefix, "session-1")
		if got != tt.want || !InSessionScope(tt.prefix, got) {
			t.Errorf("sessionIDIn(%q) = %q, want %q inside the prefix", tt.prefix, got, tt.want)
		}
	}
}

// TestPrefixMatchesAtASeparator checks the session prefix rule on every
// session route and on the start route: prefix "u1" never reaches "u10-…".
func TestPrefixMatchesAtASeparator(t *testing.T) {
	a := newTestAPI(t, nil)
	for _, id := range []string{"u10-abc", "u1-abc", "u1"} {
		a.temporal.addWorkflow(id, "TestAgent")
	}
	routes := []struct{ method, path, body string }{
		{"POST", "/messages", `{"text":"hi"}`},
		{"POST", "/interrupts/call-1", `{"approved":true}`},
		{"GET", "/snapshot", ""},
		{"GET", "/messages", ""},
		{"GET", "/events", ""},
	}
	for _, r := range routes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			code, _, body := a.do(r.method, "/v1/sessions/u10-abc"+r.path, testTokenU1, r.body)
			if code != http.StatusForbidden || decodeError(t, body).Error.Code != "forbidden" {
				t.Errorf("u1 token on u10-abc: %d %s, want 403 forbidden", code, body)
			}
		})
	}
	// Inside the prefix, the token passes authorization on every route.
	for _, id := range []string{"u1-abc", "u1"} {
		for _, r := range routes {
			if code, _, body := a.do(r.method, "/v1/sessions/"+id+r.path, testTokenU1, r.body); code != http.StatusOK {
				t.Errorf("u1 token: %s %s%s: %d %s, want 200", r.method, id, r.path, code, body)
			}
		}
	}
	// A session the API names for the token is inside its prefix.
	for _, tok := range []struct{ token, prefix string }{{testTokenU1, "u1-session-"}, {testTokenAcme, "acme-session-"}, {testTokenAll, "session-"}} {
		code, _, body := a.do("POST", "/v1/sessions", tok.token, `{"agent":"test"}`)
		var got struct {
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal(body, &got)
		if code != http.StatusCreated || !strings.HasPrefix(got.SessionID, tok.prefix) {
			t.Errorf("start: %d %s, want 201 and an ID starting with %q", code, body, tok.prefix)
		}
	}
	// Starting a session: an explicit ID outside the prefix is refused,
	// with the rule in the message.
	code, _, body := a.do("POST", "/v1/sessions", testTokenU1, `{"agent":"test","session_id":"u10-new"}`)
	if msg := decodeError(t, body).Error.Message; code != http.StatusForbidden || !strings.Contains(msg, `start with "u1" followed by one of - _ : .`) {
		t.Errorf("start u10-new with the u1 token: %d %s", code, body)
	}
	code, _, body = a.do("POST", "/v1/sessions", testTokenAcme, `{"agent":"test","session_id":"acmex"}`)
	if code != http.StatusForbidden || !strings.Contains(string(body), `start with \"acme-\"`) {
		t.Errorf("start acmex with the acme- token: %d %s", code, body)
	}
}

type startAnswer struct {
	code int
	id   string
	body string
}

func (a *testAPI) start(token, body string, header ...string) startAnswer {
	a.t.Helper()
	code, _, b := a.do("POST", "/v1/sessions", token, body, header...)
	var got struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal(b, &got)
	return startAnswer{code: code, id: got.SessionID, body: string(b)}
}

// TestIdempotencyKeyNamesTheSession checks that a start with an
// Idempotency-Key and no session_id names its session after the key, the
// token's scope and the agent, so a retry after a lost response starts
// nothing new and answers 200 with the same ID.
func TestIdempotencyKeyNamesTheSession(t *testing.T) {
	a := newTestAPI(t, nil)
	first := a.start(testTokenU1, `{"agent":"test","initial_message":"hi"}`, "Idempotency-Key", "key-1")
	if first.code != http.StatusCreated || !strings.HasPrefix(first.id, "u1-session-") {
		t.Fatalf("first start: %+v, want 201 and a u1-session- ID", first)
	}
	retry := a.start(testTokenU1, `{"agent":"test","initial_message":"hi"}`, "Idempotency-Key", "key-1")
	if retry.code != http.StatusOK || retry.id != first.id {
		t.Fatalf("retry: %+v, want 200 with %s", retry, first.id)
	}
	a.temporal.svc.mu.Lock()
	starts := len(a.temporal.svc.starts)
	n := len(a.temporal.svc.workflows)
	a.temporal.svc.mu.Unlock()
	if starts != 2 || n != 1 {
		t.Fatalf("%d start requests made %d sessions; want 2 and 1", starts, n)
	}

	// Once the session ended, the ID still proves the key: 200 with it.
	a.temporal.svc.mu.Lock()
	a.temporal.svc.closed[first.id] = true
	a.temporal.svc.mu.Unlock()
	if late := a.start(testTokenU1, `{"agent":"test"}`, "Idempotency-Key", "key-1"); late.code != http.StatusOK || late.id != first.id {
		t.Errorf("retry after the session ended: %+v, want 200 with %s", late, first.id)
	}

	// The key is scoped: another prefix, agent or key names another session.
	seen := map[string]string{first.id: "u1 test key-1"}
	for _, tt := range []struct{ name, token, body, key string }{
		{"another prefix", testTokenAcme, `{"agent":"test"}`, "key-1"},
		{"no prefix", testTokenAll, `{"agent":"test"}`, "key-1"},
		{"another agent", testTokenU1, `{"agent":"other"}`, "key-1"},
		{"another key", testTokenU1, `{"agent":"test"}`, "key-2"},
	} {
		got := a.start(tt.token, tt.body, "Idempotency-Key", tt.key)
		if got.code != http.StatusCreated || seen[got.id] != "" {
			t.Errorf("%s: %+v, want 201 with a new session (seen: %v)", tt.name, got, seen)
		}
		seen[got.id] = tt.name
	}
	// Without a key every start is a new session.
	for range 2 {
		got := a.start(testTokenU1, `{"agent":"test"}`)
		if got.code != http.StatusCreated || seen[got.id] != "" {
			t.Errorf("start without a key: %+v, want 201 with a new session", got)
		}
		seen[got.id] = "no key"
	}
	// An explicit session_id wins over the key; the engine answers a retry
	// of its start as a success while the session runs.
	for i, want := range []int{http.StatusCreated, http.StatusCreated} {
		got := a.start(testTokenU1, `{"agent":"test","session_id":"u1-mine"}`, "Idempotency-Key", "key-3")
		if got.code != want || got.id != "u1-mine" {
			t.Errorf("explicit ID, start %d: %+v, want %d", i, got, want)
		}
	}
	if got := a.start(testTokenU1, `{"agent":"test","session_id":"u1-mine"}`, "Idempotency-Key", "key-4"); got.code != http.StatusConflict {
		t.Errorf("explicit ID with another key: %+v, want 409", got)
	}
	// A bad key is a clear 400.
	for _, key := range []string{strings.Repeat("k", MaxIdempotencyKeyLength+1), "tab\there", "caf\u00e9"} {
		got := a.start(testTokenU1, `{"agent":"test"}`, "Idempotency-Key", key)
		if e := decodeError(t, []byte(got.body)); got.code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "Idempotency-Key") {
			t.Errorf("key %q: %+v, want a 400 naming Idempotency-Key", key, got)
		}
	}
}

// TestMessageIDIsTheUpdateID checks that a send's message_id reaches the
// engine as the update ID (the engine applies one update per ID), and that
// a bad one is refused before anything is sent.
func TestMessageIDIsTheUpdateID(t *testing.T) {
	a := newTestAPI(t, nil)
	a.temporal.addWorkflow("s-1", "TestAgent")
	for range 2 {
		if code, _, body := a.do("POST", "/v1/sessions/s-1/messages", testTokenAll, `{"text":"hi","message_id":"m-7.a:b_c"}`); code != http.StatusOK {
			t.Fatalf("send: %d %s", code, body)
		}
	}
	if code, _, body := a.do("POST", "/v1/sessions/s-1/messages", testTokenAll, `{"text":"hi"}`); code != http.StatusOK {
		t.Fatalf("send without an ID: %d %s", code, body)
	}
	for _, bad := range []string{`"a b"`, `"x/y"`, `"` + strings.Repeat("m", 129) + `"`, `"é"`} {
		code, _, body := a.do("POST", "/v1/sessions/s-1/messages", testTokenAll, `{"text":"hi","message_id":`+bad+`}`)
		if e := decodeError(t, body); code != http.StatusBadRequest || !strings.HasPrefix(e.Error.Message, "message_id: ") {
			t.Errorf("message_id %s: %d %s, want a 400 naming message_id", bad, code, body)
		}
	}
	a.temporal.mu.Lock()
	defer a.temporal.mu.Unlock()
	var ids []string
	for _, u := range a.temporal.updates {
		ids = append(ids, u.UpdateID)
	}
	if len(ids) != 3 || ids[0] != "m-7.a:b_c" || ids[1] != "m-7.a:b_c" || ids[2] == "" || ids[2] == ids[0] {
		t.Errorf("update IDs = %q, want the message_id twice, then a new one the client picks", ids)
	}
}

// TestUpdateErrorsSayWhetherTheyMayStillApply checks the answers of the
// update routes when the engine does not confirm the update.
func TestUpdateErrorsSayWhetherTheyMayStillApply(t *testing.T) {
	var (
		mu     sync.Mutex
		answer error
	)
	a := newTestAPI(t, func(o *Options) { o.UpdateTimeout = 50 * time.Millisecond })
	a.temporal.addWorkflow("s-1", "TestAgent")
	a.temporal.mu.Lock()
	a.temporal.update = func(ctx context.Context, _ temporalclient.UpdateWorkflowOptions) (bool, error) {
		mu.Lock()
		answer := answer
		mu.Unlock()
		if answer == nil {
			// No worker: the engine holds the update until the caller's
			// deadline, and the SDK reports the timeout.
			<-ctx.Done()
			return false, temporalclient.NewWorkflowUpdateServiceTimeoutOrCanceledError(ctx.Err())
		}
		return false, answer
	}
	a.temporal.mu.Unlock()
	tests := []struct {
		name   string
		err    error
		status int
		code   string
		maybe  bool
	}{
		{"no worker answered in time", nil, 503, "unavailable", true},
		{"engine unavailable", serviceerror.NewUnavailable("connection refused"), 503, "unavailable", true},
		{"session not running", serviceerror.NewNotFound("workflow execution already completed"), 404, "not_found", false},
		{"validator rejection", temporal.NewApplicationError("the message is too large", "InvalidMessage"), 400, "bad_request", false},
		{"too many updates", serviceerror.NewResourceExhausted(0, "too many in-flight updates"), 429, "too_many_requests", false},
		{"unknown", errors.New("boom"), 500, "internal", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			answer = tt.err
			mu.Unlock()
			for _, route := range []struct{ path, body, hint string }{
				{"/v1/sessions/s-1/messages", `{"text":"hi","message_id":"m-1"}`, "retry with the same message_id"},
				{"/v1/sessions/s-1/interrupts/call-1", `{"approved":true}`, "a retry is safe"},
			} {
				code, _, body := a.do("POST", route.path, testTokenAll, route.body)
				e := decodeError(t, body)
				if code != tt.status || e.Error.Code != tt.code || e.Error.MayStillApply == nil || *e.Error.MayStillApply != tt.maybe {
					t.Errorf("%s: %d %s, want %d %s with may_still_apply %v", route.path, code, body, tt.status, tt.code, tt.maybe)
				}
				if tt.status == 503 && !strings.Contains(e.Error.Message, route.hint) {
					t.Errorf("%s: message %q does not say how to retry (%q)", route.path, e.Error.Message, route.hint)
				}
			}
		})
	}
	// Errors before the update was sent carry no may_still_apply.
	code, _, body := a.do("POST", "/v1/sessions/s-1/messages", testTokenAll, `{"text":1}`)
	if e := decodeError(t, body); code != 400 || e.Error.MayStillApply != nil {
		t.Errorf("bad body: %d %s", code, body)
	}
}

// TestExpiredResumeTokenIsRejected drops a session's events after its idle
// time (on an injected clock) while the session goes on publishing: the
// snapshot's old token answers 400 "reload the snapshot" instead of
// resuming in the new events.
func TestExpiredResumeTokenIsRejected(t *testing.T) {
	var (
		mu  sync.Mutex
		now = time.Unix(1_800_000_000, 0)
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	broker := events.NewMemoryBroker(events.MemoryOptions{IdleTTL: time.Hour, Now: clock})
	a := newTestAPI(t, func(o *Options) { o.Broker = broker })
	a.temporal.addWorkflow("s-1", "TestAgent")
	publish := func(n int) {
		for i := range n {
			broker.Publish(events.Event{SessionID: "s-1", Type: "text_delta", TurnID: "turn-1", Payload: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))})
		}
	}
	publish(3)
	code, _, body := a.do("GET", "/v1/sessions/s-1/snapshot", testTokenAll, "")
	var snap struct {
		ResumeToken string `json:"resume_token"`
	}
	if err := json.Unmarshal(body, &snap); err != nil || code != 200 || snap.ResumeToken == "" {
		t.Fatalf("snapshot: %d %s", code, body)
	}
	if err := broker.Check(context.Background(), "s-1", snap.ResumeToken); err != nil {
		t.Fatalf("the snapshot's token: %v", err)
	}

	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	broker.Publish(events.Event{SessionID: "other", Type: "x.y", Payload: json.RawMessage(`{}`)}) // sweeps s-1
	publish(10)                                                                                   // a new stream
	code, _, body = a.do("GET", "/v1/sessions/s-1/events?resume_token="+url.QueryEscape(snap.ResumeToken), testTokenAll, "")
	if e := decodeError(t, body); code != 400 || !strings.Contains(e.Error.Message, "expired") || !strings.Contains(e.Error.Message, "reload the snapshot") {
		t.Errorf("events from the expired token: %d %s, want 400 saying it expired and to reload the snapshot", code, body)
	}
}

// openEvents opens an event stream and returns its status and a func that
// closes it.
func (a *testAPI) openEvents(id, token string) (int, []byte, func()) {
	a.t.Helper()
	ctx, cancel := context.WithCancel(a.t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		a.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return resp.StatusCode, b, func() {}
	}
	return resp.StatusCode, nil, func() { cancel(); resp.Body.Close() }
}

// TestEventStreamsPerTokenAreLimited holds a token's most streams open:
// the next one gets 429, other tokens are not affected, and closing one
// frees its place.
func TestEventStreamsPerTokenAreLimited(t *testing.T) {
	a := newTestAPI(t, func(o *Options) { o.MaxStreamsPerToken = 2 })
	a.temporal.addWorkflow("s-1", "TestAgent")
	a.temporal.addWorkflow("u1-s", "TestAgent")
	var closers []func()
	for i := range 2 {
		code, body, closeIt := a.openEvents("s-1", testTokenAll)
		if code != http.StatusOK {
			t.Fatalf("stream %d: %d %s", i, code, body)
		}
		closers = append(closers, closeIt)
	}
	code, body, _ := a.openEvents("s-1", testTokenAll)
	if e := decodeError(t, body); code != http.StatusTooManyRequests || e.Error.Code != "too_many_requests" || !strings.Contains(e.Error.Message, "2 event streams open") {
		t.Fatalf("third stream: %d %s, want 429 too_many_requests", code, body)
	}
	// The limit is per token.
	code, body, closeU1 := a.openEvents("u1-s", testTokenU1)
	if code != http.StatusOK {
		t.Fatalf("another token's stream: %d %s", code, body)
	}
	defer closeU1()
	// Closing a stream frees its place once the server sees it end.
	closers[0]()
	defer closers[1]()
	for {
		code, body, closeIt := a.openEvents("s-1", testTokenAll)
		if code == http.StatusOK {
			closeIt()
			break
		}
		if code != http.StatusTooManyRequests {
			t.Fatalf("stream after a close: %d %s", code, body)
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the closed stream's place was never freed")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestMessagesLimitIsClamped: a limit outside 1..200 is clamped, as
// list_agent_messages does, not refused; a limit that is no integer is.
func TestMessagesLimitIsClamped(t *testing.T) {
	for _, tt := range []struct {
		query string
		want  int
		err   bool
	}{
		{"", DefaultPageSize, false},
		{"limit=7", 7, false},
		{"limit=0", 1, false},
		{"limit=-5", 1, false},
		{"limit=201", 200, false},
		{"limit=99999999999", 200, false},
		{"limit=seven", 0, true},
	} {
		q, _ := url.ParseQuery(tt.query)
		req, err := parseListQuery(q)
		if (err != nil) != tt.err || (!tt.err && req.Limit != tt.want) {
			t.Errorf("%q: limit %d, error %v; want %d, error %v", tt.query, req.Limit, err, tt.want, tt.err)
		}
	}
}

// TestStartNamesTheAgentsATokenMayStart: starting an unknown agent, or one
// outside the token's scope, fails with the agents the token may start,
// and never names one it may not.
func TestStartNamesTheAgentsATokenMayStart(t *testing.T) {
	a := newTestAPI(t, func(o *Options) {
		o.Tokens = append(o.Tokens, Token{Name: "only-test", Value: "unit-only-test-0123456789abcdef", Agents: []string{"test"}})
	})
	code, _, body := a.do("POST", "/v1/sessions", testTokenAll, `{"agent":"nobody"}`)
	if msg := decodeError(t, body).Error.Message; code != http.StatusBadRequest || msg != `unknown agent "nobody" (this token may start: other, test)` {
		t.Errorf("unknown agent: %d %s", code, body)
	}
	code, _, body = a.do("POST", "/v1/sessions", "unit-only-test-0123456789abcdef", `{"agent":"nobody"}`)
	if msg := decodeError(t, body).Error.Message; code != http.StatusBadRequest || msg != `unknown agent "nobody" (this token may start: test)` {
		t.Errorf("unknown agent, scoped token: %d %s", code, body)
	}
	code, _, body = a.do("POST", "/v1/sessions", "unit-only-test-0123456789abcdef", `{"agent":"other"}`)
	if msg := decodeError(t, body).Error.Message; code != http.StatusForbidden || msg != `this token may not start sessions of agent other (this token may start: test)` {
		t.Errorf("agent outside the scope: %d %s", code, body)
	}
}

// TestAClosedSessionAnswers409: an update to a session whose workflow
// completed fails with the engine's NotFound; the API answers 409
// session_closed, saying how it ended, while the engine keeps the closed
// workflow, and 404 for a session it never had.
func TestAClosedSessionAnswers409(t *testing.T) {
	a := newTestAPI(t, func(o *Options) {})
	a.temporal.addWorkflow("done-1", "TestAgent")
	a.temporal.svc.mu.Lock()
	a.temporal.svc.closed["done-1"] = true
	a.temporal.svc.mu.Unlock()
	a.temporal.update = func(context.Context, temporalclient.UpdateWorkflowOptions) (bool, error) {
		return false, serviceerror.NewNotFound("workflow execution already completed")
	}
	for _, r := range []struct{ path, body string }{
		{"/messages", `{"text":"hi"}`},
		{"/interrupts/call-1", `{"approved":true}`},
		{"/questions/call-1-input-1", `{"answer":"7"}`},
	} {
		code, _, body := a.do("POST", "/v1/sessions/done-1"+r.path, testTokenAll, r.body)
		e := decodeError(t, body).Error
		if code != http.StatusConflict || e.Code != "session_closed" || e.Message != "session done-1 was closed: it takes no messages or answers" {
			t.Errorf("%s: %d %s, want 409 session_closed", r.path, code, body)
		}
	}
	if code, _, body := a.do("POST", "/v1/sessions/never-1/messages", testTokenAll, `{"text":"hi"}`); code != http.StatusNotFound {
		t.Errorf("an unknown session: %d %s, want 404", code, body)
	}
}

// TestApprovalTextsFillPendingApprovals: a pending approval of a tool with
// an approval_text carries it filled from the call's arguments; a question,
// another tool and arguments that do not fit carry none.
func TestApprovalTextsFillPendingApprovals(t *testing.T) {
	a := newTestAPI(t, func(o *Options) {
		o.Agents[0].ApprovalTexts = map[string]string{"refund_order": "Refund {amount_cents|usd} on order {order_id}"}
	})
	snap := wire.Snapshot{Agent: "test", PendingInterrupts: []wire.Interrupt{
		{InterruptID: "c1", ToolName: "refund_order", Kind: wire.InterruptKindApproval, Arguments: `{"order_id":"9","amount_cents":7750}`},
		{InterruptID: "c2", ToolName: "refund_order", Kind: wire.InterruptKindApproval, Arguments: `{"order_id":"9"}`},
		{InterruptID: "c3", ToolName: "close_order", Kind: wire.InterruptKindApproval, Arguments: `{"order_id":"9"}`},
		{InterruptID: "c4", ToolName: "refund_order", Kind: wire.InterruptKindQuestion, Arguments: `{"order_id":"9","amount_cents":1}`},
	}}
	a.server.fillApprovalTexts(&snap)
	var got []string
	for _, in := range snap.PendingInterrupts {
		got = append(got, in.ApprovalText)
	}
	if want := []string{"Refund $77.50 on order 9", "", "", ""}; !slices.Equal(got, want) {
		t.Errorf("approval texts = %q, want %q", got, want)
	}
	// A tool's display_text fills its calls' one line.
	b := newTestAPI(t, func(o *Options) {
		o.Agents[0].DisplayTexts = map[string]string{"lookup_order": "Looked up order {order_id}"}
	})
	calls := wire.Snapshot{Agent: "test", ToolCalls: []wire.ToolCall{
		{ToolCallID: "c1", ToolName: "lookup_order", Arguments: `{"order_id":"9"}`},
		{ToolCallID: "c2", ToolName: "lookup_order", Arguments: `{}`},
		{ToolCallID: "c3", ToolName: "refund_order", Arguments: `{"order_id":"9"}`},
	}}
	b.server.fillApprovalTexts(&calls)
	got = got[:0]
	for _, c := range calls.ToolCalls {
		got = append(got, c.DisplayText)
	}
	if want := []string{"Looked up order 9", "", ""}; !slices.Equal(got, want) {
		t.Errorf("display texts = %q, want %q", got, want)
	}
}

// TestSignInCookie: on a loopback address the page trades its token for an
// HttpOnly, SameSite=Strict cookie that holds a random ID (never the
// token); the cookie counts only with the page's header (no cross-site
// use), not on another host, and not after sign-out.
func TestSignInCookie(t *testing.T) {
	a := newTestAPI(t, nil)
	req := func(method, path, token, cookie string, web bool) *http.Response {
		t.Helper()
		r, err := http.NewRequestWithContext(t.Context(), method, a.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		if cookie != "" {
			r.Header.Set("Cookie", cookie)
		}
		if web {
			r.Header.Set(WebClientHeader, "web")
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := req("POST", "/v1/auth/cookie", testTokenAll, "", false); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("without the page's header: %d", resp.StatusCode)
	}
	if resp := req("POST", "/v1/auth/cookie", "wrong-token-0123456789", "", true); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("with a bad token: %d", resp.StatusCode)
	}
	resp := req("POST", "/v1/auth/cookie", testTokenAll, "", true)
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusNoContent || len(cookies) != 1 {
		t.Fatalf("sign in: %d, cookies %v", resp.StatusCode, cookies)
	}
	c := cookies[0]
	if !strings.HasPrefix(c.Name, "dex_session_") || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || len(c.Value) != 64 || strings.Contains(c.Value, testTokenAll) || c.MaxAge != 0 {
		t.Errorf("the cookie: %+v", c)
	}
	jar := c.Name + "=" + c.Value
	if resp := req("GET", "/v1/agents", "", jar, true); resp.StatusCode != http.StatusOK {
		t.Errorf("the cookie with the page's header: %d", resp.StatusCode)
	}
	status := func(cookie string) string {
		t.Helper()
		r, _ := http.NewRequestWithContext(t.Context(), "GET", a.url+"/v1/auth/cookie", nil)
		r.Header.Set("Cookie", cookie)
		r.Header.Set(WebClientHeader, "web")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if got := status(jar); got != `200 {"signed_in":true}` {
		t.Errorf("GET /v1/auth/cookie with the cookie: %s", got)
	}
	if resp := req("GET", "/v1/agents", "", jar, false); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie without the page's header (a cross-site request): %d", resp.StatusCode)
	}
	if resp := req("GET", "/v1/agents", "", c.Name+"=not-a-session", true); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unknown cookie: %d", resp.StatusCode)
	}
	if resp := req("POST", "/v1/auth/logout", "", jar, true); resp.StatusCode != http.StatusNoContent {
		t.Errorf("sign out: %d", resp.StatusCode)
	}
	if resp := req("GET", "/v1/agents", "", jar, true); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie after sign-out: %d", resp.StatusCode)
	}
	if got := status(jar); got != `200 {"signed_in":false}` {
		t.Errorf("GET /v1/auth/cookie after sign-out: %s", got)
	}
	// Not on another host: a page served to other machines keeps its token
	// in the tab.
	r, _ := http.NewRequestWithContext(t.Context(), "POST", a.url+"/v1/auth/cookie", nil)
	r.Host = "chat.example.com"
	r.Header.Set("Authorization", "Bearer "+testTokenAll)
	r.Header.Set(WebClientHeader, "web")
	if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("on another host: %v %v", resp, err)
	}
	for host, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "::1": true, "10.0.0.2:8080": false, "chat.example.com": false} {
		if loopbackHost(host) != want {
			t.Errorf("loopbackHost(%q) = %v", host, !want)
		}
	}
}

// TestTheFirstMessageTitlesAnUntitledSession: a session started with no
// message gets the first line of the first message it takes as its title
// (one set_session_metadata update), once; a titled one gets none.
func TestTheFirstMessageTitlesAnUntitledSession(t *testing.T) {
	a := newTestAPI(t, nil)
	a.temporal.addWorkflow("s-untitled", "TestAgent")
	a.temporal.addWorkflow("s-titled", "TestAgent")
	a.temporal.svc.mu.Lock()
	a.temporal.svc.untitled["s-untitled"] = true
	a.temporal.svc.mu.Unlock()
	for _, id := range []string{"s-untitled", "s-untitled", "s-titled"} {
		if code, _, body := a.do("POST", "/v1/sessions/"+id+"/messages", testTokenAll, `{"text":"\n  Where is   order 7?\nthanks"}`); code != http.StatusOK {
			t.Fatalf("send to %s: %d %s", id, code, body)
		}
	}
	a.temporal.mu.Lock()
	defer a.temporal.mu.Unlock()
	var titles []string
	for _, u := range a.temporal.updates {
		if u.UpdateName == wire.UpdateSessionMetadata {
			req := u.Args[0].(wire.SessionMetadataRequest)
			titles = append(titles, u.WorkflowID+": "+*req.Title)
		}
	}
	if want := []string{"s-untitled: Where is order 7?"}; !slices.Equal(titles, want) {
		t.Errorf("title updates = %q, want %q", titles, want)
	}
}

// openChanges opens the change feed and returns a channel of its change
// frames' data and a func that closes it.
func (a *testAPI) openChanges(token string) (<-chan wire.SessionChange, func()) {
	a.t.Helper()
	ctx, cancel := context.WithCancel(a.t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+"/v1/sessions/changes", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		a.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		cancel()
		a.t.Fatalf("GET /v1/sessions/changes: %d %s", resp.StatusCode, b)
	}
	out := make(chan wire.SessionChange, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var c wire.SessionChange
				if event != "change" || json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &c) != nil {
					c = wire.SessionChange{Type: "malformed frame: event " + event + ", " + line}
				}
				out <- c
			case line == "":
				event = ""
			}
		}
	}()
	// The stream is open once its first comment arrived; the watch started
	// before it.
	return out, func() { cancel(); resp.Body.Close() }
}

// TestChangeFeedShowsEachTokenItsSessions: the change feed carries the
// list-relevant events and announced changes of the sessions a token may
// see, and nothing of others (another prefix, another agent, a session
// the engine does not know); a resync reaches everyone; text deltas are
// not changes.
func TestChangeFeedShowsEachTokenItsSessions(t *testing.T) {
	broker := events.NewMemoryBroker(events.MemoryOptions{})
	a := newTestAPI(t, func(o *Options) {
		o.Broker = broker
		o.Tokens = append(o.Tokens, Token{Name: "other-only", Value: "unit-other-0123456789abcdef", Agents: []string{"other"}})
	})
	a.temporal.addWorkflow("s-1", "TestAgent")
	a.temporal.addWorkflow("u1-a", "TestAgent")
	a.temporal.addWorkflow("o-1", "OtherAgent")
	all, closeAll := a.openChanges(testTokenAll)
	defer closeAll()
	u1, closeU1 := a.openChanges(testTokenU1)
	defer closeU1()
	other, closeOther := a.openChanges("unit-other-0123456789abcdef")
	defer closeOther()
	waitWatchers(t, broker, 3)

	publish := func(id, typ string) {
		broker.Publish(events.Event{SessionID: id, Type: typ, Payload: json.RawMessage(`{}`)})
	}
	publish("s-1", wire.EventTurnStarted)
	publish("s-1", wire.EventTextDelta)
	publish("u1-a", wire.EventInterruptRaised)
	publish("nobody", wire.EventInterruptRaised) // no such session
	publish("o-1", wire.EventTurnCompleted)
	broker.Announce(events.Change{SessionID: "u1-a", Type: wire.ChangeSessionUpdated})
	broker.Announce(events.Change{Type: wire.ChangeResync})

	expect := func(name string, ch <-chan wire.SessionChange, want ...string) {
		t.Helper()
		var got []string
		for len(got) < len(want) {
			select {
			case c := <-ch:
				got = append(got, c.SessionID+" "+c.Type)
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: read %q, want %q", name, got, want)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: read %q, want %q", name, got, want)
		}
	}
	expect("all", all, "s-1 turn_started", "u1-a interrupt_raised", "o-1 turn_completed", "u1-a session_updated", " resync")
	expect("u1", u1, "u1-a interrupt_raised", "u1-a session_updated", " resync")
	expect("other-only", other, "o-1 turn_completed", " resync")
}

// waitWatchers waits until the broker's change feed has n watchers (the
// streams' watches start before their first frame, but the test reads no
// frame first).
func waitWatchers(t *testing.T, b *events.MemoryBroker, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.ChangeWatchers() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d change watchers, want %d", b.ChangeWatchers(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
