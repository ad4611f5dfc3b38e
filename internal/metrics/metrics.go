// Package metrics holds the worker's Prometheus metrics: Steps started and
// finished by type and outcome with their latency, model tokens, tool
// Steps by effect and result, live events, event streams, and HTTP
// requests by route and code. A nil *Metrics records nothing, so code
// paths never check whether metrics are on.
//
//	m := metrics.New(version)
//	srv, _ := metrics.Serve(":9464", m, logger) // GET /metrics
//	m.StepFinished("RunModel", "succeeded", time.Since(start))
//
// Every metric is named dex_*; label values come from the config (agents,
// effects) or from fixed sets (outcomes), never from user input, so their
// number stays bounded. Model names are the exception: they come from the
// runner's call metadata, which the operator's config chooses.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	tempotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
)

// Metrics are one process's metrics, in their own registry.
type Metrics struct {
	Registry *prometheus.Registry

	stepsStarted  *prometheus.CounterVec
	stepsFinished *prometheus.CounterVec
	stepSeconds   *prometheus.HistogramVec
	modelTokens   *prometheus.CounterVec
	modelCalls    *prometheus.CounterVec
	toolSteps     *prometheus.CounterVec
	httpRequests  *prometheus.CounterVec
	httpSeconds   *prometheus.HistogramVec
}

// New registers the metrics, with the Go runtime's and the process's, and
// dex_build_info{version}.
func New(version string) *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		stepsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dex_steps_started_total", Help: "Step attempts started in this process, by Step type.",
		}, []string{"step"}),
		stepsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dex_steps_finished_total", Help: "Step attempts finished in this process, by Step type and outcome (succeeded, failed, cancelled).",
		}, []string{"step", "outcome"}),
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dex_step_duration_seconds", Help: "Step attempt latency, by Step type and outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"step", "outcome"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dex_model_tokens_total", Help: "Model tokens the runners reported, by agent, provider, model and kind (input, output, cached_input, reasoning).",
		}, []string{"agent", "provider", "model", "kind"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dex_model_calls_total", Help: "Model calls the runners reported, by agent, provider and model.",
		}, []string{"agent", "provider", "model"}),
		toolSteps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dex_tool_calls_total", Help: "Tool Step attempts (CallTool, CallSingleAttemptTool), by agent, the effect the config gave the call, and result (succeeded, failed: the model sees a tool error, input_requested, task_started, error: the attempt itself failed).",
		}, []string{"agent", "effect", "result"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dex_http_requests_total", Help: "HTTP API requests, by route pattern and status code.",
		}, []string{"route", "code"}),
		httpSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dex_http_request_duration_seconds", Help: "HTTP API request latency (to the end of the response; event streams excluded), by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dex_build_info", Help: "The worker's version."}, []string{"version"})
	build.WithLabelValues(version).Set(1)
	r.MustRegister(m.stepsStarted, m.stepsFinished, m.stepSeconds, m.modelTokens, m.modelCalls, m.toolSteps,
		m.httpRequests, m.httpSeconds, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// StepStarted counts a Step attempt that started.
func (m *Metrics) StepStarted(step string) {
	if m != nil {
		m.stepsStarted.WithLabelValues(step).Inc()
	}
}

// StepFinished counts a Step attempt that ended, with its latency.
func (m *Metrics) StepFinished(step, outcome string, took time.Duration) {
	if m != nil {
		m.stepsFinished.WithLabelValues(step, outcome).Inc()
		m.stepSeconds.WithLabelValues(step, outcome).Observe(took.Seconds())
	}
}

// Tokens are the usage of one model call as the runner reported it.
type Tokens struct {
	Input, Output, CachedInput, Reasoning, Calls int64
}

// ModelUsage counts a model call's tokens.
func (m *Metrics) ModelUsage(agent, provider, model string, t Tokens) {
	if m == nil {
		return
	}
	if provider == "" {
		provider = "unknown"
	}
	if model == "" {
		model = "unknown"
	}
	for kind, n := range map[string]int64{"input": t.Input, "output": t.Output, "cached_input": t.CachedInput, "reasoning": t.Reasoning} {
		if n > 0 {
			m.modelTokens.WithLabelValues(agent, provider, model, kind).Add(float64(n))
		}
	}
	if t.Calls > 0 {
		m.modelCalls.WithLabelValues(agent, provider, model).Add(float64(t.Calls))
	}
}

// ToolStep counts a tool Step attempt by the effect the config gave the
// call and its result.
func (m *Metrics) ToolStep(agent, effect, result string) {
	if m != nil {
		m.toolSteps.WithLabelValues(agent, effect, result).Inc()
	}
}

// HTTPRequest counts an API request by its route pattern ("GET
// /v1/sessions/{id}/snapshot", never the path with its IDs).
func (m *Metrics) HTTPRequest(route string, code int, took time.Duration, stream bool) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	m.httpRequests.WithLabelValues(route, fmt.Sprint(code)).Inc()
	if !stream {
		m.httpSeconds.WithLabelValues(route).Observe(took.Seconds())
	}
}

// GaugeFunc registers a gauge read when scraped, such as the open event
// streams.
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	if m != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
}

// CounterFunc registers a counter read when scraped, such as the plugin
// restarts the runner host counts.
func (m *Metrics) CounterFunc(name, help string, f func() float64) {
	if m != nil {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
}

// Middleware counts the requests of h by the pattern the mux matched.
func (m *Metrics) Middleware(h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rw, r)
		m.HTTPRequest(r.Pattern, rw.code, time.Since(start), rw.Header().Get("Content-Type") == "text/event-stream")
	})
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Server serves /metrics on its own listener.
type Server struct {
	srv  *http.Server
	addr string
}

// Serve starts serving m at /metrics on listen.
func Serve(listen string, m *Metrics, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("telemetry.metrics.prometheus: listen on %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{ErrorLog: slogAdapter{logger}}))
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, addr: ln.Addr().String()}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "error", err)
		}
	}()
	logger.Info("metrics at /metrics", "address", s.addr)
	return s, nil
}

// Addr is the listener's address.
func (s *Server) Addr() string { return s.addr }

// Close stops the server.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Println(v ...any) { a.l.Warn("metrics", "error", fmt.Sprint(v...)) }

// ActivityInterceptor counts every Step attempt the worker runs (activities
// and local activities) by its type and outcome, with its latency.
func ActivityInterceptor(m *Metrics) interceptor.WorkerInterceptor {
	return &workerInterceptor{m: m}
}

type workerInterceptor struct {
	interceptor.WorkerInterceptorBase
	m *Metrics
}

func (w *workerInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	a := &activityInbound{m: w.m}
	a.Next = next
	return a
}

type activityInbound struct {
	interceptor.ActivityInboundInterceptorBase
	m *Metrics
}

func (a *activityInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	step := activity.GetInfo(ctx).ActivityType.Name
	a.m.StepStarted(step)
	start := time.Now()
	res, err := a.Next.ExecuteActivity(ctx, in)
	a.m.StepFinished(step, stepOutcome(ctx, err), time.Since(start))
	return res, err
}

// stepOutcome names how a Step attempt ended.
func stepOutcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "succeeded"
	case ctx.Err() != nil || temporal.IsCanceledError(err) || errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "failed"
}

// TemporalHandler returns a Temporal SDK metrics handler whose metrics
// (temporal_request, temporal_workflow_task_execution_latency, ...) join
// this registry, through an OpenTelemetry meter and its Prometheus
// exporter. A nil *Metrics returns nil (the SDK then records nothing).
func (m *Metrics) TemporalHandler() (client.MetricsHandler, error) {
	if m == nil {
		return nil, nil
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(m.Registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: the Temporal SDK's exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	return tempotel.NewMetricsHandler(tempotel.MetricsHandlerOptions{
		Meter:                provider.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		OnError:              func(error) {}, // a metric the meter refuses is left out, never a panic
	}), nil
}

// SessionsWaiting registers dex_sessions_waiting{for}: how many running
// sessions wait for each kind (approval, question, timer, task, user), as
// count returns them. A scrape counts again when the last count is older
// than maxAge (so a scrape every few seconds costs the engine one count per
// kind every maxAge); a kind count fails to is left out of that scrape.
func (m *Metrics) SessionsWaiting(maxAge time.Duration, count func(ctx context.Context, kind string) (int64, error), kinds []string) {
	if m == nil {
		return
	}
	m.Registry.MustRegister(&waitingCollector{
		desc: prometheus.NewDesc("dex_sessions_waiting",
			"Running sessions that wait for approval, question, timer, task or user, from the engine's visibility (the same in every process: take the max, not the sum).",
			[]string{"for"}, nil),
		maxAge: maxAge, count: count, kinds: kinds,
	})
}

type waitingCollector struct {
	desc   *prometheus.Desc
	maxAge time.Duration
	count  func(ctx context.Context, kind string) (int64, error)
	kinds  []string

	mu     sync.Mutex
	at     time.Time
	values map[string]int64
}

func (c *waitingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *waitingCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.values == nil || time.Since(c.at) >= c.maxAge {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		values := map[string]int64{}
		for _, kind := range c.kinds {
			if n, err := c.count(ctx, kind); err == nil {
				values[kind] = n
			}
		}
		cancel()
		c.values, c.at = values, time.Now()
	}
	for _, kind := range c.kinds {
		if n, ok := c.values[kind]; ok {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), kind)
		}
	}
}
