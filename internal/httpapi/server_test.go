package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/dex-agents/dex-agent-worker/internal/events"
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
	starts     []*workflowservice.StartWorkflowExecutionRequest
}

func newFakeTemporal() *fakeTemporal {
	return &fakeTemporal{svc: &fakeService{workflows: map[string]string{}, requestIDs: map[string]string{}}}
}

// StartWorkflowExecution starts a workflow the way the engine's reject
// duplicate policy does: a start with the request ID of the running
// workflow is answered as a deduplicated success, any other start of an
// existing ID fails.
func (f *fakeService) StartWorkflowExecution(_ context.Context, req *workflowservice.StartWorkflowExecutionRequest, _ ...grpc.CallOption) (*workflowservice.StartWorkflowExecutionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, req)
	id := req.GetWorkflowId()
	if _, ok := f.workflows[id]; ok {
		if f.requestIDs[id] == req.GetRequestId() {
			return &workflowservice.StartWorkflowExecutionResponse{RunId: "run-1", Started: false}, nil
		}
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("workflow already started", req.GetRequestId(), "run-1")
	}
	f.workflows[id] = req.GetWorkflowType().GetName()
	f.requestIDs[id] = req.GetRequestId()
	return &workflowservice.StartWorkflowExecutionResponse{RunId: "run-1", Started: true}, nil
}

func (f *fakeTemporal) WorkflowService() workflowservice.WorkflowServiceClient { return f.svc }

func (f *fakeTemporal) addWorkflow(id, flowType string) {
	f.svc.mu.Lock()
	defer f.svc.mu.Unlock()
	f.svc.workflows[id] = flowType
}

func (f *fakeService) DescribeWorkflowExecution(_ context.Context, req *workflowservice.DescribeWorkflowExecutionRequest, _ ...grpc.CallOption) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	typ, ok := f.workflows[req.GetExecution().GetWorkflowId()]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: req.GetExecution(), Type: &commonpb.WorkflowType{Name: typ},
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

// newTestAPI serves the API over a fake engine with one agent ("test",
// workflow type TestAgent) and three tokens: one for everything, one with
// session prefix "u1" and one with prefix "acme-".
func newTestAPI(t *testing.T, mod func(*Options)) *testAPI {
	t.Helper()
	ft := newFakeTemporal()
	opts := Options{
		Temporal: ft, Namespace: "default", TaskQueue: "q",
		Broker: events.NewMemoryBroker(events.MemoryOptions{}),
		Agents: []Agent{{Name: "test", FlowType: "TestAgent"}},
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
