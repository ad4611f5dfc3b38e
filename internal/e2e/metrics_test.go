package e2e

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// scrape reads a /metrics page.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// sample returns the value of the series with exactly these labels (in
// Prometheus's order), or -1 when the page has none.
func sample(page, series string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`)
	m := re.FindStringSubmatch(page)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestMetricsAfterATurn runs a turn with a tool call through the HTTP API
// of a worker with telemetry.metrics.prometheus set, and reads /metrics on
// its own listener.
func TestMetricsAfterATurn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	httpPort, metricsPort := agenttest.FreePort(t), agenttest.FreePort(t)
	s := agenttest.NewStack(t, testConfig(plugin)+fmt.Sprintf(`
http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: all, token: %s}
telemetry:
  metrics: {prometheus: "127.0.0.1:%d"}
`, httpPort, tokenAll, metricsPort))
	s.StartWorker()
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", metricsPort)

	if code, body := do(t, "POST", base+"/v1/sessions", tokenAll, `{"agent":"test","session_id":"metrics-1","initial_message":"call:read_gate:m1"}`); code != 201 {
		t.Fatalf("start: %d %s", code, body)
	}
	snap := s.WaitForSnapshot("the answer", "metrics-1", idleWithAnswer)
	if !strings.Contains(lastText(snap), "read_gate=succeeded") {
		t.Fatalf("answer %q", lastText(snap))
	}
	// The list shows the session waiting for the user (visibility trails a
	// little): the first scrape then counts it.
	err := agenttest.WaitFor(ctx(t), "the session in the list", time.Minute, func() (bool, error) {
		code, body := do(t, "GET", base+"/v1/sessions?waiting_for=user", tokenAll, "")
		return code == 200 && strings.Contains(string(body), `"metrics-1"`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// An open event stream counts while it is open.
	closeStream := openStream(t, base+"/v1/sessions/metrics-1/events", tokenAll)
	page := scrape(t, metricsAddr)
	closeStream()

	for series, atLeast := range map[string]float64{
		`dex_steps_started_total{step="RunModel"}`:                             2,
		`dex_steps_finished_total{outcome="succeeded",step="RunModel"}`:        2,
		`dex_steps_finished_total{outcome="succeeded",step="CallTool"}`:        1,
		`dex_step_duration_seconds_count{outcome="succeeded",step="CallTool"}`: 1,
		`dex_tool_calls_total{agent="test",effect="read",result="succeeded"}`:  1,
		`dex_http_requests_total{code="201",route="POST /v1/sessions"}`:        1,
		`dex_http_request_duration_seconds_count{route="POST /v1/sessions"}`:   1,
		`dex_events_published_total`:                                           5,
		`dex_event_streams_open`:                                               1,
		`dex_plugin_restarts_total`:                                            0,
		`dex_events_dropped_total`:                                             0,
		`dex_sessions_waiting{for="user"}`:                                     1,
		`dex_sessions_waiting{for="approval"}`:                                 0,
	} {
		if v := sample(page, series); v < atLeast {
			t.Errorf("%s = %v, want >= %v", series, v, atLeast)
		}
	}
	if !regexp.MustCompile(`(?m)^dex_model_calls_total\{agent="test",model="[^"]+",provider="[^"]+"\} [1-9]`).MatchString(page) {
		t.Errorf("no model calls counted for agent test:\n%s", grepLines(page, "dex_model"))
	}
	if !strings.Contains(page, `dex_build_info{version=`) || !strings.Contains(page, "go_goroutines") {
		t.Errorf("no build info or Go runtime metrics")
	}
	// The Temporal SDK's own metrics join the page.
	if !regexp.MustCompile(`(?m)^temporal_workflow_task_execution_latency_seconds_count\{.*\} [1-9]`).MatchString(page) ||
		!regexp.MustCompile(`(?m)^temporal_activity_execution_latency_seconds_count\{.*activity_type="RunModel".*\} [1-9]`).MatchString(page) {
		t.Errorf("no Temporal SDK metrics:\n%s", grepLines(page, "temporal_"))
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("the dex_ series:\n%s", grepLines(page, "dex_"))
		t.Logf("some temporal_ series:\n%s", grepLines(page, "temporal_activity_execution_latency_seconds_count"))
	}
}

func grepLines(page, prefix string) string {
	var out []string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// openStream opens an event stream and returns a func that closes it.
func openStream(t *testing.T, url, token string) func() {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx(t), "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("open the event stream: %v %v", err, resp)
	}
	// The first bytes arrive once the stream counts.
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	return func() { resp.Body.Close() }
}

// TestMaxCachedWorkflowsBoundsTheCache: with worker.max_cached_workflows:
// 2, a worker keeps at most two sessions' state between workflow tasks
// (the SDK's sticky cache gauge), evicts the others (its forced-eviction
// counter), and the evicted sessions still answer their next turns, from
// their histories.
func TestMaxCachedWorkflowsBoundsTheCache(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	metricsPort := agenttest.FreePort(t)
	s := agenttest.NewStack(t, testConfig(plugin)+fmt.Sprintf(`
worker: {max_cached_workflows: 2}
telemetry:
  metrics: {prometheus: "127.0.0.1:%d"}
`, metricsPort))
	s.StartWorker()
	ids := []string{"cache-1", "cache-2", "cache-3", "cache-4"}
	for round := 1; round <= 2; round++ {
		for _, id := range ids {
			msg := fmt.Sprintf("round %d of %s", round, id)
			if round == 1 {
				if _, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, SessionID: id, InitialMessage: msg}); err != nil {
					t.Fatal(err)
				}
			} else if ok, err := s.Sessions.SendUserMessage(ctx(t), id, msg); err != nil || !ok {
				t.Fatalf("send to %s: %v %v", id, ok, err)
			}
			s.WaitForSnapshot("the answer to "+msg, id, func(s wire.Snapshot) bool {
				return idleWithAnswer(s) && lastText(s) == "echo: "+msg
			})
		}
	}
	page := scrape(t, fmt.Sprintf("127.0.0.1:%d", metricsPort))
	size := regexp.MustCompile(`(?m)^temporal_sticky_cache_size\{[^}]*\} ([0-9.e+-]+)$`).FindStringSubmatch(page)
	evicted := regexp.MustCompile(`(?m)^temporal_sticky_cache_total_forced_eviction(?:_total)?\{[^}]*\} ([0-9.e+-]+)$`).FindStringSubmatch(page)
	if size == nil || evicted == nil {
		t.Fatalf("no sticky cache metrics:\n%s", grepLines(page, "sticky"))
	}
	if n, _ := strconv.ParseFloat(size[1], 64); n > 2 {
		t.Errorf("the sticky cache holds %v sessions, want at most 2", n)
	}
	if n, _ := strconv.ParseFloat(evicted[1], 64); n < 1 {
		t.Errorf("no session was evicted from a cache of 2 serving 4:\n%s", grepLines(page, "sticky"))
	}
}
