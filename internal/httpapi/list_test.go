package httpapi

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestParseSessionListQuery(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want sessionListQuery
		err  string
	}{
		{raw: "", want: sessionListQuery{Status: "running", PageSize: 50}},
		{raw: "waiting_for=approval,question&agent=orders&page_size=1",
			want: sessionListQuery{WaitingFor: []string{"approval", "question"}, Agent: "orders", Status: "running", PageSize: 1}},
		{raw: "waiting_for=approval&waiting_for=user,approval&status=all&page_size=100",
			want: sessionListQuery{WaitingFor: []string{"approval", "user"}, Status: "all", PageSize: 100}},
		{raw: "waiting_for=&status=running", want: sessionListQuery{Status: "running", PageSize: 50}},
		{raw: "page_token=AQEBAQEBAQEBe30", want: sessionListQuery{Status: "running", PageSize: 50, PageToken: "AQEBAQEBAQEBe30"}},
		{raw: "waiting_for=approval,coffee", err: `waiting_for "coffee": want one or more of approval, question, timer, task, user`},
		{raw: "waiting_for=%20", err: "waiting_for is blank"},
		{raw: "waiting_for=approval,", err: `waiting_for ""`},
		{raw: "agent=", err: "agent is empty"},
		{raw: "agent=a&agent=b", err: "give agent once"},
		{raw: "status=closed", err: `status "closed"`},
		{raw: "page_size=0", err: "page_size must be an integer from 1 to 100"},
		{raw: "page_size=101", err: "page_size must be"},
		{raw: "page_size=ten", err: "page_size must be"},
		{raw: "page_token=", err: "page_token"},
		{raw: "page_token=%21%21", err: "page_token"},
		{raw: "page_token=eyJhIjoxfQ", err: "page_token"},
		{raw: "limit=5", err: `unknown query parameter "limit"`},
	} {
		q, err := url.ParseQuery(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseSessionListQuery(q)
		if tc.err != "" {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 || !strings.Contains(ae.msg, tc.err) {
				t.Errorf("%q: error %v, want a 400 with %q", tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got.WaitingFor, tc.want.WaitingFor) || got.Agent != tc.want.Agent || got.Status != tc.want.Status ||
			got.PageSize != tc.want.PageSize || got.PageToken != tc.want.PageToken {
			t.Errorf("%q = %+v, %v\nwant %+v", tc.raw, got, err, tc.want)
		}
	}
}

// FuzzParseSessionListQuery feeds query strings to GET /v1/sessions'
// parser: an error is a 400, and what it accepts makes a visibility query
// (or is a name the handler refuses as an unknown agent).
func FuzzParseSessionListQuery(f *testing.F) {
	for _, seed := range []string{
		"waiting_for=approval,question&agent=orders&page_size=1", "status=all", "waiting_for=timer&waiting_for=task,user",
		"page_token=AQEBAQEBAQEBe30", "page_size=0", "waiting_for=x", "agent=%27%20OR%201=1", "page_token=%zz", "x=1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		got, err := parseSessionListQuery(q)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 {
				t.Fatalf("%q: error %v is not a 400", raw, err)
			}
			return
		}
		if got.PageSize < 1 || got.PageSize > wire.MaxListPageSize || (got.Status != wire.ListRunning && got.Status != wire.ListAll) {
			t.Fatalf("accepted %q as %+v", raw, got)
		}
		if _, err := client.SessionsQuery(client.ListSessionsOptions{WaitingFor: got.WaitingFor, Status: got.Status, PageSize: got.PageSize, FlowTypes: []string{"OrdersAgent"}, SessionPrefix: "u1"}); err != nil {
			t.Fatalf("accepted %q as %+v, but the query fails: %v", raw, got, err)
		}
	})
}

// FuzzSessionScopeRules: the client's prefix rule (which ListSessions
// applies) is this API's rule.
func FuzzSessionScopeRules(f *testing.F) {
	for _, seed := range [][2]string{{"u1", "u1-a"}, {"u1", "u10"}, {"acme-", "acme-x"}, {"", "x"}, {"a.", "a."}, {"u1", "u1"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, prefix, id string) {
		if a, b := InSessionScope(prefix, id), client.InSessionScope(prefix, id); a != b {
			t.Fatalf("prefix %q, id %q: httpapi %v, client %v", prefix, id, a, b)
		}
	})
}

// TestListIncludeIsChecked: include takes only "pending".
func TestListIncludeIsChecked(t *testing.T) {
	if _, err := parseSessionListQuery(url.Values{"include": {"everything"}}); err == nil || !strings.Contains(err.Error(), `include "everything": want "pending"`) {
		t.Errorf("include=everything: %v", err)
	}
	q, err := parseSessionListQuery(url.Values{"include": {"pending"}})
	if err != nil || !q.Pending {
		t.Errorf("include=pending: %+v %v", q, err)
	}
}
