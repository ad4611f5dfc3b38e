package mcpsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

func newSource(t *testing.T, servers []Server, opts Options) *Source {
	t.Helper()
	s, err := New(servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestToolsListingAndEffects(t *testing.T) {
	rec := &recorder{}
	url := serveHTTP(t, newMCPServer(rec), rec, nil)
	untrusted := false
	s := newSource(t, []Server{
		{Name: "files", URL: url, Headers: map[string]string{"Authorization": testSecret}},
		{Name: "shady", URL: url, TrustsToolAnnotations: &untrusted},
	}, Options{})
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]pluginapi.Effect{}
	for _, tool := range tools {
		got[tool.Name] = tool.Effect
	}
	want := map[string]pluginapi.Effect{
		"files__read": pluginapi.EffectRead, "files__lookup": pluginapi.EffectRead, "shady__lookup": "", "files__upsert": pluginapi.EffectIdempotentWrite,
		"files__write": "", "files__plain": "", "files__fail": "", "files__rpcerr": "",
		"files__internal": "", "files__slow": "", "files__progress": "", "files__ask": "", "files__again": "", "shady__again": "",
		"shady__read": "", "shady__upsert": "", "shady__write": "", "shady__plain": "", "shady__fail": "",
		"shady__rpcerr": "", "shady__internal": "", "shady__slow": "", "shady__progress": "", "shady__ask": "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effects (-want +got):\n%s", diff)
	}
	// Server order first.
	if !strings.HasPrefix(tools[0].Name, "files__") || !strings.HasPrefix(tools[len(tools)-1].Name, "shady__") {
		t.Errorf("tools not in server order: %v", names(tools))
	}
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == "files__read" })
	read := tools[i]
	if read.Ref != "mcp:files/read" || read.Server != "files" || read.MCPName != "read" || read.Description != "reads" {
		t.Errorf("files__read = %+v", read)
	}
	var schema map[string]any
	if err := json.Unmarshal(read.InputSchema, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("input schema = %s (%v)", read.InputSchema, err)
	}
	// The session's policies and default take the effect as the spec says.
	set := pluginapi.PolicySet{DefaultEffect: pluginapi.EffectUnclassified,
		Policies: map[string]pluginapi.ToolPolicy{"files__upsert": {Effect: pluginapi.EffectNonIdempotentWrite}}}
	if p := read.Policy(set); p.Effect != pluginapi.EffectRead || p.ApprovalRequired() {
		t.Errorf("read policy = %+v", p)
	}
	upsert := tools[slices.IndexFunc(tools, func(t Tool) bool { return t.Name == "files__upsert" })]
	if p := upsert.Policy(set); p.Effect != pluginapi.EffectNonIdempotentWrite {
		t.Errorf("a config policy must win over the annotations: %+v", p)
	}
	shadyRead := tools[slices.IndexFunc(tools, func(t Tool) bool { return t.Name == "shady__read" })]
	if p := shadyRead.Policy(set); p.Effect != pluginapi.EffectUnclassified || !p.ApprovalRequired() {
		t.Errorf("an untrusted read must keep the default with approval: %+v", p)
	}
	// The headers reached the server, and it negotiated 2026-07-28.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Contains(rec.auth, testSecret) {
		t.Errorf("the Authorization header never reached the server: %q", rec.auth)
	}
	if !slices.Contains(rec.protocols, "2026-07-28") {
		t.Errorf("protocol versions seen = %q, want 2026-07-28", rec.protocols)
	}
}

func TestToolsCacheTTLRefreshesInTheBackground(t *testing.T) {
	rec := &recorder{}
	srv := newMCPServer(rec)
	url := serveHTTP(t, srv, rec, nil)
	clock := newFakeClock()
	s := newSource(t, []Server{{Name: "a", URL: url}}, Options{Now: clock.Now})
	ctx := context.Background()
	first, err := s.Tools(ctx)
	if err != nil || len(first) == 0 {
		t.Fatalf("Tools = %v, %v", names(first), err)
	}
	if n := rec.listCount(); n != 1 {
		t.Fatalf("tools/list count = %d, want 1", n)
	}
	clock.Advance(DefaultListingTTL - time.Second)
	if _, err := s.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rec.listCount(); n != 1 {
		t.Fatalf("a fresh cache was listed again: count %d", n)
	}
	// A tool appears on the server; past the TTL the old list is returned
	// at once and the new one arrives from the background listing.
	srv.AddTool(&mcp.Tool{Name: "added", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	clock.Advance(2 * time.Second)
	stale, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != len(first) {
		t.Errorf("the stale call returned %d tools, want the earlier %d", len(stale), len(first))
	}
	waitFor(t, "the background listing", func() bool {
		tools, _ := s.Tools(ctx)
		return slices.Contains(names(tools), "a__added")
	})
	if n := rec.listCount(); n != 2 {
		t.Errorf("tools/list count = %d, want 2 (one background refresh)", n)
	}
	// Refresh lists now.
	if _, err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rec.listCount(); n != 3 {
		t.Errorf("after Refresh tools/list count = %d, want 3", n)
	}
}

func TestOneListingPerServerAtATime(t *testing.T) {
	rec := &recorder{}
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	url := serveHTTP(t, newMCPServer(rec), rec, func(next http.Handler) http.Handler {
		return onToolsList(func(w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			<-release // hold the listing while the other callers arrive
			next.ServeHTTP(w, r)
		})(next)
	})
	s := newSource(t, []Server{{Name: "a", URL: url}}, Options{})
	ctx := context.Background()
	done := make(chan []Tool)
	for range 8 {
		go func() {
			tools, err := s.Tools(ctx)
			if err != nil {
				t.Error(err)
			}
			done <- tools
		}()
	}
	<-arrived
	time.Sleep(100 * time.Millisecond) // the other seven are waiting too
	close(release)
	for range 8 {
		if tools := <-done; len(tools) == 0 {
			t.Error("a caller that waited for the first listing got no tools")
		}
	}
	if n := rec.listCount(); n != 1 {
		t.Errorf("8 concurrent first calls made %d listings, want 1", n)
	}
}

func TestFailingServerBacksOffAndNeverHidesTheOthers(t *testing.T) {
	rec := &recorder{}
	good := serveHTTP(t, newMCPServer(rec), rec, nil)
	badRec := &recorder{}
	bad := serveHTTP(t, newMCPServer(badRec), badRec, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>down</html>", http.StatusInternalServerError)
		})
	})
	clock := newFakeClock()
	logger, logs := newLogger()
	s := newSource(t, []Server{
		{Name: "bad", URL: bad, Headers: map[string]string{"Authorization": testSecret}, ConnectionAttempts: 1},
		{Name: "good", URL: good},
	}, Options{Now: clock.Now, Logger: logger})
	ctx := context.Background()
	tools, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Server != "good" {
			t.Errorf("a tool of the failing server was offered: %s", tool.Name)
		}
	}
	if len(tools) == 0 {
		t.Fatal("the good server's tools are hidden")
	}
	if !strings.Contains(logs.String(), "could not be listed") || !strings.Contains(logs.String(), "server=bad") {
		t.Errorf("no warning for the failing server: %s", logs.String())
	}
	if hasSecret(logs.String()) {
		t.Errorf("a secret reached the log: %s", logs.String())
	}
	badRec.mu.Lock()
	hits := len(badRec.auth)
	badRec.mu.Unlock()
	clock.Advance(DefaultListingFailureBackoff - time.Second)
	if _, err := s.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	badRec.mu.Lock()
	if len(badRec.auth) != hits {
		t.Errorf("the failing server was tried again within its backoff")
	}
	badRec.mu.Unlock()
	// Past the backoff it is tried again, in the background: the call
	// returns the good tools without waiting for it.
	clock.Advance(2 * time.Second)
	if _, err := s.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the background retry of the failing server", func() bool {
		badRec.mu.Lock()
		defer badRec.mu.Unlock()
		return len(badRec.auth) > hits
	})
}

func TestDuplicateNamesKeepTheFirstServer(t *testing.T) {
	rec := &recorder{}
	url := serveHTTP(t, newMCPServer(rec), rec, nil)
	logger, logs := newLogger()
	s := newSource(t, []Server{{Name: "a.b", URL: url}, {Name: "a_b", URL: url}}, Options{Logger: logger})
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tool := range tools {
		if seen[tool.Name] {
			t.Errorf("duplicate name offered: %s", tool.Name)
		}
		seen[tool.Name] = true
		if tool.Server != "a.b" {
			t.Errorf("%s of the later server %q was offered", tool.Name, tool.Server)
		}
	}
	if !strings.Contains(logs.String(), "same name") || !strings.Contains(logs.String(), "mcp:a_b/read") {
		t.Errorf("no warning for the dropped duplicate: %s", logs.String())
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		servers []Server
		want    string
	}{
		{"no name", []Server{{URL: "http://x"}}, "name is empty"},
		{"slash", []Server{{Name: "a/b", URL: "http://x"}}, "must not contain"},
		{"no transport", []Server{{Name: "a"}}, "set command"},
		{"both", []Server{{Name: "a", URL: "http://x", Command: "x"}}, "not both"},
		{"bad url hides it", []Server{{Name: "a", URL: "ftp://user:pw-secret@x"}}, "not an http"},
		{"twice", []Server{{Name: "a", URL: "http://x"}, {Name: "a", URL: "http://y"}}, "configured twice"},
		{"headers on stdio", []Server{{Name: "a", Command: "x", Headers: map[string]string{"A": "b"}}}, "headers are for"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.servers, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "pw-secret") {
				t.Errorf("the error shows the URL's password: %v", err)
			}
		})
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		ref, server, tool string
		ok                bool
	}{
		{"mcp:files/read", "files", "read", true},
		{"mcp:files/a/b", "files", "a/b", true},
		{"mcp:files/", "files", "", true},
		{"mcp:/read", "", "", false},
		{"mcp:files", "", "", false},
		{"builtin:ask_user", "", "", false},
	}
	for _, tt := range tests {
		server, tool, ok := ParseRef(tt.ref)
		if server != tt.server || tool != tt.tool || ok != tt.ok {
			t.Errorf("ParseRef(%q) = %q, %q, %v", tt.ref, server, tool, ok)
		}
		if ok && Ref(server, tool) != tt.ref {
			t.Errorf("Ref(%q, %q) = %q, want %q", server, tool, Ref(server, tool), tt.ref)
		}
	}
}

func TestServerDescriptionsHideSecrets(t *testing.T) {
	srv := Server{Name: "t", URL: "https://user:url-secret-pw@example.com/mcp?token=url-secret-q",
		Headers: map[string]string{"Authorization": testSecret}}
	stdio := Server{Name: "s", Command: "srv", Args: []string{"--key", "sk-test-secret-arg"}, Env: map[string]string{"K": "sk-test-secret-env"}}
	logger, logs := newLogger()
	logger.Info("configured", "server", srv, "stdio", stdio)
	for _, got := range []string{fmt.Sprint(srv), fmt.Sprintf("%v %+v %#v %s", stdio, srv, srv, stdio), logs.String()} {
		if hasSecret(got) {
			t.Errorf("a secret is shown: %s", got)
		}
		if !strings.Contains(got, "mcp server") {
			t.Errorf("the description names no server: %s", got)
		}
	}
}

func TestToolsStopsWaitingWhenItsContextEnds(t *testing.T) {
	rec := &recorder{}
	release := make(chan struct{})
	url := serveHTTP(t, newMCPServer(rec), rec, onToolsList(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "late", http.StatusServiceUnavailable)
	}))
	defer close(release)
	s := newSource(t, []Server{{Name: "a", URL: url}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Tools(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Tools = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Tools waited %s past its context", d)
	}
	// Close ends the listing still running in the background.
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the background listing")
	}
}

func TestToolsOfListsOnlyTheNamedServersInTheirOrder(t *testing.T) {
	// Two agents share a Source: each sees only its servers, in the order
	// its config names them, and the listing of a shared server is one.
	recA, recB := &recorder{}, &recorder{}
	s := newSource(t, []Server{
		{Name: "a", URL: serveHTTP(t, newMCPServer(recA), recA, nil)},
		{Name: "b", URL: serveHTTP(t, newMCPServer(recB), recB, nil)},
	}, Options{})
	tools, err := s.ToolsOf(context.Background(), []string{"b"})
	if err != nil || len(tools) == 0 || slices.ContainsFunc(tools, func(t Tool) bool { return t.Server != "b" }) {
		t.Fatalf("ToolsOf(b) = %v, %v", names(tools), err)
	}
	recA.mu.Lock()
	listedA := recA.lists
	recA.mu.Unlock()
	if listedA != 0 {
		t.Errorf("server a was listed %d times for an agent without it", listedA)
	}
	tools, err = s.ToolsOf(context.Background(), []string{"b", "a"})
	if err != nil || tools[0].Server != "b" || tools[len(tools)-1].Server != "a" {
		t.Fatalf("ToolsOf(b, a) = %v, %v", names(tools), err)
	}
	recB.mu.Lock()
	listedB := recB.lists
	recB.mu.Unlock()
	if listedB != 1 {
		t.Errorf("server b was listed %d times, want 1 (the cache is shared)", listedB)
	}
	if _, err := s.ToolsOf(context.Background(), []string{"nope"}); err == nil || !strings.Contains(err.Error(), `"nope" is not configured`) {
		t.Errorf("ToolsOf(nope) error = %v", err)
	}
	def := tools[0].Definition()
	if def.Name != tools[0].Name || len(def.InputSchema) == 0 || def.Effect != tools[0].Effect {
		t.Errorf("Definition = %+v", def)
	}
}

func TestAgentsSeeOnlyTheirServers(t *testing.T) {
	rec := &recorder{}
	url := serveHTTP(t, newMCPServer(rec), rec, nil)
	s := newSource(t, []Server{{Name: "a", URL: url}, {Name: "b", URL: url}}, Options{})
	agents := &Agents{Source: s, Servers: map[string][]string{"one": {"b"}}}
	tools, err := agents.Tools(context.Background(), "one")
	if err != nil || len(tools) == 0 || tools[0].Server != "b" {
		t.Fatalf("Tools(one) = %v, %v", names(tools), err)
	}
	if tools, err := agents.Tools(context.Background(), "two"); err != nil || tools != nil {
		t.Errorf("Tools(two) = %v, %v; want none", names(tools), err)
	}
	if out := agents.Call(context.Background(), "one", "mcp:a/read", nil, "k", nil, nil); out.Kind != NotSent || !strings.Contains(out.Err.Error(), `server "a" is not configured for agent one`) {
		t.Errorf("a call on another agent's server = %+v", out)
	}
	if out := agents.Call(context.Background(), "one", "mcp:b/read", nil, "k", nil, nil); out.Kind != Succeeded {
		t.Errorf("a call on the agent's server = %+v", out)
	}
	if n := rec.callCount("read"); n != 1 {
		t.Errorf("read was called %d times, want 1", n)
	}
}

// TestAListingPastTheListingWaitLeavesOnlyThatServerOut: the reference
// waits 10 s (tool_source_listing_timeout) for a source; a server that
// takes longer offers nothing to that call, the others offer theirs, and
// its listing goes on for the next call.
func TestAListingPastTheListingWaitLeavesOnlyThatServerOut(t *testing.T) {
	rec := &recorder{}
	release := make(chan struct{})
	slow := serveHTTP(t, newMCPServer(rec), rec, func(next http.Handler) http.Handler {
		return onToolsList(func(w http.ResponseWriter, r *http.Request) {
			<-release
			next.ServeHTTP(w, r)
		})(next)
	})
	fastRec := &recorder{}
	fast := serveHTTP(t, newMCPServer(fastRec), fastRec, nil)
	logger, logs := newLogger()
	s := newSource(t, []Server{{Name: "slow", URL: slow}, {Name: "fast", URL: fast}}, Options{
		ListingWait: 300 * time.Millisecond,
		Logger:      logger,
	})
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Server != "fast" {
			t.Errorf("the first call offered %s of a server still listing", tool.Name)
		}
	}
	if len(tools) == 0 {
		t.Error("the fast server's tools are missing")
	}
	if !strings.Contains(logs.String(), "took longer than the listing wait") || !strings.Contains(logs.String(), "server=slow") {
		t.Errorf("no warning names the slow server:\n%s", logs.String())
	}
	close(release)
	// The listing went on: a later call waits for it no more and gets it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tools, err = s.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(tools, func(tool Tool) bool { return tool.Server == "slow" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow server's tools never arrived")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
