// Package aimock starts @copilotkit/aimock, a fake model provider that
// speaks the real wire formats (OpenAI Responses, OpenAI Chat Completions,
// Anthropic Messages, streamed, with tool calls, reasoning and fault
// injection), for tests.
//
// Install it once with internal/testpeer/aimock/testdata/aimock/install.sh.
// Start skips the test with the reason when node or the package is missing,
// unless CI=true, where it fails instead.
//
// aimock's own request journal (GET /__aimock/journal) records each request
// normalized to Chat Completions form, without reasoning items or thinking
// blocks. So the Server also puts a recording reverse proxy in front of
// aimock: Server.URL is the proxy, and Server.Requests returns the exact
// bytes each request carried.
package aimock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// Dir is the directory of the pinned package.json, install.sh and
// node_modules.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "aimock")
}

// Request is one request the proxy passed to aimock, byte for byte.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a running aimock behind a recording proxy.
type Server struct {
	// URL is the proxy's base URL, such as http://127.0.0.1:41234. OpenAI
	// clients use URL+"/v1"; Anthropic clients use URL.
	URL string
	// Upstream is aimock's own base URL.
	Upstream string

	mu   sync.Mutex
	reqs []Request
	cmd  *exec.Cmd
}

// Start starts aimock on a free loopback port with the fixtures in dir (a
// directory of fixture JSON files, or one file), and stops it at cleanup.
func Start(t testing.TB, fixtures string) *Server {
	t.Helper()
	cli := filepath.Join(Dir(), "node_modules", "@copilotkit", "aimock", "dist", "cli.js")
	node, err := exec.LookPath("node")
	switch {
	case err != nil:
		testpeer.Missing(t, "node (for aimock)", "apt-get install nodejs npm")
	default:
		if _, err := os.Stat(cli); err != nil {
			testpeer.Missing(t, "@copilotkit/aimock", "make test-peers (or bash "+filepath.Join(Dir(), "install.sh")+")")
		}
	}
	if abs, err := filepath.Abs(fixtures); err == nil {
		fixtures = abs
	}
	cmd := exec.Command(node, cli, "-h", "127.0.0.1", "-p", "0", "-f", fixtures, "--log-level", "info", "--journal-max", "0")
	cmd.Dir = Dir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("aimock: start: %v", err)
	}
	s := &Server{cmd: cmd}
	t.Cleanup(s.stop)
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case u, ok := <-addr:
		if !ok {
			t.Fatalf("aimock exited before it listened: %s", stderr.String())
		}
		s.Upstream = strings.TrimSuffix(u, "/")
	case <-time.After(20 * time.Second):
		t.Fatalf("aimock did not start within 20s: %s", stderr.String())
	}
	target, _ := url.Parse(s.Upstream)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // pass every SSE event on at once
	// A cut stream (a fault a test injects) is expected: pass it on quietly.
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !strings.HasPrefix(r.URL.Path, "/__aimock") {
			s.mu.Lock()
			s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
			s.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	s.URL = front.URL
	return s
}

func (s *Server) stop() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
}

// Requests returns the requests to path (such as "/v1/responses"), oldest
// first; "" returns all.
func (s *Server) Requests(path string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.reqs {
		if path == "" || r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// JournalEntry is one entry of aimock's request journal. Body is the
// request as aimock normalized it (Chat Completions form).
type JournalEntry struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   struct {
		Model    string            `json:"model"`
		Messages []JournalMessage  `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	} `json:"body"`
	Response struct {
		Status          int    `json:"status"`
		Interrupted     bool   `json:"interrupted"`
		InterruptReason string `json:"interruptReason"`
	} `json:"response"`
}

// JournalMessage is one normalized message of a journaled request.
type JournalMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Journal returns aimock's request journal, oldest first.
func (s *Server) Journal(t testing.TB) []JournalEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Upstream+"/__aimock/journal", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("aimock journal: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var entries []JournalEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatalf("aimock journal: %v: %s", err, b)
	}
	return entries
}

// String describes a request for failure messages.
func (r Request) String() string { return fmt.Sprintf("%s %s %s", r.Method, r.Path, r.Body) }
