package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestParseWaitingFor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		err  string
	}{
		{in: "", want: ""},
		{in: "  ", want: ""},
		{in: "approval", want: "approval"},
		{in: "approval, question", want: "approval,question"},
		{in: "question,approval,question", want: "question,approval"},
		{in: "timer,task,user", want: "timer,task,user"},
		{in: "approvals", err: `waiting_for "approvals": want one or more of approval, question, timer, task, user`},
		{in: "approval,,question", err: `waiting_for ""`},
		{in: "AwaitToolApproval", err: `"AwaitToolApproval"`},
	} {
		got, err := wire.ParseWaitingFor(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseWaitingFor(%q) error = %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("ParseWaitingFor(%q): %v", tc.in, err)
		case tc.err == "" && strings.Join(got, ",") != tc.want:
			t.Errorf("ParseWaitingFor(%q) = %v, want %s", tc.in, got, tc.want)
		}
	}
}

func TestSessionsQuery(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ListSessionsOptions
		want string
		err  string
	}{
		{name: "default", want: "ExecutionStatus = 'Running'"},
		{name: "all", opts: ListSessionsOptions{Status: wire.ListAll}, want: "ExecutionStatus != 'ContinuedAsNew'"},
		{name: "waiting, all", opts: ListSessionsOptions{Status: wire.ListAll, WaitingFor: []string{wire.WaitingForApproval}},
			want: "ActiveStepTypes IN ('AwaitToolApproval') AND ExecutionStatus = 'Running'"},
		{name: "every kind", opts: ListSessionsOptions{WaitingFor: []string{"approval", "question", "timer", "task", "user"}},
			want: "ActiveStepTypes IN ('AwaitToolApproval', 'AwaitQuestionAnswer', 'AwaitTimer', 'PollToolTask', 'AwaitUserMessage') AND ExecutionStatus = 'Running'"},
		{name: "scope", opts: ListSessionsOptions{FlowTypes: []string{"OrdersAgent", "TestAgent"}, SessionPrefix: "u1"},
			want: "WorkflowType IN ('OrdersAgent', 'TestAgent') AND (WorkflowId = 'u1' OR WorkflowId STARTS_WITH 'u1-' OR WorkflowId STARTS_WITH 'u1_' OR WorkflowId STARTS_WITH 'u1:' OR WorkflowId STARTS_WITH 'u1.') AND ExecutionStatus = 'Running'"},
		{name: "prefix ending in a separator", opts: ListSessionsOptions{SessionPrefix: "acme-"},
			want: "WorkflowId STARTS_WITH 'acme-' AND ExecutionStatus = 'Running'"},
		{name: "quotes", opts: ListSessionsOptions{SessionPrefix: `a'b`, FlowTypes: []string{`X' OR 'a'='a`}},
			want: `WorkflowType IN ('X\' OR \'a\'=\'a') AND (WorkflowId = 'a\'b' OR WorkflowId STARTS_WITH 'a\'b-' OR WorkflowId STARTS_WITH 'a\'b_' OR WorkflowId STARTS_WITH 'a\'b:' OR WorkflowId STARTS_WITH 'a\'b.') AND ExecutionStatus = 'Running'`},
		// The store cannot match a backslash or a double quote: the query
		// keeps to the part before it, and ListSessions filters the rest.
		{name: "backslash in the prefix", opts: ListSessionsOptions{SessionPrefix: `a'b\c"`},
			want: `WorkflowId STARTS_WITH 'a\'b' AND ExecutionStatus = 'Running'`},
		{name: "prefix from a double quote on", opts: ListSessionsOptions{SessionPrefix: `"x`}, want: "ExecutionStatus = 'Running'"},
		{name: "backslash in a flow type", opts: ListSessionsOptions{FlowTypes: []string{`A\B`}}, err: "backslash or a double quote"},
		{name: "control character after a backslash", opts: ListSessionsOptions{SessionPrefix: "a\\b\x01"}, err: "control character"},
		{name: "control character", opts: ListSessionsOptions{SessionPrefix: "a\nb"}, err: "control character"},
		{name: "not UTF-8", opts: ListSessionsOptions{FlowTypes: []string{"\xff"}}, err: "not UTF-8"},
		{name: "empty flow type", opts: ListSessionsOptions{FlowTypes: []string{""}}, err: "is empty"},
		{name: "long prefix", opts: ListSessionsOptions{SessionPrefix: strings.Repeat("p", 512)}, err: "longer than 512"},
		{name: "unknown kind", opts: ListSessionsOptions{WaitingFor: []string{"coffee"}}, err: `waiting_for "coffee"`},
		{name: "status", opts: ListSessionsOptions{Status: "closed"}, err: `status "closed"`},
		{name: "page size", opts: ListSessionsOptions{PageSize: 101}, err: "page size must be 1 to 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SessionsQuery(tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidListOptions) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("query = %q, %v\nwant    %q", got, err, tc.want)
			}
		})
	}
}

func TestInSessionScope(t *testing.T) {
	for _, tc := range []struct {
		prefix, id string
		in         bool
	}{
		{"", "anything", true},
		{"u1", "u1", true}, {"u1", "u1-a", true}, {"u1", "u1_a", true}, {"u1", "u1:a", true}, {"u1", "u1.a", true},
		{"u1", "u10-a", false}, {"u1", "u", false}, {"u1", "x-u1-a", false},
		{"acme-", "acme-x", true}, {"acme-", "acme-", true}, {"acme-", "acme", false},
	} {
		if got := InSessionScope(tc.prefix, tc.id); got != tc.in {
			t.Errorf("InSessionScope(%q, %q) = %v", tc.prefix, tc.id, got)
		}
	}
}

func TestPageTokens(t *testing.T) {
	q1, _ := SessionsQuery(ListSessionsOptions{WaitingFor: []string{wire.WaitingForApproval}})
	q2, _ := SessionsQuery(ListSessionsOptions{WaitingFor: []string{wire.WaitingForQuestion}})
	tok := sealPageToken([]byte(`{"engine":1}`), q1)
	if err := CheckPageToken(tok); err != nil {
		t.Fatal(err)
	}
	if b, err := openPageToken(tok, q1); err != nil || string(b) != `{"engine":1}` {
		t.Errorf("open: %q %v", b, err)
	}
	if _, err := openPageToken(tok, q2); !errors.Is(err, ErrInvalidPageToken) || !strings.Contains(err.Error(), "another list") {
		t.Errorf("a token of another list: %v", err)
	}
	if b, err := openPageToken("", q1); b != nil || err != nil {
		t.Errorf("no token: %q %v", b, err)
	}
	for _, bad := range []string{"!!", "bm90LWEtdG9rZW4", tok + "==", "AAAAAAAAAAAAAA", strings.Repeat("a", wire.MaxPageTokenLength+1)} {
		if err := CheckPageToken(bad); !errors.Is(err, ErrInvalidPageToken) {
			t.Errorf("CheckPageToken(%.20q) = %v", bad, err)
		}
	}
}
