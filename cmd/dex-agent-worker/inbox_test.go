package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestInboxPrintsWhatWaitsAndHowToAnswer: each item with the command that
// answers it, a sub-agent's named; the filters reach the API.
func TestInboxPrintsWhatWaitsAndHowToAnswer(t *testing.T) {
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/inbox" || r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		query = r.URL.RawQuery
		_ = json.NewEncoder(w).Encode(wire.InboxPage{Items: []wire.InboxItem{
			{SessionID: "s-1", Title: "refund order 7", Agent: "orders", InterruptID: "call_1", Kind: "approval", ToolName: "refund_order", ApprovalText: "Refund $62.50 on order 7"},
			{SessionID: "s-2", Agent: "orders", HolderSessionID: "s-2.sub-1", InterruptID: "q1", Kind: "question", Question: "Which size?", Choices: []string{"S", "M"}},
		}, NextPageToken: "next"})
	}))
	defer srv.Close()
	stdout, stderr, code := runCLI(t, "inbox", "--http-address", srv.URL, "--token", "tok", "--kind", "approval,question", "--agent", "orders")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"orders · refund order 7 · s-1\n  approve? Refund $62.50 on order 7\n  approve: dex-agent-worker session approve s-1 call_1\n",
		"orders · s-2 · s-2 (sub-agent s-2.sub-1)\n  ? Which size?\n    1. S\n    2. M\n  answer:  dex-agent-worker session answer s-2 q1 S\n",
		"(more: dex-agent-worker inbox --page-token next)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the inbox lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(query, "kind=approval%2Cquestion") || !strings.Contains(query, "agent=orders") {
		t.Errorf("query %q", query)
	}
}
