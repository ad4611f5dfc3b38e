package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/wire"
)

const (
	tokenU2    = "token-u2-0123456789abcdef"
	tokenQuote = "token-quote-0123456789abcdef"
	tokenSlash = "token-slash-0123456789abcdef"
)

// newListStack is a stack whose worker serves the API, with two agents
// (test with ask_user, other) and tokens of different scopes.
func newListStack(t *testing.T) (*agenttest.Stack, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", "    built_in_tools: [ask_user]\n    run_model_limit:", 1) + fmt.Sprintf(`
  - name: other
    flow_type: OtherAgent
    runner: testrunner
    runner_config: {state_dir: "{{DIR}}"}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: all, token: %s, operator: true}
      - {name: acme, token: %s, session_prefix: "acme-"}
      - {name: other, token: %s, agents: [other]}
      - {name: u1, token: %s, session_prefix: "u1"}
      - {name: u2, token: %s, session_prefix: "u2", agents: [test]}
      - {name: quote, token: %s, session_prefix: 'o''k'}
      - {name: slash, token: %s, session_prefix: 'b\s"'}
`, port, tokenAll, tokenAcme, tokenOther, tokenU1, tokenU2, tokenQuote, tokenSlash)
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	return s, fmt.Sprintf("http://127.0.0.1:%d", port)
}

// listPage is GET /v1/sessions?query with token, sent raw; it fails the
// test on an answer other than 200.
func listPage(t *testing.T, base, token, query string) wire.SessionsPage {
	t.Helper()
	code, body := do(t, "GET", base+"/v1/sessions?"+query, token, "")
	if code != 200 {
		t.Fatalf("GET /v1/sessions?%s: %d %s", query, code, body)
	}
	var page wire.SessionsPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("GET /v1/sessions?%s: %v: %s", query, err, body)
	}
	return page
}

// listSessions is c.ListSessions(o); it fails the test on an error.
func listSessions(t *testing.T, c *httpclient.Client, o httpclient.ListSessionsOptions) wire.SessionsPage {
	t.Helper()
	page, err := c.ListSessions(ctx(t), o)
	if err != nil {
		t.Fatalf("ListSessions(%+v): %v", o, err)
	}
	return page
}

func pageIDs(p wire.SessionsPage) []string {
	ids := []string{}
	for _, s := range p.Sessions {
		ids = append(ids, s.SessionID)
	}
	slices.Sort(ids)
	return ids
}

// expectPage polls list until it lists exactly want (any order;
// visibility trails the sessions) and returns the last page.
func expectPage(t *testing.T, what string, list func() wire.SessionsPage, want ...string) wire.SessionsPage {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	if want == nil {
		want = []string{}
	}
	var page wire.SessionsPage
	err := agenttest.WaitFor(context.Background(), what, 30*time.Second, func() (bool, error) {
		page = list()
		return slices.Equal(pageIDs(page), want) && page.NextPageToken == "", nil
	})
	if err != nil {
		t.Fatalf("%v: got %v (next page %q), want %v", err, pageIDs(page), page.NextPageToken, want)
	}
	return page
}

// expectList polls c.ListSessions(o) until it lists exactly want.
func expectList(t *testing.T, c *httpclient.Client, o httpclient.ListSessionsOptions, want ...string) wire.SessionsPage {
	t.Helper()
	return expectPage(t, fmt.Sprintf("ListSessions(%+v)", o), func() wire.SessionsPage { return listSessions(t, c, o) }, want...)
}

// TestListSessionsWaitingForAPerson: one session waits for an approval,
// one for a question, one of another agent for the user's next message;
// GET /v1/sessions finds each by what it waits for, by agent, in pages of
// one, and only inside the caller token's agents and session prefix.
func TestListSessionsWaitingForAPerson(t *testing.T) {
	t.Parallel()
	s, base := newListStack(t)
	startAs := func(flow, id, message string) {
		t.Helper()
		if _, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flow, SessionID: id, InitialMessage: message}); err != nil {
			t.Fatal(err)
		}
	}
	const (
		approval = "u1-approve"
		question = "u1-ask"
		idle     = "u1-other"
		outside  = "u10-approve" // starts like u1's prefix but is outside it
	)
	startAs(flowType, approval, "call:approve_write:q")
	startAs(flowType, question, "ask:Which_city?")
	startAs("OtherAgent", idle, "hello")
	startAs(flowType, outside, "call:approve_write:r")
	s.WaitForSnapshot("a pending approval", approval, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	s.WaitForSnapshot("a pending question", question, pendingQuestion)
	s.WaitForSnapshot("the answer", idle, idleWithAnswer)

	u1, all := apiClient(t, base, tokenU1), apiClient(t, base, tokenAll)
	type opts = httpclient.ListSessionsOptions
	person := []string{wire.WaitingForApproval, wire.WaitingForQuestion}
	page := expectList(t, u1, opts{WaitingFor: []string{wire.WaitingForApproval}}, approval)
	if got := page.Sessions[0]; got.Agent != "test" || got.FlowType != flowType || !slices.Equal(got.WaitingFor, []string{"approval"}) || got.Title != "call:approve_write:q" ||
		got.Status != "running" || got.StartedAt.IsZero() || !slices.Contains(got.ActiveStepTypes, wire.StepAwaitToolApproval) {
		t.Errorf("the approval session: %+v", got)
	}
	page = expectList(t, u1, opts{WaitingFor: []string{wire.WaitingForQuestion}}, question)
	if got := page.Sessions[0]; !slices.Equal(got.WaitingFor, []string{"question"}) || got.Agent != "test" {
		t.Errorf("the question session: %+v", got)
	}
	// A title a person sets, and the archived flag, are the session's
	// memo: lists show them (after visibility catches up).
	if ok, err := u1.SetTitle(ctx(t), approval, "  Refund for Ann\nsecond line"); err != nil || !ok {
		t.Fatalf("set the title: %v %v", ok, err)
	}
	if ok, err := u1.SetArchived(ctx(t), approval, true); err != nil || !ok {
		t.Fatalf("archive: %v %v", ok, err)
	}
	var apiErr *httpclient.APIError
	if _, err := u1.SetTitle(ctx(t), approval, "   "); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "the title is blank") {
		t.Errorf("a blank title: %v", err)
	}
	err := agenttest.WaitFor(ctx(t), "the new title in the list", time.Minute, func() (bool, error) {
		page, err := u1.ListSessions(ctx(t), opts{WaitingFor: []string{wire.WaitingForApproval}})
		return err == nil && len(page.Sessions) == 1 && page.Sessions[0].Title == "Refund for Ann" && page.Sessions[0].Archived, err
	})
	if err != nil {
		t.Fatal(err)
	}
	// include=pending says what each asks of a person.
	page = expectList(t, u1, opts{WaitingFor: person, IncludePending: true}, approval, question)
	for _, got := range page.Sessions {
		want := wire.PendingSummary{Kind: wire.InterruptKindApproval, ToolName: "approve_write"}
		if got.SessionID == question {
			want = wire.PendingSummary{Kind: wire.InterruptKindQuestion, ToolName: "ask_user", Question: "Which city?"}
		}
		if len(got.Pending) != 1 || got.Pending[0].Kind != want.Kind || got.Pending[0].ToolName != want.ToolName || got.Pending[0].Question != want.Question || got.Pending[0].InterruptID == "" {
			t.Errorf("%s: pending = %+v, want %+v", got.SessionID, got.Pending, want)
		}
	}
	if page := expectList(t, u1, opts{WaitingFor: person}, approval, question); page.Sessions[0].Pending != nil {
		t.Errorf("pending without include=pending: %+v", page.Sessions[0].Pending)
	}
	// Every session waiting for a person, across agents, in one call.
	expectList(t, u1, opts{WaitingFor: person}, approval, question)
	expectList(t, all, opts{WaitingFor: person}, approval, question, outside)
	// waiting_for repeated is a form of the query the client does not send.
	expectPage(t, "GET /v1/sessions?waiting_for=approval&waiting_for=question&agent=test", func() wire.SessionsPage {
		return listPage(t, base, tokenAll, "waiting_for=approval&waiting_for=question&agent=test")
	}, approval, question, outside)
	page = expectList(t, u1, opts{WaitingFor: []string{wire.WaitingForUser}}, idle)
	if got := page.Sessions[0]; got.Agent != "other" || !slices.Equal(got.WaitingFor, []string{"user"}) {
		t.Errorf("the idle session: %+v", got)
	}
	expectList(t, u1, opts{}, approval, question, idle)
	expectList(t, u1, opts{Agent: "other"}, idle)
	expectList(t, u1, opts{Agent: "test"}, approval, question)
	expectList(t, u1, opts{WaitingFor: []string{wire.WaitingForTimer, wire.WaitingForTask}})

	// Pages of one walk the whole list, each session once.
	var walked []string
	o := opts{WaitingFor: person, PageSize: 1}
	for pages := 0; ; pages++ {
		if pages > 4 {
			t.Fatalf("more than 4 pages of 1 for 2 sessions: %v", walked)
		}
		p := listSessions(t, u1, o)
		if len(p.Sessions) > 1 {
			t.Fatalf("a page of 1 has %d sessions", len(p.Sessions))
		}
		walked = append(walked, pageIDs(p)...)
		if p.NextPageToken == "" {
			break
		}
		o.PageToken = p.NextPageToken
	}
	if slices.Sort(walked); !slices.Equal(walked, []string{approval, question}) {
		t.Errorf("pages of 1 listed %v", walked)
	}
	// A page token continues its own list only.
	first := listSessions(t, u1, opts{WaitingFor: person, PageSize: 1})
	if first.NextPageToken == "" {
		t.Fatal("the first page of 1 has no next page")
	}
	apiErr = nil
	for _, o := range []opts{{WaitingFor: []string{wire.WaitingForUser}}, {WaitingFor: person, Agent: "test"}} {
		o.PageToken = first.NextPageToken
		if _, err := u1.ListSessions(ctx(t), o); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "another list") {
			t.Errorf("%+v with a token of another list: %v", o, err)
		}
	}
	if _, err := all.ListSessions(ctx(t), opts{WaitingFor: person, PageToken: first.NextPageToken}); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Errorf("another token's page token: %v", err)
	}

	// Tokens of another prefix or agent see none of them.
	acme, other := apiClient(t, base, tokenAcme), apiClient(t, base, tokenOther)
	expectList(t, acme, opts{WaitingFor: person})
	expectList(t, acme, opts{})
	expectList(t, apiClient(t, base, tokenU2), opts{})
	expectList(t, other, opts{WaitingFor: person})
	expectList(t, other, opts{}, idle)
	// An authorization check: raw.
	if code, body := do(t, "GET", base+"/v1/sessions?agent=test", tokenOther, ""); code != 403 || !strings.Contains(string(body), `"code":"forbidden"`) {
		t.Errorf("another agent's list: %d %s", code, body)
	}

	// Prefixes with a quote, and with what the visibility store cannot
	// match (a backslash, a double quote), still keep to the exact rule.
	startAs(flowType, "o'k-1", "hello")
	startAs(flowType, "o'k1", "hello") // outside: no separator after the prefix
	startAs(flowType, `b\s"-1`, "hello")
	startAs(flowType, `b\s"x`, "hello") // outside
	startAs(flowType, `b\s-1`, "hello") // outside
	expectList(t, apiClient(t, base, tokenQuote), opts{}, "o'k-1")
	expectList(t, apiClient(t, base, tokenSlash), opts{WaitingFor: []string{wire.WaitingForUser}}, `b\s"-1`)

	// Bad queries are 400s that say what is allowed.
	for _, c := range []struct {
		opts opts
		want string
	}{
		{opts{WaitingFor: []string{wire.WaitingForApproval, "coffee"}}, `waiting_for "coffee": want one or more of approval, question, timer, task, user`},
		{opts{Agent: "nobody"}, `unknown agent "nobody"`},
		{opts{PageSize: 101}, "page_size must be an integer from 1 to 100"},
		{opts{PageToken: "bm90LWEtdG9rZW4"}, "page_token"},
		{opts{Status: "closed"}, `status "closed"`},
	} {
		if _, err := u1.ListSessions(ctx(t), c.opts); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, c.want) {
			t.Errorf("%+v: %v, want 400 with %s", c.opts, err, c.want)
		}
	}
	// An authorization check: raw.
	if code, _ := do(t, "GET", base+"/v1/sessions", "", ""); code != 401 {
		t.Errorf("no token: %d", code)
	}

	// A closed session: listed with status=all only, waiting for nothing.
	if err := s.Client.TerminateWorkflow(ctx(t), question, "", "list test"); err != nil {
		t.Fatal(err)
	}
	expectList(t, u1, opts{}, approval, idle)
	page = expectList(t, u1, opts{Status: wire.ListAll, Agent: "test"}, approval, question)
	for _, got := range page.Sessions {
		if got.SessionID == question && (got.Status != "terminated" || len(got.WaitingFor) != 0 || got.ClosedAt == nil) {
			t.Errorf("the terminated session: %+v", got)
		}
	}
	// What a session waits for holds while it runs: a closed one is not listed.
	expectList(t, u1, opts{Status: wire.ListAll, WaitingFor: []string{wire.WaitingForQuestion}})
	// A session started with no message takes its first message's first
	// line as its title, as the terminal chat's sessions do.
	untitled, err := u1.StartSession(ctx(t), httpclient.StartRequest{Agent: "test", SessionID: "u1-untitled"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := u1.SendMessage(ctx(t), untitled, "hello from the terminal\nmore"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	err = agenttest.WaitFor(ctx(t), "the first message's title in the list", time.Minute, func() (bool, error) {
		page, err := u1.ListSessions(ctx(t), opts{Agent: "test"})
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(page.Sessions, func(x wire.SessionSummary) bool { return x.SessionID == untitled })
		return i >= 0 && page.Sessions[i].Title == "hello from the terminal", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
