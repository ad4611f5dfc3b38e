package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.StepStarted("RunModel")
	m.StepFinished("RunModel", "succeeded", time.Second)
	m.ModelUsage("a", "p", "m", Tokens{Input: 1})
	m.ToolStep("a", "read", "succeeded")
	m.HTTPRequest("GET /x", 200, time.Millisecond, false)
	m.GaugeFunc("x", "x", func() float64 { return 1 })
	m.CounterFunc("y", "y", func() float64 { return 1 })
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if got := m.Middleware(h); got == nil {
		t.Fatal("Middleware of nil metrics returned nil")
	}
}

// The middleware counts by the route pattern, never the path with its
// IDs, keeps the status code, and lets a stream flush through it.
func TestMiddlewareCountsByRoutePattern(t *testing.T) {
	m := New("test")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions/{id}/snapshot", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	})
	mux.HandleFunc("GET /v1/sessions/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(": open\n\n"))
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the middleware: %v", err)
		}
	})
	srv := httptest.NewServer(m.Middleware(mux))
	defer srv.Close()
	for _, p := range []string{"/v1/sessions/secret-session-1/snapshot", "/v1/sessions/s-2/snapshot", "/v1/sessions/s-2/events", "/nope"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	ms, err := Serve("127.0.0.1:0", m, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	resp, err := http.Get("http://" + ms.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	for _, want := range []string{
		`dex_http_requests_total{code="404",route="GET /v1/sessions/{id}/snapshot"} 2`,
		`dex_http_requests_total{code="200",route="GET /v1/sessions/{id}/events"} 1`,
		`dex_http_requests_total{code="404",route="unmatched"} 1`,
		`dex_http_request_duration_seconds_count{route="GET /v1/sessions/{id}/snapshot"} 2`,
		`dex_build_info{version="test"} 1`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("no %s in /metrics", want)
		}
	}
	if strings.Contains(page, "secret-session-1") {
		t.Error("a session ID reached a label")
	}
	if strings.Contains(page, `dex_http_request_duration_seconds_count{route="GET /v1/sessions/{id}/events"}`) {
		t.Error("an event stream's duration was observed")
	}
}
