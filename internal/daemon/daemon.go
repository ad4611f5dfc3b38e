// Package daemon assembles the worker: it launches the runner plugins the
// config names, configures every agent in its plugin, connects to Temporal,
// and runs the session workflows and their activities on the task queue.
package daemon

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/sessionflow"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/approvaldigest"
	"github.com/dex-agents/dex-agent-worker/internal/approvallink"
	"github.com/dex-agents/dex-agent-worker/internal/approvalrules"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/httpapi"
	"github.com/dex-agents/dex-agent-worker/internal/mcpsource"
	"github.com/dex-agents/dex-agent-worker/internal/metrics"
	"github.com/dex-agents/dex-agent-worker/internal/notify"
	"github.com/dex-agents/dex-agent-worker/internal/redact"
	"github.com/dex-agents/dex-agent-worker/internal/runnerhost"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/spend"
	"github.com/dex-agents/dex-agent-worker/internal/steps"
	"github.com/dex-agents/dex-agent-worker/internal/tracing"
	"github.com/dex-agents/dex-agent-worker/internal/tracing/temporaltrace"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Options configure a Daemon.
type Options struct {
	Config *config.Config
	// Logger receives the daemon's logs; nil discards them.
	Logger *slog.Logger
	// Events receives live events; nil logs them at debug level.
	Events events.Sink
	// Hooks stop Steps at exact points in tests.
	Hooks steps.Hooks
	// Tools, when set, may answer tool calls in place of the tools (eval
	// run serves recorded calls).
	Tools steps.ToolServer
	// Models, when set, answers the model calls it kept (eval run's
	// --model-cache).
	Models steps.ModelCache
	// TemporalAddress overrides config.Temporal.Address (dev mode).
	TemporalAddress string
	// HTTPListen overrides config.HTTP.Listen ("" keeps it; the API is
	// served only when one of them is set).
	HTTPListen string
	// ExtraTokens are accepted besides the config's (dev's token when the
	// config declares none).
	ExtraTokens []httpapi.Token
	// WebUI serves the chat page at / of the API when the config enables it.
	WebUI http.Handler
	// Version is the worker's version, which it names in MCP handshakes.
	Version string
	// Reattach attaches plugins, by name, to runners already running in
	// debug mode (DEX_RUNNER_DEBUG=1) instead of starting their commands:
	// the PID:NETWORK:ADDRESS each printed (runnerhost.ParseReattach).
	Reattach map[string]string
	// MessageStorePath is the SQLite file of the message store when the
	// config has no message_store (dev: in its data dir). Without either,
	// Start fails: a worker needs to know where messages live.
	MessageStorePath string
	// Role is what this process does: RoleAll (the default), RoleWorker or
	// RoleAPI.
	Role string
	// DialWait is how long Start keeps trying a Temporal frontend that is
	// not reachable yet (processes of a deployment start in any order); 0
	// tries once.
	DialWait time.Duration
	// TraceConsole prints each turn's span tree there when the turn ends
	// (dev --trace), whatever the config's trace exporter.
	TraceConsole io.Writer
	// ModelQueues names the model queues this process polls, as the flag
	// --model-queues takes them: "" or "all" for every queue the config
	// declares, "none" for none, or a comma-separated list of names. A
	// deployment that polls a queue from a fixed set of processes bounds
	// its concurrent calls by that set's max_concurrent_per_worker
	// together.
	ModelQueues string
}

// The roles of a process.
const (
	// RoleAll hosts Steps and serves the HTTP API and the web page.
	RoleAll = "all"
	// RoleWorker hosts Steps only: it launches the runner plugins and MCP
	// servers and polls the task queue. With an HTTP address it serves
	// /healthz and /readyz alone.
	RoleWorker = "worker"
	// RoleAPI serves the HTTP API and the web page only, so the API scales
	// apart from the Steps. It needs the redis event backend (the Steps'
	// events reach it from other processes) and the postgres message store
	// (shared with the workers). It launches no plugin, so /v1/agents
	// lists no session_setting_choices.
	RoleAPI = "api"
)

// checkRole refuses a role the config cannot serve.
func checkRole(role string, cfg *config.Config, opts Options) error {
	switch role {
	case RoleAll, RoleWorker:
		_, err := pollModelQueues(cfg, opts.ModelQueues)
		return err
	case RoleAPI:
		if q := strings.TrimSpace(opts.ModelQueues); q != "" && q != "all" && q != "none" {
			return fmt.Errorf("--model-queues %s: a process of role api polls no task queue; give it to the processes of role worker or all", q)
		}
		if cfg.Events.Backend != config.EventsRedis && opts.Events == nil {
			return errors.New("--role api needs events.backend: redis (with url_env and token_key_env): " +
				"the Steps run in worker processes, and their live events reach an API process only through Redis")
		}
		if ms := cfg.MessageStore; ms == nil || ms.Driver != config.MessageStorePostgres {
			return errors.New("--role api needs message_store with driver postgres (and dsn_env), shared with the worker processes")
		}
		return nil
	}
	return fmt.Errorf("unknown role %q (want all, worker or api)", role)
}

// Daemon is a running worker.
type Daemon struct {
	log             *slog.Logger
	store           transcript.Store
	acts            *steps.Activities
	shutdownTimeout time.Duration
	host            *runnerhost.Host
	client          temporalclient.Client
	worker          worker.Worker
	modelWorkers    []worker.Worker
	broker          events.Broker
	role            string
	api             *httpapi.Server
	http            *http.Server
	probes          *http.Server // role worker's /healthz and /readyz
	metrics         *metrics.Metrics
	metricsSrv      *metrics.Server
	addr            string
	mcp             *mcpsource.Agents
	tracer          *tracing.Tracer
	traces          *temporaltrace.Tracing
	traceExporter   string
	stopPromote     context.CancelFunc
}

// Start launches the plugins, configures the agents and starts the worker.
// Any failure stops what was started and names the plugin or agent.
func Start(ctx context.Context, opts Options) (*Daemon, error) {
	cfg := opts.Config
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// No log line of the worker carries a secret value it knows of.
	logger = slog.New(redact.Handler(logger.Handler(), redact.New(cfg.SecretValues()...)))
	role := cmp.Or(opts.Role, RoleAll)
	if err := checkRole(role, cfg, opts); err != nil {
		return nil, err
	}
	d := &Daemon{log: logger, role: role, host: runnerhost.New(logger.With("component", "runnerhost"))}
	ok := false
	defer func() {
		if !ok {
			d.Stop()
		}
	}()
	if err := d.startTracing(ctx, cfg, opts, logger); err != nil {
		return nil, err
	}
	if role != RoleAPI {
		if err := d.launchPlugins(ctx, cfg, opts.Reattach); err != nil {
			return nil, err
		}
	}
	if err := d.openStore(ctx, cfg, opts, logger); err != nil {
		return nil, err
	}
	if role != RoleAPI {
		if err := d.openMCP(cfg, opts.Version, logger); err != nil {
			return nil, err
		}
	}
	if d.store == nil {
		for _, a := range cfg.Agents {
			if a.SpendLimits != nil && a.SpendLimits.PerDay != nil {
				return nil, fmt.Errorf("agent %s: spend_limits.per_day needs the message store (message_store), where every worker counts the day's spend", a.Name)
			}
		}
		for i, t := range cfg.HTTP.Auth.Tokens {
			if t.SpendLimits != nil && t.SpendLimits.PerDay != nil {
				return nil, fmt.Errorf("token %s: spend_limits.per_day needs the message store (message_store)", cfg.HTTP.Auth.TokenName(i))
			}
		}
	}
	if cfg.Telemetry.Metrics.Prometheus != "" {
		d.metrics = metrics.New(opts.Version)
	}
	sdkMetrics, err := d.metrics.TemporalHandler()
	if err != nil {
		return nil, err
	}
	c, err := dialWaiting(ctx, cfg.Temporal, opts.TemporalAddress, opts.DialWait, logger, sdkMetrics, d.traces.Interceptors())
	if err != nil {
		return nil, err
	}
	d.client = c
	sink := opts.Events
	if sink == nil {
		b, err := openEvents(ctx, cfg.Events, logger.With("component", "events"))
		if err != nil {
			return nil, err
		}
		d.broker, sink = b, b
	}
	if err := d.serveMetrics(cfg, opts.Version, logger); err != nil {
		return nil, err
	}
	if role == RoleAPI {
		if err := d.serveHTTP(cfg, opts, logger); err != nil {
			return nil, err
		}
		d.watchWaiting(cfg, d.hasSearchAttribute(ctx, cfg.Temporal.Namespace))
		ok = true
		logger.Info("API started", "role", role, "namespace", cfg.Temporal.Namespace, "agents", len(cfg.Agents))
		return d, nil
	}
	searchAttrs := d.hasSearchAttribute(ctx, cfg.Temporal.Namespace)
	var approvals *approvaldigest.Signer
	if ad := cfg.ApprovalDigest; ad != nil {
		keys, err := ad.Keys()
		if err != nil {
			return nil, err
		}
		if approvals, err = approvaldigest.NewSigner(ad.Required, keys...); err != nil {
			return nil, err
		}
	}

	var interceptors []interceptor.WorkerInterceptor
	if d.metrics != nil {
		interceptors = append(interceptors, metrics.ActivityInterceptor(d.metrics))
	}
	workerOpts := worker.Options{
		Interceptors:                     interceptors,
		DisableRegistrationAliasing:      true,
		DefaultHeartbeatThrottleInterval: 500 * time.Millisecond,
		// A model Step heartbeats every second, and cancel_turn reaches it
		// through a heartbeat's answer.
		MaxHeartbeatThrottleInterval: time.Second,
		WorkerStopTimeout:            cfg.ShutdownTimeout,
		// The model workers copy these options: a pinned session's model
		// calls run on its own version too.
		DeploymentOptions: deploymentOptions(cfg.Temporal.Deployment),
	}
	SizeWorkflowCache(cfg)
	w := worker.New(c, cfg.Temporal.TaskQueue, workerOpts)
	d.shutdownTimeout = cfg.ShutdownTimeout
	// The fast path of a turn's cancel: this process's model calls end at
	// once, and, with the Redis event store, every other worker's too.
	modelCalls := steps.NewModelCalls()
	canceller := modelCallCanceller{local: modelCalls}
	if rb, ok := sink.(*events.RedisBroker); ok {
		canceller.redis = rb
		rb.OnModelCancel(func(sessionID, runID, turnID string) { modelCalls.Cancel(sessionID, runID, turnID) })
	}
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		rt := runtimeFor(cfg, a, sessionSink{sink}, searchAttrs)
		rt.Approvals = approvals
		rt.ModelCalls = canceller
		if d.traces != nil {
			rt.Tracer = d.traces
		}
		w.RegisterWorkflowWithOptions(sessionflow.Workflow(rt), workflow.RegisterOptions{Name: a.FlowType})
	}
	acts := &steps.Activities{
		Store:       d.store,
		Redact:      secretRedactor(cfg),
		Runners:     agentRunners{host: d.host, plugins: pluginOf(cfg)},
		Events:      sink,
		Logger:      logger.With("component", "steps"),
		Hooks:       opts.Hooks,
		Tools:       opts.Tools,
		Models:      opts.Models,
		SpendPolicy: spendPolicies(cfg),
		Limiter: &spend.Limiter{Ledger: ledgerOf(d.store), Logger: logger.With("component", "spend"),
			Client: &http.Client{Transport: http.DefaultTransport}},
		ModelCalls: modelCalls,
	}
	if d.mcp != nil {
		acts.MCP = d.mcp
	}
	acts.Metrics = d.metrics
	acts.Tracer = d.tracer
	acts.Liveness = modelLiveness(cfg)
	rules, err := approvalRules(cfg)
	if err != nil {
		return nil, err
	}
	acts.ApprovalRules = rules
	if acts.Notify, err = notifier(cfg, approvals); err != nil {
		return nil, err
	}
	if h := opts.Hooks.BeforeMailSend; h != nil && acts.Notify != nil {
		acts.Notify.Hooks.BeforeMailSend = func(ctx context.Context, m notify.Message) { h(ctx, m.Channel) }
	}
	d.metrics.GaugeFunc("dex_steps_running", "Steps running in this process now.", func() float64 { return float64(acts.Running()) })
	d.acts = acts
	for name, fn := range map[string]any{
		wire.StepRunModel:              acts.RunModel,
		wire.StepCallTool:              acts.CallTool,
		wire.StepCallSingleAttemptTool: acts.CallSingleAttemptTool,
		wire.StepPollToolTask:          acts.PollToolTask,
		wire.StepBuildUserMessage:      acts.BuildUserMessage,
		wire.StepRecordTurnFailure:     acts.RecordTurnFailure,
		wire.StepApplyTurnControl:      acts.RecordTurnFailure,
		wire.StepCancelToolTask:        acts.CancelToolTask,
		wire.StepCompactContext:        acts.CompactContext,
		session.StepReadSubAgentAnswer: acts.ReadSubAgentAnswer,
		session.StepSendNotification:   acts.SendNotification,
	} {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the Temporal worker on task queue %s: %w", cfg.Temporal.TaskQueue, err)
	}
	d.worker = w
	// One more worker per model queue, running only the model Steps; the
	// engine enforces the queue's rate limit across every worker.
	queues, err := pollModelQueues(cfg, opts.ModelQueues)
	if err != nil {
		return nil, err
	}
	for _, name := range unpolledModelQueues(cfg, queues) {
		logger.Info("this process does not poll the model queue; its model calls run on the processes that do",
			"queue", name, "task_queue", cfg.ModelTaskQueue(name))
	}
	for _, name := range queues {
		q := cfg.ModelQueues[name]
		tq := cfg.ModelTaskQueue(name)
		mo := workerOpts
		mo.TaskQueueActivitiesPerSecond = q.ActivitiesPerSecond
		mo.MaxConcurrentActivityExecutionSize = q.MaxConcurrentPerWorker
		mo.DisableWorkflowWorker = true
		mw := worker.New(c, tq, mo)
		mw.RegisterActivityWithOptions(acts.RunModel, activity.RegisterOptions{Name: wire.StepRunModel})
		mw.RegisterActivityWithOptions(acts.CompactContext, activity.RegisterOptions{Name: wire.StepCompactContext})
		if err := mw.Start(); err != nil {
			return nil, fmt.Errorf("start the Temporal worker of model queue %s (task queue %s): %w", name, tq, err)
		}
		d.modelWorkers = append(d.modelWorkers, mw)
		logger.Info("model queue started", "queue", name, "task_queue", tq, "activities_per_second", q.ActivitiesPerSecond,
			"max_concurrent_per_worker", q.MaxConcurrentPerWorker)
	}
	if dep := cfg.Temporal.Deployment; dep != nil && dep.SetCurrent {
		d.promote(c, cfg.Temporal.Namespace, dep)
	}
	if err := d.serveHTTP(cfg, opts, logger); err != nil {
		return nil, err
	}
	d.watchWaiting(cfg, searchAttrs)
	ok = true
	if dep := cfg.Temporal.Deployment; dep != nil {
		logger.Info("worker versioning on", "deployment", dep.Name, "build_id", dep.BuildID, "set_current", dep.SetCurrent)
	}
	logger.Info("worker started", "role", role, "task_queue", cfg.Temporal.TaskQueue, "namespace", cfg.Temporal.Namespace,
		"agents", len(cfg.Agents), "active_step_search", searchAttrs, "events", cfg.Events.Backend)
	return d, nil
}

func (d *Daemon) launchPlugins(ctx context.Context, cfg *config.Config, reattach map[string]string) error {
	for name := range reattach {
		if _, ok := cfg.Plugins[name]; !ok {
			return fmt.Errorf("--reattach %s: the config has no plugin %q", name, name)
		}
	}
	names := make([]string, 0, len(cfg.Plugins))
	for name := range cfg.Plugins {
		names = append(names, name)
	}
	sort.Strings(names)
	used := map[string]bool{}
	for _, a := range cfg.Agents {
		used[a.Runner] = true
	}
	for _, name := range names {
		if !used[name] {
			d.log.Warn("plugin is not used by any agent; not launching it", "plugin", name)
			continue
		}
		p := cfg.Plugins[name]
		spec := runnerhost.PluginSpec{Name: name, Command: p.Command, Args: p.Args, Dir: cfg.Dir(), SHA256: p.SHA256, Env: p.Env, Reattach: reattach[name]}
		if spec.Reattach != "" {
			d.log.Warn("attaching to a runner in debug mode instead of starting it", "plugin", name, "reattach", spec.Reattach)
		}
		if d.tracer != nil {
			spec.TraceEnv = traceEnv(cfg, name, d.traceExporter)
		}
		if err := d.host.Launch(ctx, spec); err != nil {
			return err
		}
	}
	for _, a := range cfg.Agents {
		raw, err := a.RunnerConfigJSON()
		if err != nil {
			return fmt.Errorf("agent %s: runner_config: %w", a.Name, err)
		}
		if err := d.host.Configure(ctx, a.Runner, a.Name, raw); err != nil {
			return fmt.Errorf("agent %s: plugin %s refused its runner_config: %w", a.Name, a.Runner, err)
		}
		if _, caps, _ := d.host.Info(a.Runner); a.Compaction != nil && !caps.Compaction {
			return fmt.Errorf("agent %s: compaction is set, but runner %s does not implement compaction (capability compaction)", a.Name, a.Runner)
		}
		// A policy for a tool the runner does not offer never applies: a typo,
		// most likely. Runners that do not report their tools are not checked.
		offered := d.host.Tools(a.Runner, a.Name)
		for _, tool := range a.UnofferedToolPolicies(offered) {
			d.log.Warn("tool_policies names a tool the runner does not offer; the policy never applies",
				"agent", a.Name, "tool", tool, "runner", a.Runner, "offered", offered)
		}
	}
	return nil
}

// hasSearchAttribute reports whether the namespace has ActiveStepTypes; a
// session upserts it only then, since an unknown attribute fails the
// workflow task. Each session records the answer when it starts, so a
// transient error here costs the sessions started by this process their
// searchability, never a replay; it is retried for a while first.
func (d *Daemon) hasSearchAttribute(ctx context.Context, namespace string) bool {
	var resp *operatorservice.ListSearchAttributesResponse
	var err error
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		resp, err = d.client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		if err == nil || attempt == 5 || !retryable(err) {
			break
		}
		d.log.Info("cannot list search attributes yet; retrying", "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait *= 2
	}
	if err != nil {
		d.log.Warn("cannot list search attributes; sessions started by this worker will not be searchable by ActiveStepTypes", "error", err)
		return false
	}
	if t, ok := resp.GetCustomAttributes()[wire.SearchAttributeActiveStepTypes]; ok && t == enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST {
		return true
	}
	d.log.Warn("the namespace has no KeywordList search attribute ActiveStepTypes; sessions started by this worker will not be searchable by the Steps they wait in",
		"namespace", namespace, "fix", "temporal operator search-attribute create --name ActiveStepTypes --type KeywordList")
	return false
}

// retryable reports whether a Temporal call may succeed when repeated.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

func (d *Daemon) serveHTTP(cfg *config.Config, opts Options, logger *slog.Logger) error {
	listen := opts.HTTPListen
	if listen == "" {
		listen = cfg.HTTP.Listen
	}
	if listen == "" {
		return nil
	}
	if d.role == RoleWorker {
		return d.serveProbes(listen, logger)
	}
	if d.broker == nil {
		return errors.New("the HTTP API needs the daemon's own event broker")
	}
	var tokens []httpapi.Token
	for i, t := range cfg.HTTP.Auth.Tokens {
		tokens = append(tokens, httpapi.Token{Name: cfg.HTTP.Auth.TokenName(i), Value: t.Value(), Agents: t.Agents, SessionPrefix: t.SessionPrefix, Operator: t.Operator})
	}
	tokens = append(tokens, opts.ExtraTokens...)
	if len(tokens) == 0 {
		return errors.New("the HTTP API needs at least one token (http.auth.tokens)")
	}
	var agents []httpapi.Agent
	for _, a := range cfg.Agents {
		ha := httpapi.Agent{Name: a.Name, FlowType: a.FlowType, PlanModeEnabled: a.PlanModeEnabled, BuiltInTools: a.BuiltInTools}
		for tool, p := range a.ToolPolicies {
			if p.ApprovalText != "" {
				if ha.ApprovalTexts == nil {
					ha.ApprovalTexts = map[string]string{}
				}
				ha.ApprovalTexts[tool] = p.ApprovalText
			}
			if p.DisplayText != "" {
				if ha.DisplayTexts == nil {
					ha.DisplayTexts = map[string]string{}
				}
				ha.DisplayTexts[tool] = p.DisplayText
			}
		}
		if d.host != nil {
			ha.SettingChoices = d.host.SettingChoices(a.Runner, a.Name)
		}
		agents = append(agents, ha)
	}
	var web http.Handler
	if cfg.HTTP.WebUIEnabled() {
		web = opts.WebUI
	}
	links, err := approvalLinks(cfg)
	if err != nil {
		return err
	}
	d.api = httpapi.New(httpapi.Options{
		Temporal: d.client, Namespace: cfg.Temporal.Namespace, TaskQueue: cfg.Temporal.TaskQueue,
		Broker: d.broker, Agents: agents, Tokens: tokens, WebUI: web, Logger: logger.With("component", "http"),
		MaxStreamsPerToken: cfg.HTTP.MaxStreamsPerToken, Messages: d.store, Links: links,
	})
	sopts := httpapi.ServerOptions{Logger: logger.With("component", "http")}
	if t := cfg.HTTP.TLS; t != nil {
		sopts.CertFile, sopts.KeyFile = t.CertFile, t.KeyFile
	}
	d.metrics.GaugeFunc("dex_event_streams_open", "Event streams (SSE) this process serves now.", func() float64 { return float64(d.api.OpenStreams()) })
	srv, err := httpapi.NewHTTPServer(d.metrics.Middleware(d.api), sopts)
	if err != nil {
		return fmt.Errorf("http.tls: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("serve the HTTP API on %s: %w", listen, err)
	}
	d.addr = ln.Addr().String()
	d.http = srv
	secure := srv.TLSConfig != nil
	go func() {
		serve := srv.Serve
		if secure {
			serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP server stopped", "error", err)
		}
	}()
	if !secure && !httpapi.LoopbackOnly(d.addr) {
		logger.Warn("the HTTP API listens beyond loopback without TLS: bearer tokens and conversations cross the network in clear text; set http.tls or serve it behind a TLS proxy",
			"address", d.addr)
	}
	logger.Info("HTTP API listening", "address", d.addr, "tls", secure, "web_ui", web != nil)
	return nil
}

// HTTPAddress returns the API's listen address, or "" when it serves none.
func (d *Daemon) HTTPAddress() string { return d.addr }

// Client returns the daemon's Temporal client.
func (d *Daemon) Client() temporalclient.Client { return d.client }

// Stop drains the worker and stops the rest. The worker stops taking new
// Steps at once and waits up to the config's shutdown_timeout for the
// running ones to finish (a write that finishes in time is recorded as
// succeeded, not outcome_unknown); only then are the HTTP API, the
// Temporal client and the plugins stopped, so the running Steps keep their
// plugin and their live events until they end. Steps still running after
// the timeout are cancelled.
func (d *Daemon) Stop() {
	if d.stopPromote != nil {
		d.stopPromote()
	}
	if d.worker != nil {
		if n := d.acts.Running(); n > 0 {
			d.log.Info("stopping: waiting for running steps to finish; send the signal again to stop now",
				"running_steps", n, "shutdown_timeout", d.shutdownTimeout)
		}
		// The workers drain together: each stops polling at once and waits
		// for its running Steps.
		var wg sync.WaitGroup
		for _, mw := range d.modelWorkers {
			wg.Add(1)
			go func() { defer wg.Done(); mw.Stop() }()
		}
		d.worker.Stop()
		wg.Wait()
		d.worker, d.modelWorkers = nil, nil
		d.log.Info("worker stopped", "steps_cut_short", d.acts.Running())
	}
	if d.http != nil {
		d.api.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.http.Shutdown(ctx)
		cancel()
		d.http = nil
	}
	if d.probes != nil {
		_ = d.probes.Close()
		d.probes = nil
	}
	if d.broker != nil {
		// After the worker: the drained Steps' last events go out first.
		if err := d.broker.Close(); err != nil {
			d.log.Warn("close the event broker", "error", err)
		}
		d.broker = nil
	}
	if d.client != nil {
		d.client.Close()
		d.client = nil
	}
	if d.host != nil {
		d.host.Close()
		d.host = nil
	}
	if d.mcp != nil {
		d.mcp.Source.Close()
		d.mcp = nil
	}
	if d.store != nil {
		if err := d.store.Close(); err != nil {
			d.log.Warn("close the message store", "error", err)
		}
		d.store = nil
	}
	if d.metricsSrv != nil {
		d.metricsSrv.Close()
		d.metricsSrv = nil
	}
	if d.tracer != nil {
		// Last: the drained Steps' spans go out too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := d.tracer.Shutdown(ctx); err != nil {
			d.log.Warn("export the last spans", "error", err)
		}
		cancel()
		d.tracer = nil
	}
}

// serveMetrics serves /metrics when the config names a listener: the
// Steps, model tokens and tool results (counted where they happen), and
// what the event broker, the event streams and the runner host count.
func (d *Daemon) serveMetrics(cfg *config.Config, version string, logger *slog.Logger) error {
	listen := cfg.Telemetry.Metrics.Prometheus
	if listen == "" {
		return nil
	}
	m := d.metrics
	if b, ok := d.broker.(interface{ Stats() events.Stats }); ok {
		m.CounterFunc("dex_events_published_total", "Live events this process stored in its event broker.", func() float64 { return float64(b.Stats().Published) })
		m.CounterFunc("dex_events_dropped_total", "Live events this process could not store (Redis down or too slow).", func() float64 { return float64(b.Stats().Dropped) })
		m.CounterFunc("dex_events_trimmed_total", "Live events trimmed to keep a session within its bound, by this process's writes.", func() float64 { return float64(b.Stats().Trimmed) })
	}
	if d.host != nil {
		host := d.host
		m.CounterFunc("dex_plugin_restarts_total", "Runner plugin processes started again after one died.", func() float64 { return float64(host.Restarts()) })
	}
	srv, err := metrics.Serve(listen, m, logger.With("component", "metrics"))
	if err != nil {
		return err
	}
	d.metricsSrv = srv
	return nil
}

// watchWaiting registers dex_sessions_waiting: the running sessions of
// the config's agents that wait for each kind, counted from the
// ActiveStepTypes search attribute (none without it) when scraped, at most
// every 15 seconds.
func (d *Daemon) watchWaiting(cfg *config.Config, searchAttrs bool) {
	if d.metrics == nil || !searchAttrs {
		return
	}
	var flowTypes []string
	for _, a := range cfg.Agents {
		flowTypes = append(flowTypes, a.FlowType)
	}
	c, ns := d.client, cfg.Temporal.Namespace
	d.metrics.SessionsWaiting(15*time.Second, func(ctx context.Context, kind string) (int64, error) {
		q, err := client.SessionsQuery(client.ListSessionsOptions{FlowTypes: flowTypes, WaitingFor: []string{kind}})
		if err != nil {
			return 0, err
		}
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: ns, Query: q})
		if err != nil {
			d.log.Debug("count the waiting sessions", "for", kind, "error", err)
			return 0, err
		}
		return resp.GetCount(), nil
	}, wire.WaitingForKinds())
}

// MetricsAddress returns the address of /metrics, or "" when none is served.
func (d *Daemon) MetricsAddress() string {
	if d.metricsSrv == nil {
		return ""
	}
	return d.metricsSrv.Addr()
}

// openMCP builds the MCP source of the servers the agents use: one listing
// cache per server, shared by the agents that name it. A stdio server gets
// the values of the environment variables its env grants, read now.
func (d *Daemon) openMCP(cfg *config.Config, version string, logger *slog.Logger) error {
	used := map[string]bool{}
	servers := map[string][]string{}
	resources := map[string]bool{}
	for _, a := range cfg.Agents {
		for _, name := range a.MCP {
			used[name] = true
		}
		if len(a.MCP) > 0 {
			servers[a.Name] = append([]string(nil), a.MCP...)
			resources[a.Name] = a.ResourceAndPromptTools
		}
	}
	names := make([]string, 0, len(cfg.MCPServers))
	for name := range cfg.MCPServers {
		names = append(names, name)
	}
	sort.Strings(names)
	var list []mcpsource.Server
	for _, name := range names {
		if !used[name] {
			d.log.Warn("MCP server is not used by any agent; it is never started", "mcp_server", name)
			continue
		}
		list = append(list, MCPServer(name, cfg.MCPServers[name]))
	}
	if len(list) == 0 {
		return nil
	}
	src, err := mcpsource.New(list, mcpsource.Options{
		Logger:     logger.With("component", "mcp"),
		ClientName: "dex-agent-worker", ClientVersion: version,
	})
	if err != nil {
		return fmt.Errorf("mcp_servers: %w", err)
	}
	d.mcp = &mcpsource.Agents{Source: src, Servers: servers, ResourceTools: resources}
	return nil
}

// MCPServer is the MCP source's form of a configured server, with the
// values of the environment variables its env grants, read now.
func MCPServer(name string, m config.MCPServer) mcpsource.Server {
	s := mcpsource.Server{
		Name: name, Command: m.Command, Args: m.Args, Dir: m.Dir, URL: m.URL,
		TrustsToolAnnotations: m.TrustsToolAnnotations,
		ConnectionTimeout:     m.ConnectionTimeout, RequestTimeout: m.RequestTimeout, ConnectionAttempts: m.ConnectionAttempts,
		TaskWaitTimeout: m.TaskWaitTimeout,
	}
	if m.Command != "" {
		s.Env = map[string]string{}
		for _, env := range m.Env {
			if v, ok := os.LookupEnv(env); ok {
				s.Env[env] = v
			}
		}
	}
	if len(m.Headers) > 0 {
		s.Headers = make(map[string]string, len(m.Headers))
		for k, v := range m.Headers {
			s.Headers[k] = v.Reveal()
		}
	}
	return s
}

// openStore opens the message store the config names (or dev's SQLite
// file) behind a per-worker read cache.
func (d *Daemon) openStore(ctx context.Context, cfg *config.Config, opts Options, logger *slog.Logger) error {
	o := transcript.Options{Driver: transcript.DriverSQLite, Path: opts.MessageStorePath, Logger: logger.With("component", "transcript")}
	cacheBytes := int64(config.DefaultMessageCacheBytes)
	if ms := cfg.MessageStore; ms != nil {
		o.Driver, o.Path, cacheBytes = ms.Driver, ms.Path, ms.CacheBytes
		if ms.Driver == config.MessageStorePostgres {
			dsn, err := ms.DSN()
			if err != nil {
				return err
			}
			o.Path, o.DSN = "", dsn.Reveal()
		}
	} else if o.Path == "" {
		return errors.New("the config has no message_store: set one (driver sqlite with a path for one machine, " +
			"driver postgres with dsn_env when several workers share sessions)")
	}
	st, err := transcript.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("open the message store: %w", err)
	}
	if cacheBytes > 0 {
		st = transcript.NewCache(st, cacheBytes)
	}
	d.store = st
	logger.Info("message store open", "store", o, "cache_bytes", cacheBytes)
	return nil
}

// messageOptions are an agent's message settings for the sessions this
// worker starts: in the message store, with the agent's window, chunks and
// retention.
func messageOptions(a *config.Agent) session.MessageOptions {
	o := session.MessageOptions{
		Store:         true,
		WindowSize:    a.MessageWindowSize,
		ChunkSize:     a.MessageChunkSize,
		ChunkMaxBytes: int64(a.MessageChunkMaxBytes),
	}
	if !a.RetainedMessageLimit.Unlimited {
		o.RetainedLimit = int64(a.RetainedMessageLimit.N)
	}
	return o
}

// PolicySet is an agent's tool policies as its sessions record them.
func PolicySet(a *config.Agent) pluginapi.PolicySet {
	policies := pluginapi.PolicySet{DefaultEffect: pluginapi.Effect(a.DefaultToolEffect), Policies: map[string]pluginapi.ToolPolicy{}}
	for name, p := range a.ToolPolicies {
		policies.Policies[name] = pluginapi.ToolPolicy{Effect: pluginapi.Effect(p.Effect), RequiresApproval: p.RequiresApproval}
	}
	return policies
}

// runtimeFor is the session workflow's runtime for agent a: the settings
// its new sessions record, and where their events go.
func runtimeFor(cfg *config.Config, a *config.Agent, sink sessionflow.EventSink, searchAttrs bool) sessionflow.Runtime {
	rt := baseRuntime(a, sink, searchAttrs)
	if q := a.RunModelLimit.Queue; q != "" {
		rt.Options.ModelTaskQueue = cfg.ModelTaskQueue(q)
	}
	rt.Options.Messages = messageOptions(a)
	rt.Options.RunnerPoliciesUntrusted = !cfg.Plugins[a.Runner].TrustsRunnerPolicies()
	if len(a.BuiltInTools) > 0 {
		rt.Options.BuiltInTools = append([]string(nil), a.BuiltInTools...)
		rt.Options.MaxDurableWaitMs = a.MaxDurableWait.Milliseconds()
		rt.Options.PlanModeEnabled = a.PlanModeEnabled
	}
	rt.Options.SubAgents = subAgentOptions(cfg, a)
	rt.Options.Notify = notifyRules(a)
	if c := a.Compaction; c != nil {
		rt.Options.Compaction = &session.CompactionPolicy{
			ContextWindowTokens: c.ContextWindowTokens, TriggerRatio: c.TriggerRatio,
			KeepRatio: c.KeepRatio, ReservedInputTokens: c.ReservedInputTokens,
		}
	}
	return rt
}

func baseRuntime(a *config.Agent, sink sessionflow.EventSink, searchAttrs bool) sessionflow.Runtime {
	policies := PolicySet(a)
	rm := session.DefaultRunModelLimits
	rm.StartToClose = a.RunModelLimit.StartToCloseTimeout
	rm.Heartbeat = a.RunModelLimit.HeartbeatTimeout
	rm.MaximumAttempts = a.RunModelLimit.MaximumAttempts
	rm.ScheduleToClose = a.RunModelLimit.ScheduleToCloseTimeout
	tool := session.DefaultToolLimits
	if a.ToolLimit.StartToCloseTimeout > 0 {
		tool.StartToClose = a.ToolLimit.StartToCloseTimeout
	}
	if a.ToolLimit.HeartbeatTimeout > 0 {
		tool.Heartbeat = a.ToolLimit.HeartbeatTimeout
	}
	if a.ToolLimit.MaximumAttempts > 0 {
		tool.MaximumAttempts = a.ToolLimit.MaximumAttempts
	}
	var recovery *session.RecoveryPolicy
	if r := a.Recovery; r != nil {
		recovery = &session.RecoveryPolicy{MaxAttempts: r.MaxAttempts, NoProgressTimeoutMs: r.NoProgressTimeout.Milliseconds()}
	}
	return sessionflow.Runtime{
		Options: session.Options{
			Agent:                   a.Name,
			Recovery:                recovery,
			Policies:                policies,
			InterruptDeadlineMs:     a.InterruptDeadline.Milliseconds(),
			InterruptExpiringLeadMs: a.InterruptExpiringLead.Milliseconds(),
			MaxInterruptDeadlineMs:  a.MaxInterruptDeadline.Milliseconds(),
			SearchAttributes:        searchAttrs,
			RunModel:                rm,
			Tool:                    tool,
		},
		Events: sink,
	}
}

// notifyRules are an agent's notify rules as its sessions record them.
func notifyRules(a *config.Agent) []session.NotifyRule {
	var out []session.NotifyRule
	for _, r := range a.Notify {
		kinds := r.Kinds
		if len(kinds) == 0 {
			kinds = []string{wire.InterruptKindApproval, wire.InterruptKindQuestion}
		}
		out = append(out, session.NotifyRule{Kinds: append([]string(nil), kinds...), Channel: r.Channel,
			EscalateAfterMs: r.EscalateAfter.Milliseconds(), EscalateTo: r.EscalateTo})
	}
	return out
}

// notifier is the Sender of the config's notification channels, with the
// approval links it puts in them; nil without channels.
func notifier(cfg *config.Config, digests *approvaldigest.Signer) (*notify.Sender, error) {
	n := cfg.Notifications
	if n == nil || len(n.Channels) == 0 {
		return nil, nil
	}
	s := &notify.Sender{Channels: map[string]notify.Channel{}, Digests: digests, Client: &http.Client{Timeout: 30 * time.Second}}
	for name, ch := range n.Channels {
		u, err := ch.ChannelURL(name)
		if err != nil {
			return nil, err
		}
		secret, err := ch.Secret(name)
		if err != nil {
			return nil, err
		}
		c := notify.Channel{Name: name, Type: ch.Type, URL: u, Secret: secret, IncludeArguments: ch.IncludeArguments}
		if m := ch.SMTP; m != nil {
			c.SMTP = notify.SMTP{Host: m.Host, Port: m.Port, Username: m.Username, NoTLS: m.StartTLS != nil && !*m.StartTLS}
			if c.SMTP.Port == 0 {
				c.SMTP.Port = 587
			}
			if m.PasswordEnv != "" {
				c.SMTP.Password = os.Getenv(m.PasswordEnv)
			}
			if m.CAFile != "" {
				pem, err := os.ReadFile(m.CAFile)
				if err != nil {
					return nil, fmt.Errorf("notifications.channels.%s.smtp.ca_file: %w", name, err)
				}
				c.SMTP.RootCAs = x509.NewCertPool()
				if !c.SMTP.RootCAs.AppendCertsFromPEM(pem) {
					return nil, fmt.Errorf("notifications.channels.%s.smtp.ca_file: %s holds no PEM certificate", name, m.CAFile)
				}
			}
			c.Mail = notify.Mail{From: ch.From, To: append([]string(nil), ch.To...)}
		}
		s.Channels[name] = c
	}
	if l := cfg.ApprovalLinks; l != nil {
		links, err := approvalLinks(cfg)
		if err != nil {
			return nil, err
		}
		s.LinkSigner, s.BaseURL, s.LinkTTL = links.Signer, links.BaseURL, links.TTL
	}
	return s, nil
}

// approvalLinks is the HTTP API's approval links, or nil when the config
// sets none.
func approvalLinks(cfg *config.Config) (*httpapi.Links, error) {
	l := cfg.ApprovalLinks
	if l == nil {
		return nil, nil
	}
	keys, err := l.Keys()
	if err != nil {
		return nil, err
	}
	signer, err := approvallink.NewSigner(keys...)
	if err != nil {
		return nil, fmt.Errorf("approval_links: %w", err)
	}
	ttl := l.TTL
	if ttl == 0 {
		ttl = config.DefaultLinkTTL
	}
	return &httpapi.Links{Signer: signer, BaseURL: l.PublicURL, TTL: ttl}, nil
}

// subAgentOptions are an agent's sub-agents as its sessions record them.
func subAgentOptions(cfg *config.Config, a *config.Agent) []session.SubAgentOption {
	var out []session.SubAgentOption
	for _, sa := range a.SubAgents {
		child, ok := cfg.Agent(sa.Agent)
		if !ok {
			continue // validation refused it
		}
		mode := sa.Mode
		if mode == "" {
			mode = wire.SubAgentModeWait
		}
		out = append(out, session.SubAgentOption{Name: sa.Agent, FlowType: child.FlowType, Description: sa.Description, Mode: mode, MaxTurns: sa.MaxTurns})
	}
	return out
}

// approvalRules compiles each agent's approval rules (config validation
// compiled them once already).
func approvalRules(cfg *config.Config) (func(agent string) *approvalrules.Set, error) {
	m := map[string]*approvalrules.Set{}
	for _, a := range cfg.Agents {
		set, errs := approvalrules.Compile(a.Rules())
		if errs != nil {
			return nil, fmt.Errorf("agent %s: approval_rules[%d].%s: %v", a.Name, errs[0].Index, errs[0].Field, errs[0].Err)
		}
		m[a.Name] = set
	}
	return func(agent string) *approvalrules.Set { return m[agent] }, nil
}

// modelLiveness gives each agent's bounds on a model call's stream.
func modelLiveness(cfg *config.Config) func(agent string) steps.ModelLiveness {
	m := map[string]steps.ModelLiveness{}
	for _, a := range cfg.Agents {
		l := a.RunModelLimit
		m[a.Name] = steps.ModelLiveness{FirstChunk: l.FirstChunkTimeout, Gap: l.ChunkGapTimeout, Call: l.CallTimeout}
	}
	return func(agent string) steps.ModelLiveness { return m[agent] }
}

func pluginOf(cfg *config.Config) map[string]string {
	m := map[string]string{}
	for _, a := range cfg.Agents {
		m[a.Name] = a.Runner
	}
	return m
}

// agentRunners finds an agent's runner in the host.
type agentRunners struct {
	host    *runnerhost.Host
	plugins map[string]string
}

func (r agentRunners) Runner(agent string) (pluginapi.Runner, pluginapi.Capabilities, error) {
	plugin, ok := r.plugins[agent]
	if !ok {
		return nil, pluginapi.Capabilities{}, fmt.Errorf("agent %q is not configured on this worker", agent)
	}
	run, err := r.host.Runner(plugin)
	if err != nil {
		return nil, pluginapi.Capabilities{}, err
	}
	_, caps, _ := r.host.Info(plugin)
	return run, caps, nil
}

// Tools are the names of the tools agent's runner reported in Configure
// (nil: it did not say), for steps.ToolLister.
func (r agentRunners) Tools(agent string) []string {
	plugin, ok := r.plugins[agent]
	if !ok {
		return nil
	}
	return r.host.Tools(plugin, agent)
}

// SizeWorkflowCache applies worker.max_cached_workflows. The SDK's cache
// is process-wide and sized when the process's first SDK worker starts:
// dev calls it before its embedded engine, whose own system workers are
// SDK workers too, starts them.
func SizeWorkflowCache(cfg *config.Config) {
	if n := cfg.Worker.MaxCachedWorkflows; n > 0 {
		worker.SetStickyWorkflowCacheSize(n)
	}
}

// modelCallCanceller ends a cancelled turn's model calls in this process
// at once, and in the deployment's other workers through Redis.
type modelCallCanceller struct {
	local *steps.ModelCalls
	redis *events.RedisBroker
}

func (c modelCallCanceller) CancelModelCalls(sessionID, runID, turnID string) {
	c.local.Cancel(sessionID, runID, turnID)
	if c.redis != nil {
		c.redis.BroadcastModelCancel(sessionID, runID, turnID)
	}
}

// sessionSink publishes the session's own events.
type sessionSink struct{ sink events.Sink }

func (s sessionSink) Publish(sessionID string, e session.Event, origin string, index uint64) {
	s.sink.Publish(events.Event{SessionID: sessionID, Type: e.Type, TurnID: e.TurnID, StepExecutionID: e.Step, Attempt: e.Attempt,
		Payload: e.Payload, Origin: origin, Index: index})
}

// PublishTo implements sessionflow.StreamSink.
func (s sessionSink) PublishTo(stream, sessionID string, e session.Event, origin string, index uint64) {
	s.sink.Publish(events.Event{SessionID: sessionID, Stream: stream, Type: e.Type, TurnID: e.TurnID, StepExecutionID: e.Step, Attempt: e.Attempt,
		Payload: e.Payload, Origin: origin, Index: index})
}

// Changed implements sessionflow.ChangeSink when the sink is a broker
// with a change feed.
func (s sessionSink) Changed(sessionID, changeType string) {
	if f, ok := s.sink.(events.ChangeFeed); ok {
		f.Announce(events.Change{SessionID: sessionID, Type: changeType})
	}
}

// Dial connects a Temporal client as the config says. address, when not
// empty, overrides the configured address.
func Dial(ctx context.Context, t config.Temporal, address string, logger *slog.Logger) (temporalclient.Client, error) {
	return dial(ctx, t, address, logger, nil, nil)
}

// dial is Dial with the SDK's metrics going to mh (nil: none) and the
// client (and its workers) intercepted by ics (tracing).
func dial(ctx context.Context, t config.Temporal, address string, logger *slog.Logger, mh temporalclient.MetricsHandler, ics []interceptor.ClientInterceptor) (temporalclient.Client, error) {
	if address == "" {
		address = t.Address
	}
	opts := temporalclient.Options{
		HostPort:       address,
		Namespace:      t.Namespace,
		DataConverter:  client.DataConverter(),
		Logger:         log.NewStructuredLogger(logger.With("component", "temporal")),
		MetricsHandler: mh,
	}
	opts.Interceptors = ics
	if t.TLS != nil {
		tc, err := tlsConfig(t.TLS)
		if err != nil {
			return nil, err
		}
		opts.ConnectionOptions.TLS = tc
	}
	if key := t.APIKey.Reveal(); key != "" {
		opts.Credentials = temporalclient.NewAPIKeyStaticCredentials(key)
		if opts.ConnectionOptions.TLS == nil {
			opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	c, err := temporalclient.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", address, t.Namespace, err)
	}
	return c, nil
}

// dialWaiting dials, and while the frontend is unreachable keeps trying
// for up to wait, logging each retry.
func dialWaiting(ctx context.Context, t config.Temporal, address string, wait time.Duration, logger *slog.Logger, mh temporalclient.MetricsHandler, ics []interceptor.ClientInterceptor) (temporalclient.Client, error) {
	deadline := time.Now().Add(wait)
	pause := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := dial(ctx, t, address, logger, mh, ics)
		if err == nil || time.Now().Add(pause).After(deadline) || !retryable(err) {
			return c, err
		}
		logger.Info("Temporal is not reachable yet; retrying", "attempt", attempt, "retry_in", pause, "error", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

func tlsConfig(t *config.TLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls: load client certificate %s: %w", t.CertFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("temporal.tls.ca_file: " + t.CAFile + " holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// secretRedactor removes the config's secret values (what plugins were
// granted, the Temporal API key, the API tokens) from Step error texts.
func secretRedactor(cfg *config.Config) func(string) string {
	return redact.New(cfg.SecretValues()...).String
}

// spendPolicies returns the spend policy of each agent's sessions, by the
// API token that started them.
func spendPolicies(cfg *config.Config) func(agent, token string) *spend.Policy {
	prices := spend.Prices{}
	for name, p := range cfg.Prices {
		prices[name] = spend.Price{Input: p.Input, CachedInput: p.CachedInput, Output: p.Output}
	}
	tokens := map[string]spend.Limits{}
	for _, t := range cfg.HTTP.Auth.Tokens {
		if t.SpendLimits != nil && t.Name != "" {
			tokens[t.Name] = spendLimits(t.SpendLimits)
		}
	}
	agents := map[string]spend.Policy{}
	for _, a := range cfg.Agents {
		p := spend.Policy{Agent: a.Name, Limits: spendLimits(a.SpendLimits), Prices: prices}
		if h := a.SpendLimit; h != nil {
			headers := map[string]string{}
			for k, v := range h.Headers {
				headers[k] = v.Reveal()
			}
			p.Hook = &spend.Hook{URL: h.URL, Timeout: h.Timeout, Headers: headers}
		}
		agents[a.Name] = p
	}
	return func(agent, token string) *spend.Policy {
		p, ok := agents[agent]
		if !ok {
			return nil
		}
		p.TokenLimits = tokens[token]
		return &p
	}
}

func spendLimits(l *config.SpendLimits) spend.Limits {
	if l == nil {
		return spend.Limits{}
	}
	budget := func(b *config.Budget) *spend.Budget {
		if b == nil {
			return nil
		}
		return &spend.Budget{ModelCalls: b.ModelCalls, InputTokens: b.InputTokens, OutputTokens: b.OutputTokens, CostMicros: int64(math.Round(b.CostUSD * 1e6))}
	}
	return spend.Limits{Session: budget(l.PerSession), Turn: budget(l.PerTurn), Day: budget(l.PerDay)}
}

// ledgerOf is the store as the spend ledger, or nil without a store.
func ledgerOf(st transcript.Store) spend.Ledger {
	if st == nil {
		return nil
	}
	return st
}
