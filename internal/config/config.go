package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dex-agents/dex-agent-worker/internal/approvalrules"
)

// Config is the resolved configuration of a dex-agent-worker daemon. Load
// and LoadBytes return it with defaults applied and Validate passed; code
// outside this package only reads it.
type Config struct {
	Temporal Temporal          `yaml:"temporal"`
	Logging  Logging           `yaml:"logging"`
	Plugins  map[string]Plugin `yaml:"plugins,omitempty"`
	// MCPServers are the MCP servers whose tools the worker runs itself
	// for the agents that name them (agents[].mcp), by name.
	MCPServers map[string]MCPServer `yaml:"mcp_servers,omitempty"`
	Agents     []Agent              `yaml:"agents"`
	Events     Events               `yaml:"events"`
	HTTP       HTTP                 `yaml:"http"`
	// Telemetry configures the worker's metrics.
	Telemetry Telemetry `yaml:"telemetry,omitempty"`
	// ShutdownTimeout is how long a stopping worker (SIGTERM, SIGINT)
	// waits for its running Steps to finish after it stopped taking new
	// ones; after it, they are cancelled. Default 30s. Keep it below the
	// grace period of whatever stops the process (Kubernetes:
	// terminationGracePeriodSeconds).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// Worker tunes the worker process's Temporal worker.
	Worker Worker `yaml:"worker,omitempty"`
	// MessageStore is where sessions keep the messages outside their
	// window. Nil when the file has no message_store: dev then uses SQLite
	// in its data dir.
	MessageStore *MessageStore `yaml:"message_store,omitempty"`
	// Prices are the model prices that cost_usd spend limits count with,
	// by model name (the name the runner asks for, else the one the
	// provider reports), and "default" for any other model.
	Prices map[string]Price `yaml:"prices,omitempty"`
	// ApprovalDigest, when set, signs every approval interrupt with an
	// HMAC over the session, the call, the tool and its arguments, and
	// refuses a resolve_interrupt whose digest does not match.
	ApprovalDigest *ApprovalDigest `yaml:"approval_digest,omitempty"`
	// ApprovalLinks, when set, lets the HTTP API mint and serve signed
	// links that answer one interrupt (see docs/approval-links.md). It
	// needs approval_digest: a link is bound to the call's digest.
	ApprovalLinks *ApprovalLinks `yaml:"approval_links,omitempty"`
	// Notifications are the channels that agents' notify rules send
	// approvals and questions to (see docs/notifications.md).
	Notifications *Notifications `yaml:"notifications,omitempty"`
	// ModelQueues are Temporal task queues for model calls, by name: an
	// agent whose run_model_limit names one runs its RunModel and
	// CompactContext Steps there, so the queue's rate limit, which the
	// Temporal server enforces for every worker polling it, bounds the
	// calls to one provider or model across the whole deployment.
	ModelQueues map[string]ModelQueue `yaml:"model_queues,omitempty"`

	// fromEnv holds the key paths of the values that came from ${VAR}
	// expansion; Redacted hides those passed to plugins.
	fromEnv map[string]bool
	// dir is Dir.
	dir string
}

// ModelQueue is one task queue of model calls.
type ModelQueue struct {
	// ActivitiesPerSecond is the queue's rate limit: model call attempts
	// per second started by all workers together (below 1 for one every
	// few seconds). Zero: none.
	ActivitiesPerSecond float64 `yaml:"activities_per_second,omitempty"`
	// MaxConcurrentPerWorker bounds the model calls one worker runs from
	// the queue at once. Zero: the SDK's default (1000).
	MaxConcurrentPerWorker int `yaml:"max_concurrent_per_worker,omitempty"`
}

// ModelTaskQueue is the Temporal task queue of the model queue name.
func (c *Config) ModelTaskQueue(name string) string {
	return c.Temporal.TaskQueue + "-model-" + name
}

// ApprovalDigest configures approval digests (package approvaldigest).
type ApprovalDigest struct {
	// KeyEnv names the environment variable that holds the signing key
	// (at least 16 bytes). Every worker of the deployment needs the same
	// key: any of them may answer a session's query or update.
	KeyEnv string `yaml:"key_env"`
	// PreviousKeyEnvs name keys that still verify, while a rotation lets
	// the approvals they signed be resolved.
	PreviousKeyEnvs []string `yaml:"previous_key_envs,omitempty"`
	// Required refuses a resolve_interrupt of an approval without a
	// digest. Leave it off while clients that do not send one remain.
	Required bool `yaml:"required,omitempty"`
}

// ApprovalLinks configure signed approval links.
type ApprovalLinks struct {
	// KeyEnv names the environment variable that holds the links' signing
	// key (at least 32 bytes); PreviousKeyEnvs name keys whose links still
	// work while a rotation lets them expire.
	KeyEnv          string   `yaml:"key_env"`
	PreviousKeyEnvs []string `yaml:"previous_key_envs,omitempty"`
	// PublicURL is where people reach the HTTP API; links start with it.
	PublicURL string `yaml:"public_url"`
	// TTL is how long a link works (default 24h, at most 720h).
	TTL time.Duration `yaml:"ttl,omitempty"`
}

// DefaultLinkTTL is approval_links.ttl's default.
const DefaultLinkTTL = 24 * time.Hour

// Keys returns the signing key and then the previous ones, read now.
func (a *ApprovalLinks) Keys() ([][]byte, error) {
	var keys [][]byte
	for i, name := range append([]string{a.KeyEnv}, a.PreviousKeyEnvs...) {
		path := "approval_links.key_env"
		if i > 0 {
			path = fmt.Sprintf("approval_links.previous_key_envs[%d]", i-1)
		}
		k, err := secretFromEnv(path, name)
		if err != nil {
			return nil, err
		}
		keys = append(keys, []byte(k))
	}
	return keys, nil
}

// Keys returns the signing key and then the previous ones, read now.
func (a *ApprovalDigest) Keys() ([][]byte, error) {
	var keys [][]byte
	for i, name := range append([]string{a.KeyEnv}, a.PreviousKeyEnvs...) {
		path := "approval_digest.key_env"
		if i > 0 {
			path = fmt.Sprintf("approval_digest.previous_key_envs[%d]", i-1)
		}
		k, err := secretFromEnv(path, name)
		if err != nil {
			return nil, err
		}
		if len(k) < 16 {
			return nil, fmt.Errorf("config: %s: the key in %s is %d bytes; it must be at least 16 (try: openssl rand -hex 32)", path, name, len(k))
		}
		keys = append(keys, []byte(k))
	}
	return keys, nil
}

// Temporal says how the worker reaches the Temporal frontend.
type Temporal struct {
	Address   string `yaml:"address"`    // host:port; default localhost:7233
	Namespace string `yaml:"namespace"`  // default "default"
	TaskQueue string `yaml:"task_queue"` // default "dex-agents"
	// APIKey authenticates with Temporal Cloud; empty means none.
	APIKey Secret `yaml:"api_key,omitempty"`
	// TLS is nil when the file has no tls key. Any tls mapping, even an
	// empty one, enables TLS (an empty one verifies the server with the
	// system roots).
	TLS *TLS `yaml:"tls,omitempty"`
	// Deployment, when set, runs the worker as one version (build ID) of
	// a Temporal Worker Deployment: a session is pinned to the version
	// that runs it, and moves to the deployment's current version at its
	// next turn boundary (continue-as-new).
	Deployment *WorkerDeployment `yaml:"deployment,omitempty"`
}

// Worker tunes the worker process's Temporal worker.
type Worker struct {
	// MaxCachedWorkflows bounds the sessions whose workflow state the
	// process keeps in memory between their workflow tasks (the SDK's
	// sticky cache, shared by the process's workers); 0 keeps the SDK's
	// default, 10,000. A session evicted from it replays its current run's
	// history on its next workflow task: less memory, more CPU.
	MaxCachedWorkflows int `yaml:"max_cached_workflows,omitempty"`
}

// WorkerDeployment is a worker's Temporal Worker Deployment version.
type WorkerDeployment struct {
	// Name is the deployment's name, the same for every build.
	Name string `yaml:"name"`
	// BuildID identifies this build, such as its image tag or commit.
	BuildID string `yaml:"build_id"`
	// SetCurrent makes this version the deployment's current version
	// once the worker polls: new sessions start on it, and running ones
	// move to it at their next turn boundary. Leave it off to promote a
	// version yourself (temporal worker deployment set-current-version).
	SetCurrent bool `yaml:"set_current,omitempty"`
}

// TLS configures the client side of TLS to the Temporal frontend. Relative
// file paths are resolved against the config file's directory.
type TLS struct {
	CertFile   string `yaml:"cert_file,omitempty"` // client certificate (mTLS); set with KeyFile
	KeyFile    string `yaml:"key_file,omitempty"`  // client key (mTLS); set with CertFile
	CAFile     string `yaml:"ca_file,omitempty"`   // roots that verify the server; system roots when empty
	ServerName string `yaml:"server_name,omitempty"`
}

// Events configures the live event stream (the spec's AgentEvents).
type Events struct {
	// Backend is "memory" (events live in the worker process, which must
	// also serve the HTTP API: one process) or "redis" (Redis Streams,
	// shared by every worker and API process of a deployment).
	Backend string `yaml:"backend"`

	// The redis backend.

	// URLEnv names the environment variable that holds the Redis URL
	// (redis://[user:password@]host:port/db, or rediss:// for TLS). The
	// URL may hold a password, so it is never in the file: read it with
	// RedisURL.
	URLEnv string `yaml:"url_env,omitempty"`
	// TokenKeyEnv names the environment variable that holds the key that
	// signs resume tokens (at least 16 bytes). Every process of the
	// deployment needs the same key, so a token one API process issued
	// resumes on another and after a restart.
	TokenKeyEnv string `yaml:"token_key_env,omitempty"`
	// MaxBytesPerSession bounds each session's stream; the oldest events
	// are trimmed first. Default 10 MiB.
	MaxBytesPerSession int `yaml:"max_bytes_per_session,omitempty"`
	// TTL drops a session's stream when nothing was published to it for
	// this long. Default 1h.
	TTL time.Duration `yaml:"ttl,omitempty"`
	// KeyPrefix starts the Redis keys (default "dex:events:"), so several
	// deployments can share one Redis.
	KeyPrefix string `yaml:"key_prefix,omitempty"`

	// The memory backend.

	// CapacityBytes bounds each session's retained events; the oldest are
	// trimmed first. Default 10 MiB.
	CapacityBytes int `yaml:"capacity_bytes"`
	// MaxTotalBytes bounds the retained events of all sessions together.
	// Past it, the sessions written least recently lose their events first,
	// those without a reader before those with one. Default 256 MiB.
	MaxTotalBytes int `yaml:"max_total_bytes"`
	// IdleTTL drops a session's events when nothing was published to it
	// and nobody read it for this long; its resume tokens then answer 400
	// (reload the snapshot). Default 1h.
	IdleTTL time.Duration `yaml:"idle_ttl"`
}

// Telemetry configures what the worker reports about itself.
type Telemetry struct {
	Metrics TelemetryMetrics `yaml:"metrics,omitempty"`
	Traces  TelemetryTraces  `yaml:"traces,omitempty"`
	// CaptureContent puts tool arguments and results on the execute_tool
	// spans. They can be sensitive and large: turn it on only where the
	// tracing backend may keep them.
	CaptureContent bool `yaml:"capture_content,omitempty"`
}

// TelemetryTraces configures the OpenTelemetry traces: one trace per turn.
type TelemetryTraces struct {
	// Exporter is otlp, file or none (default none).
	Exporter string `yaml:"exporter,omitempty"`
	// Endpoint is the OTLP collector's URL (otlp): http://host:port for
	// plain text, https:// for TLS. Default http://localhost:4317 (grpc),
	// http://localhost:4318 (http).
	Endpoint string `yaml:"endpoint,omitempty"`
	// Protocol is grpc (default) or http (OTLP/HTTP protobuf).
	Protocol string `yaml:"protocol,omitempty"`
	// HeadersEnv names the environment variable that holds the export's
	// headers, as key=value pairs separated by commas (the
	// OTEL_EXPORTER_OTLP_HEADERS format), such as a backend's API key.
	HeadersEnv string `yaml:"headers_env,omitempty"`
	// File is where the file exporter appends one JSON object per span,
	// resolved against the config file's directory.
	File string `yaml:"file,omitempty"`
	// SampleRatio is the share of turns traced, in (0, 1]; default 1.
	// Every worker of a turn makes the same decision (it follows from the
	// trace ID).
	SampleRatio float64 `yaml:"sample_ratio,omitempty"`
}

// The trace exporters.
const (
	TracesNone = "none"
	TracesOTLP = "otlp"
	TracesFile = "file"
)

// Headers returns the OTLP export headers from the variable HeadersEnv
// names, read now; nil when HeadersEnv is empty.
func (t *TelemetryTraces) Headers() (map[string]string, error) {
	if t.HeadersEnv == "" {
		return nil, nil
	}
	v, err := secretFromEnv("telemetry.traces.headers_env", t.HeadersEnv)
	if err != nil {
		return nil, err
	}
	return ParseHeaders(v.Reveal())
}

// ParseHeaders parses key=value pairs separated by commas, with the
// values URL-decoded as OTEL_EXPORTER_OTLP_HEADERS has them. An error
// names the pair by position, never its value.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for i, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("config: telemetry.traces.headers_env: pair %d is not key=value", i+1)
		}
		if d, err := url.QueryUnescape(strings.TrimSpace(v)); err == nil {
			v = d
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

// TelemetryMetrics configures the metrics.
type TelemetryMetrics struct {
	// Prometheus is the host:port of a listener of its own that serves
	// /metrics (such as ":9464"); empty serves none.
	Prometheus string `yaml:"prometheus,omitempty"`
}

// The event backends.
const (
	EventsMemory = "memory"
	EventsRedis  = "redis"
)

// RedisURL returns the Redis URL from the variable URLEnv names, read now,
// as a Secret: fmt and slog show it as <secret>.
func (e *Events) RedisURL() (Secret, error) {
	return secretFromEnv("events.url_env", e.URLEnv)
}

// TokenKey returns the resume token key from the variable TokenKeyEnv
// names, read now.
func (e *Events) TokenKey() (Secret, error) {
	k, err := secretFromEnv("events.token_key_env", e.TokenKeyEnv)
	if err != nil {
		return "", err
	}
	if len(k) < 16 {
		return "", fmt.Errorf("config: events.token_key_env: the key in %s is %d bytes; it must be at least 16 (try: openssl rand -hex 32)", e.TokenKeyEnv, len(k))
	}
	return k, nil
}

func secretFromEnv(path, name string) (Secret, error) {
	if name == "" {
		return "", fmt.Errorf("config: %s is not set", path)
	}
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("config: %s: environment variable %s is not set", path, name)
	}
	return Secret(v), nil
}

// MessageStore configures the message store: the messages of every
// session that are not in its window (chunks, window rows, large content).
type MessageStore struct {
	// Driver is "sqlite" (one file, for one machine) or "postgres"
	// (shared by every worker). Default sqlite.
	Driver string `yaml:"driver"`
	// Path is the SQLite database file, resolved against the config
	// file's directory; driver sqlite only. It is created with mode 0600.
	Path string `yaml:"path,omitempty"`
	// DSNEnv names the environment variable that holds the PostgreSQL
	// connection string; driver postgres only. The DSN may hold a
	// password, so it is never in the file: read it with DSN.
	DSNEnv string `yaml:"dsn_env,omitempty"`
	// CacheBytes bounds each worker's in-memory cache of chunks and
	// blobs read from the store. Default 256 MiB; 0 turns the cache off.
	CacheBytes int64 `yaml:"cache_bytes"`
}

// The message store drivers.
const (
	MessageStoreSQLite   = "sqlite"
	MessageStorePostgres = "postgres"
)

// DSN returns the PostgreSQL connection string from the variable DSNEnv
// names, read now, as a Secret: fmt and slog show it as <secret>.
func (m *MessageStore) DSN() (Secret, error) {
	if m.DSNEnv == "" {
		return "", errors.New("config: message_store.dsn_env is not set")
	}
	v := os.Getenv(m.DSNEnv)
	if v == "" {
		return "", fmt.Errorf("config: message_store.dsn_env: environment variable %s is not set", m.DSNEnv)
	}
	return Secret(v), nil
}

// MessageLimit is a number of messages, or no limit (YAML null).
type MessageLimit struct {
	// Unlimited means no limit: every message is kept.
	Unlimited bool
	// N is the limit when Unlimited is false; Validate wants N >= 1.
	N int
}

// HTTP configures the REST + SSE API and the web page.
type HTTP struct {
	// Listen is host:port; empty serves no HTTP (run) — dev always serves.
	Listen string `yaml:"listen,omitempty"`
	// WebUI serves the chat page at / (default true).
	WebUI *bool `yaml:"web_ui,omitempty"`
	Auth  Auth  `yaml:"auth"`
	// TLS serves HTTPS with this certificate; nil serves plain HTTP.
	TLS *HTTPTLS `yaml:"tls,omitempty"`
	// MaxStreamsPerToken bounds the event streams (SSE) one token may hold
	// open at once; the next one is refused with 429. Default 64.
	MaxStreamsPerToken int `yaml:"max_streams_per_token"`
}

// HTTPTLS is the server certificate of the HTTP API. Relative file paths
// are resolved against the config file's directory.
type HTTPTLS struct {
	CertFile string `yaml:"cert_file,omitempty"` // PEM certificate chain, leaf first
	KeyFile  string `yaml:"key_file,omitempty"`  // PEM private key of the leaf
}

// WebUIEnabled reports whether the chat page is served.
func (h HTTP) WebUIEnabled() bool { return h.WebUI == nil || *h.WebUI }

// Auth lists the bearer tokens the API accepts.
type Auth struct {
	Tokens []APIToken `yaml:"tokens,omitempty"`
}

// TokenName returns the name of Tokens[i] for logs and banners: its name,
// or "tokens[i]" when it has none. It never shows the value.
func (a Auth) TokenName(i int) string {
	if n := a.Tokens[i].Name; n != "" {
		return n
	}
	return fmt.Sprintf("tokens[%d]", i)
}

// APIToken is one bearer token and what it may reach.
type APIToken struct {
	// Name identifies the token in logs.
	Name string `yaml:"name,omitempty"`
	// Token is the value, usually ${VAR}; or set TokenEnv instead.
	Token Secret `yaml:"token,omitempty"`
	// TokenEnv names the environment variable that holds the value.
	TokenEnv string `yaml:"token_env,omitempty"`
	// Agents limits the token to these agents; empty allows every agent.
	Agents []string `yaml:"agents,omitempty"`
	// SessionPrefix limits the token to the session IDs inside the prefix:
	// the ID equals it, or continues it after a separator ("-", "_", ":"
	// or "."), so "u1" reaches "u1-abc" but not "u10-abc". A prefix that
	// ends in a separator matches every ID that starts with it. New sessions
	// the token starts get IDs inside it.
	SessionPrefix string `yaml:"session_prefix,omitempty"`
	// SpendLimits are budgets of the sessions this token starts, beside
	// their agents' own; per_day sums every session the token started.
	SpendLimits *SpendLimits `yaml:"spend_limits,omitempty"`
	// Operator allows the operator-only routes: terminating a session.
	// Give it to the tokens of people who run the worker, not of apps.
	Operator bool `yaml:"operator,omitempty"`
}

// Value returns the token's secret value: Token, or the variable TokenEnv
// names, read when the config was loaded.
func (t APIToken) Value() string { return t.Token.Reveal() }

// Logging configures the daemon's slog handler.
type Logging struct {
	Level  string `yaml:"level"`  // debug, info, warn or error; default info
	Format string `yaml:"format"` // text or json; default text
}

// SlogLevel returns the slog level named by Level (info for an unknown one,
// which Validate rejects).
func (l Logging) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// Plugin is a runner plugin binary that the worker launches with
// hashicorp/go-plugin. Config.Plugins maps plugin names to plugins.
type Plugin struct {
	// Command is the executable. A relative path that contains a path
	// separator has been resolved against the config file's directory; a
	// bare name is kept as is and looked up on PATH at launch time.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args,omitempty" redact:"env"`
	// SHA256 is the expected checksum of Command in lowercase hex, or empty
	// to skip the check.
	SHA256 string `yaml:"sha256,omitempty"`
	// Env names the environment variables the plugin process may see.
	Env []string `yaml:"env,omitempty"`
	// Venv is a Python virtualenv directory (relative to the config file's
	// directory) whose interpreter runs the plugin: with a bare command
	// such as "python", the command is <venv>/bin/python.
	Venv string `yaml:"venv,omitempty"`
	// TrustsToolPolicies says whether the runner's own policies (a tool's
	// declared effect, its agent definition's policies, its default
	// effect) apply to the tools tool_policies does not name. Default
	// true; false leaves every such tool to default_tool_effect, and the
	// runner may only make a call stricter.
	TrustsToolPolicies *bool `yaml:"trusts_tool_policies,omitempty"`
}

// TrustsRunnerPolicies reports trusts_tool_policies (default true).
func (p Plugin) TrustsRunnerPolicies() bool {
	return p.TrustsToolPolicies == nil || *p.TrustsToolPolicies
}

// MCPServer is an MCP server whose tools the worker lists and calls itself:
// a stdio server (command) started for every request with exactly the
// environment env grants, or a Streamable HTTP server (url). The operator
// declares them here, never a session, a user or a browser: a stdio
// server's command runs with the worker's privileges.
type MCPServer struct {
	// Command and Args start a stdio server. A relative Command that
	// contains a path separator is resolved against the config file's
	// directory; a bare name is looked up on PATH.
	Command string   `yaml:"command,omitempty"`
	Args    []string `yaml:"args,omitempty" redact:"env"`
	// Env names the environment variables the stdio server's process
	// gets, with the worker's values; nothing else of the worker's
	// environment reaches it (grant PATH and HOME for npx). Their values
	// are redacted wherever they could appear, except those of the
	// variables in NotSecretEnv (PATH, HOME, ...).
	Env []string `yaml:"env,omitempty"`
	// Dir is the stdio server's working directory, resolved against the
	// config file's directory; empty is the worker's.
	Dir string `yaml:"dir,omitempty"`
	// URL is a Streamable HTTP server's endpoint.
	URL string `yaml:"url,omitempty" redact:"env"`
	// Headers are sent with every request, such as an Authorization
	// header from ${VAR}; never logged.
	Headers map[string]Secret `yaml:"headers,omitempty"`
	// TrustsToolAnnotations says whether readOnlyHint and idempotentHint
	// decide the server's tools' effects; default true. With false, its
	// tools take the agent's default effect unless a policy names them.
	TrustsToolAnnotations *bool `yaml:"trusts_tool_annotations,omitempty"`
	// ConnectionTimeout bounds connecting and each handshake or listing
	// request (default 30s); RequestTimeout bounds a tools/call (default
	// 10m); ConnectionAttempts is how many connections are tried before a
	// call counts as never sent (default 3).
	ConnectionTimeout  time.Duration `yaml:"connection_timeout"`
	RequestTimeout     time.Duration `yaml:"request_timeout"`
	ConnectionAttempts int           `yaml:"connection_attempts"`
	// TaskWaitTimeout bounds how long a tool Step polls a stdio server's
	// MCP task (which ends with its process) before the call's outcome is
	// unknown (default 10m). A Streamable HTTP server's tasks are polled
	// on durable timers instead, for as long as they run.
	TaskWaitTimeout time.Duration `yaml:"task_wait_timeout"`
}

// Default limits of an MCP server (the spec's).
const (
	DefaultMCPConnectionTimeout  = 30 * time.Second
	DefaultMCPRequestTimeout     = 10 * time.Minute
	DefaultMCPConnectionAttempts = 3
	DefaultMCPTaskWaitTimeout    = 10 * time.Minute
)

func (m *MCPServer) setDefaults() {
	m.ConnectionTimeout = DefaultMCPConnectionTimeout
	m.RequestTimeout = DefaultMCPRequestTimeout
	m.ConnectionAttempts = DefaultMCPConnectionAttempts
	m.TaskWaitTimeout = DefaultMCPTaskWaitTimeout
}

// Agent declares one agent: its Temporal workflow type, the runner plugin
// that drives its model loop, and its tool policies.
type Agent struct {
	Name     string `yaml:"name"`
	FlowType string `yaml:"flow_type"` // workflow type name, unique across agents
	Runner   string `yaml:"runner"`    // a key of Config.Plugins
	// RunnerConfig is handed to the runner plugin as JSON; see
	// RunnerConfigJSON. It must not hold secrets: give the plugin the name
	// of an environment variable listed in Plugin.Env instead.
	RunnerConfig      map[string]any        `yaml:"runner_config,omitempty" redact:"env"`
	DefaultToolEffect Effect                `yaml:"default_tool_effect"` // default unclassified
	ToolPolicies      map[string]ToolPolicy `yaml:"tool_policies,omitempty"`
	// ApprovalRules decide a call's approval before its policy does: the
	// first enforcing rule whose tool and when match (package
	// approvalrules).
	ApprovalRules []ApprovalRule `yaml:"approval_rules,omitempty"`
	// InterruptDeadline bounds how long an approval or a question waits;
	// zero means no deadline.
	InterruptDeadline time.Duration `yaml:"interrupt_deadline,omitempty"`
	// InterruptExpiringLead, when set, writes interrupt_expiring this long
	// before an interrupt's deadline passes (less than interrupt_deadline).
	InterruptExpiringLead time.Duration `yaml:"interrupt_expiring_lead,omitempty"`
	// MaxInterruptDeadline, when set, lets extend_interrupt move a deadline
	// up to this long after the interrupt was raised (at least
	// interrupt_deadline); without it deadlines cannot be extended.
	MaxInterruptDeadline time.Duration `yaml:"max_interrupt_deadline,omitempty"`
	RunModelLimit        RunModelLimit `yaml:"run_model_limit"`
	// Recovery, when set, is each turn's recovery budget: past it the turn
	// fails instead of retrying for as long as each Step's limits allow.
	Recovery *Recovery `yaml:"recovery,omitempty"`
	// ToolLimit bounds the tool Steps (CallTool, CallSingleAttemptTool).
	ToolLimit ToolLimit `yaml:"tool_limit"`
	// MessageWindowSize is how many of the newest messages a session keeps
	// in its state; older ones move into chunks in the message store.
	// Default 64.
	MessageWindowSize int `yaml:"message_window_size"`
	// MessageChunkSize is the most messages one chunk holds. Default 32.
	MessageChunkSize int `yaml:"message_chunk_size"`
	// MessageChunkMaxBytes bounds a chunk's encoded JSON, from 1 KiB to
	// 8 MiB; a larger message is a chunk of its own. Default 1 MiB.
	MessageChunkMaxBytes int `yaml:"message_chunk_max_bytes"`
	// RetainedMessageLimit is how many of the newest messages retention
	// keeps at least: it deletes whole chunks before them that the latest
	// compaction summary covers. Default 1000; null keeps every message.
	RetainedMessageLimit MessageLimit `yaml:"retained_message_limit"`
	// Compaction, when set, summarizes a session's oldest messages before
	// a model call whose input would pass trigger_ratio of the context
	// window. The agent's runner must implement compaction.
	Compaction *Compaction `yaml:"compaction,omitempty"`
	// BuiltInTools are the session's own tools offered to the agent's
	// model: ask_user (a question to the user) and durable_wait (a wait on
	// a durable timer). Their names are reserved while enabled.
	BuiltInTools []string `yaml:"built_in_tools,omitempty"`
	// PlanModeEnabled lets messages start planning turns (plan_mode) whose
	// plan the user reviews and runs with execute_plan; needs write_todos.
	PlanModeEnabled bool `yaml:"plan_mode_enabled,omitempty"`
	// MCP names the mcp_servers whose tools the agent's runner is offered
	// beside its own, as "<server>__<tool>"; the worker runs each call in
	// its own tool Step. Key tool_policies by those names.
	MCP []string `yaml:"mcp,omitempty"`
	// ResourceAndPromptTools also offers mcp_list_resources_and_prompts,
	// mcp_read_resource and mcp_get_prompt (read tools, no approval unless
	// a tool policy names them) over the agent's MCP servers.
	ResourceAndPromptTools bool `yaml:"resource_and_prompt_tools,omitempty"`
	// MaxDurableWait bounds a durable_wait; default 365 days.
	MaxDurableWait time.Duration `yaml:"max_durable_wait"`
	// SpendLimits are the agent's budgets: each is checked before every
	// model call (the summary calls of compaction included) and charged
	// after it.
	SpendLimits *SpendLimits `yaml:"spend_limits,omitempty"`
	// SpendLimit is an external spend limit: an HTTP hook asked before
	// each model call and told what the call used after it.
	SpendLimit *SpendHook `yaml:"spend_limit,omitempty"`
	// SubAgents are the agents this agent may delegate a task to: its
	// model is offered delegate_to_<agent> for each, and a call runs the
	// task in a child session of that agent.
	SubAgents []SubAgent `yaml:"sub_agents,omitempty"`
	// Notify sends the agent's approvals and questions to notification
	// channels.
	Notify []NotifyRule `yaml:"notify,omitempty"`
}

// NotifyRule sends interrupts of some kinds to a channel, and, when
// nobody answered within EscalateAfter, to another.
type NotifyRule struct {
	// Kinds are approval and question (default both).
	Kinds         []string      `yaml:"kinds,omitempty"`
	Channel       string        `yaml:"channel"`
	EscalateAfter time.Duration `yaml:"escalate_after,omitempty"`
	EscalateTo    string        `yaml:"escalate_to,omitempty"`
}

// Notifications configure notification channels.
type Notifications struct {
	Channels map[string]NotificationChannel `yaml:"channels"`
}

// NotificationChannel is a webhook, a Slack incoming webhook, or mail.
type NotificationChannel struct {
	// Type is webhook, slack or email.
	Type string `yaml:"type"`
	// SMTP, From and To are an email channel's.
	SMTP *SMTP    `yaml:"smtp,omitempty"`
	From string   `yaml:"from,omitempty"`
	To   []string `yaml:"to,omitempty"`
	// URL is where it posts; URLEnv names a variable that holds it
	// instead (a Slack incoming webhook's URL is a secret).
	URL    string `yaml:"url,omitempty"`
	URLEnv string `yaml:"url_env,omitempty"`
	// SecretEnv names the variable that holds a webhook's signing secret
	// (at least 16 bytes).
	SecretEnv string `yaml:"secret_env,omitempty"`
	// IncludeArguments puts an approval's arguments in the notification;
	// off, the link's page shows them to whoever opens it.
	IncludeArguments bool `yaml:"include_arguments,omitempty"`
}

// SMTP is an email channel's server.
type SMTP struct {
	Host string `yaml:"host"`
	// Port defaults to 587 (submission, STARTTLS).
	Port        int    `yaml:"port,omitempty"`
	Username    string `yaml:"username,omitempty"`
	PasswordEnv string `yaml:"password_env,omitempty"`
	// StartTLS is required (default true); false only for a server on
	// this machine (a mail catcher).
	StartTLS *bool `yaml:"starttls,omitempty"`
	// CAFile trusts a server certificate no system CA signed.
	CAFile string `yaml:"ca_file,omitempty"`
}

// ChannelURL returns the channel's URL, read now.
func (c NotificationChannel) ChannelURL(name string) (string, error) {
	if c.URLEnv != "" {
		v, err := secretFromEnv("notifications.channels."+name+".url_env", c.URLEnv)
		return v.Reveal(), err
	}
	return c.URL, nil
}

// Secret returns the channel's signing secret, read now (nil: unsigned).
func (c NotificationChannel) Secret(name string) ([]byte, error) {
	if c.SecretEnv == "" {
		return nil, nil
	}
	v, err := secretFromEnv("notifications.channels."+name+".secret_env", c.SecretEnv)
	return []byte(v.Reveal()), err
}

// SubAgent is one agent another may delegate to.
type SubAgent struct {
	// Agent names the agent in agents.
	Agent string `yaml:"agent"`
	// Description tells the model what the sub-agent is for.
	Description string `yaml:"description,omitempty"`
	// Mode is wait (default): the call returns the sub-agent's answer.
	Mode string `yaml:"mode,omitempty"`
	// MaxTurns bounds the sub-agent's model calls for one task (0: none).
	MaxTurns int `yaml:"max_turns,omitempty"`
}

// SpendLimits are budgets per session, per turn and per rolling day (every
// session of the agent, or of the API token, across workers).
type SpendLimits struct {
	PerSession *Budget `yaml:"per_session,omitempty"`
	PerTurn    *Budget `yaml:"per_turn,omitempty"`
	PerDay     *Budget `yaml:"per_day,omitempty"`
}

// Budget bounds model calls, tokens and cost; a zero field is no bound.
type Budget struct {
	ModelCalls   int64 `yaml:"model_calls,omitempty"`
	InputTokens  int64 `yaml:"input_tokens,omitempty"`
	OutputTokens int64 `yaml:"output_tokens,omitempty"`
	// CostUSD needs prices for the models the agent uses.
	CostUSD float64 `yaml:"cost_usd,omitempty"`
}

// Price is a model's price in US dollars per million tokens. Cached input
// tokens count at CachedInput (Input when it is zero).
type Price struct {
	Input       float64 `yaml:"input"`
	CachedInput float64 `yaml:"cached_input,omitempty"`
	Output      float64 `yaml:"output"`
}

// SpendHook is an application's own spend limit: before each model call
// the worker POSTs {"phase": "check", ...} and the hook answers {"allow":
// true} or {"allow": false, "reason": "..."}; after it, {"phase":
// "report", ...} with what the call used. A hook that cannot be reached,
// times out or answers anything else fails the check closed.
type SpendHook struct {
	URL string `yaml:"url"`
	// Timeout bounds each request; default 5s.
	Timeout time.Duration `yaml:"timeout"`
	// Headers are sent with each request, such as an Authorization header
	// from ${VAR}; never logged.
	Headers map[string]Secret `yaml:"headers,omitempty"`
}

func (h *SpendHook) setDefaults() { h.Timeout = 5 * time.Second }

// Compaction is an agent's compaction policy.
type Compaction struct {
	// ContextWindowTokens is the model's context window. Required.
	ContextWindowTokens int64 `yaml:"context_window_tokens"`
	// TriggerRatio of the window starts a compaction (default 0.85).
	TriggerRatio float64 `yaml:"trigger_ratio"`
	// KeepRatio of the window is kept of the newest messages (default 0.3).
	KeepRatio float64 `yaml:"keep_ratio"`
	// ReservedInputTokens adds what the estimate cannot see, such as a
	// framework's system prompt.
	ReservedInputTokens int64 `yaml:"reserved_input_tokens"`
}

func (c *Compaction) setDefaults() {
	c.TriggerRatio = 0.85
	c.KeepRatio = 0.3
}

// ToolLimit holds the timeouts of one tool Step attempt and the attempts of
// CallTool (read and idempotent_write calls; the others get one attempt).
type ToolLimit struct {
	StartToCloseTimeout time.Duration `yaml:"start_to_close_timeout"` // one attempt; default 15m
	// HeartbeatTimeout is how soon a lost worker is noticed; the tool Step
	// heartbeats in the background every third of it (at most every 20s).
	HeartbeatTimeout time.Duration `yaml:"heartbeat_timeout"` // default 1m
	MaximumAttempts  int32         `yaml:"maximum_attempts"`  // CallTool attempts; default 3
}

// ToolPolicy overrides the defaults for one tool name.
type ToolPolicy struct {
	Effect Effect `yaml:"effect"`
	// RequiresApproval overrides the effect's default approval when set.
	RequiresApproval *bool `yaml:"requires_approval,omitempty"`
	// ApprovalText shows people an approval of the tool as the action it
	// approves, filled from the call's arguments ("Refund
	// {amount_cents|usd} on order {order_id}"); see internal/approvaltext.
	// It changes what people see, never what runs.
	ApprovalText string `yaml:"approval_text,omitempty"`
	// DisplayText shows people a call of the tool as one line, filled
	// from its arguments ("Looked up order {order_id}"); same syntax.
	DisplayText string `yaml:"display_text,omitempty"`
}

// ApprovalRequired reports whether a call under p waits for approval:
// RequiresApproval when set, otherwise the effect's default.
func (p ToolPolicy) ApprovalRequired() bool {
	if p.RequiresApproval != nil {
		return *p.RequiresApproval
	}
	return p.Effect.DefaultApproval()
}

// ApprovalRule is one of an agent's approval rules: when the call is of
// Tool ("*" for any) and When (a CEL expression over args, effect, tool,
// settings and token; empty for always) holds, Decision (allow,
// require_approval, deny) decides, with Reason (required for deny: the
// model sees it). A Shadow rule's decision is recorded, not enforced.
type ApprovalRule struct {
	Tool     string `yaml:"tool"`
	When     string `yaml:"when,omitempty"`
	Decision string `yaml:"decision"`
	Reason   string `yaml:"reason,omitempty"`
	Shadow   bool   `yaml:"shadow,omitempty"`
}

// Rules returns the agent's approval rules for package approvalrules.
func (a *Agent) Rules() []approvalrules.Rule {
	out := make([]approvalrules.Rule, len(a.ApprovalRules))
	for i, r := range a.ApprovalRules {
		out[i] = approvalrules.Rule{Tool: r.Tool, When: r.When, Decision: r.Decision, Reason: r.Reason, Shadow: r.Shadow}
	}
	return out
}

// Recovery is a turn's recovery budget (set at least one of the two).
type Recovery struct {
	// MaxAttempts is the most recovery attempts a turn makes: Step
	// attempts (RunModel, CompactContext, CallTool) after each Step's
	// first, counted over the whole turn.
	MaxAttempts int32 `yaml:"max_attempts,omitempty"`
	// NoProgressTimeout bounds how long one of those Steps may go without
	// finishing, its retries and the wait for a worker included. Waiting
	// for a person is no Step and never counts.
	NoProgressTimeout time.Duration `yaml:"no_progress_timeout,omitempty"`
}

// RunModelLimit holds the timeouts and retry budget of the RunModel step.
type RunModelLimit struct {
	StartToCloseTimeout    time.Duration `yaml:"start_to_close_timeout"`    // one attempt; default 15m
	HeartbeatTimeout       time.Duration `yaml:"heartbeat_timeout"`         // default 2m
	MaximumAttempts        int32         `yaml:"maximum_attempts"`          // default 3
	ScheduleToCloseTimeout time.Duration `yaml:"schedule_to_close_timeout"` // all attempts; default 30m
	// FirstChunkTimeout, ChunkGapTimeout and CallTimeout bound what one
	// model call streams (its runner's text, reasoning, events and
	// heartbeats): the first chunk within FirstChunkTimeout, no gap longer
	// than ChunkGapTimeout, the whole call within CallTimeout. A call past
	// one fails its attempt, which is retried. Unset: no bound.
	FirstChunkTimeout time.Duration `yaml:"first_chunk_timeout,omitempty"`
	ChunkGapTimeout   time.Duration `yaml:"chunk_gap_timeout,omitempty"`
	CallTimeout       time.Duration `yaml:"call_timeout,omitempty"`
	// Queue names the model_queues entry whose task queue runs the agent's
	// model calls (the RunModel and CompactContext Steps). A session keeps
	// the queue it started with; keep a queue in the config while sessions
	// that use it run. Empty: the worker's task queue.
	Queue string `yaml:"queue,omitempty"`
}

// Effect is the effect class of a tool. It decides the tool step's retries
// and its default approval.
type Effect string

// The effect classes.
const (
	EffectRead               Effect = "read"
	EffectIdempotentWrite    Effect = "idempotent_write"
	EffectNonIdempotentWrite Effect = "non_idempotent_write"
	EffectUnclassified       Effect = "unclassified"
)

// Valid reports whether e is one of the four effect classes.
func (e Effect) Valid() bool {
	switch e {
	case EffectRead, EffectIdempotentWrite, EffectNonIdempotentWrite, EffectUnclassified:
		return true
	}
	return false
}

// DefaultApproval reports whether a tool of effect e needs approval when its
// policy does not say: writes that may not be repeated and unclassified
// tools do (so does an invalid effect).
func (e Effect) DefaultApproval() bool {
	return e != EffectRead && e != EffectIdempotentWrite
}

// Defaults.
const (
	DefaultAddress                = "localhost:7233"
	DefaultNamespace              = "default"
	DefaultTaskQueue              = "dex-agents"
	DefaultStartToCloseTimeout    = 15 * time.Minute
	DefaultHeartbeatTimeout       = 2 * time.Minute
	DefaultMaximumAttempts        = 3
	DefaultScheduleToCloseTimeout = 30 * time.Minute
	DefaultToolHeartbeatTimeout   = time.Minute
	DefaultShutdownTimeout        = 30 * time.Second
	DefaultEventsCapacityBytes    = 10 * 1024 * 1024
	DefaultEventsMaxTotalBytes    = 256 * 1024 * 1024
	DefaultEventsIdleTTL          = time.Hour
	DefaultMaxStreamsPerToken     = 64
	DefaultMessageCacheBytes      = 256 << 20
	DefaultMessageWindowSize      = 64
	DefaultMessageChunkSize       = 32
	DefaultMessageChunkMaxBytes   = 1 << 20
	DefaultRetainedMessageLimit   = 1000
	// MinMessageChunkMaxBytes and MaxMessageChunkMaxBytes bound
	// message_chunk_max_bytes (the store refuses larger chunks).
	MinMessageChunkMaxBytes = 1 << 10
	MaxMessageChunkMaxBytes = 8 << 20
)

// The decoder calls setDefaults on every struct it creates before it fills
// in the keys that the file sets, so an explicit zero is kept (and then
// rejected by Validate) rather than replaced by the default.

func (c *Config) setDefaults() {
	c.Temporal = Temporal{Address: DefaultAddress, Namespace: DefaultNamespace, TaskQueue: DefaultTaskQueue}
	c.Logging = Logging{Level: "info", Format: "text"}
	c.Events = Events{
		Backend:       "memory",
		CapacityBytes: DefaultEventsCapacityBytes,
		MaxTotalBytes: DefaultEventsMaxTotalBytes,
		IdleTTL:       DefaultEventsIdleTTL,
	}
	c.HTTP = HTTP{MaxStreamsPerToken: DefaultMaxStreamsPerToken}
	c.ShutdownTimeout = DefaultShutdownTimeout
}

func (m *MessageStore) setDefaults() {
	m.Driver = MessageStoreSQLite
	m.CacheBytes = DefaultMessageCacheBytes
}

// DefaultMaxDurableWait bounds a durable_wait: 365 days.
const DefaultMaxDurableWait = 365 * 24 * time.Hour

// MCPResourceToolNames are the resources and prompts tools of
// resource_and_prompt_tools.
var MCPResourceToolNames = []string{"mcp_list_resources_and_prompts", "mcp_read_resource", "mcp_get_prompt"}

// BuiltInToolNames are the built-in tools an agent may enable.
var BuiltInToolNames = []string{"ask_user", "durable_wait", "write_todos"}

func (a *Agent) setDefaults() {
	a.DefaultToolEffect = EffectUnclassified
	a.MaxDurableWait = DefaultMaxDurableWait
	a.MessageWindowSize = DefaultMessageWindowSize
	a.MessageChunkSize = DefaultMessageChunkSize
	a.MessageChunkMaxBytes = DefaultMessageChunkMaxBytes
	a.RetainedMessageLimit = MessageLimit{N: DefaultRetainedMessageLimit}
	a.RunModelLimit = RunModelLimit{
		StartToCloseTimeout:    DefaultStartToCloseTimeout,
		HeartbeatTimeout:       DefaultHeartbeatTimeout,
		MaximumAttempts:        DefaultMaximumAttempts,
		ScheduleToCloseTimeout: DefaultScheduleToCloseTimeout,
	}
	a.ToolLimit = ToolLimit{
		StartToCloseTimeout: DefaultStartToCloseTimeout,
		HeartbeatTimeout:    DefaultToolHeartbeatTimeout,
		MaximumAttempts:     DefaultMaximumAttempts,
	}
}

// Agent returns the agent with the given name.
func (c *Config) Agent(name string) (*Agent, bool) {
	for i := range c.Agents {
		if c.Agents[i].Name == name {
			return &c.Agents[i], true
		}
	}
	return nil, false
}

// AgentByFlowType returns the agent whose workflow type is ft.
func (c *Config) AgentByFlowType(ft string) (*Agent, bool) {
	for i := range c.Agents {
		if c.Agents[i].FlowType == ft {
			return &c.Agents[i], true
		}
	}
	return nil, false
}

// RunnerConfigJSON returns RunnerConfig as a JSON object with sorted keys
// ({} when it is empty), the bytes the runner plugin receives.
func (a *Agent) RunnerConfigJSON() ([]byte, error) {
	if len(a.RunnerConfig) == 0 {
		return []byte("{}"), nil
	}
	// encoding/json writes map keys in sorted order.
	b, err := json.Marshal(a.RunnerConfig)
	if err != nil {
		return nil, fmt.Errorf("config: agent %q: runner_config: %w", a.Name, err)
	}
	return b, nil
}

// ResolveToolPolicy returns the policy for a tool: the agent's explicit
// policy for the name, else frameworkEffect when the runner knows one
// (pass "" when it does not), else DefaultToolEffect.
func (a *Agent) ResolveToolPolicy(tool string, frameworkEffect Effect) ToolPolicy {
	if p, ok := a.ToolPolicies[tool]; ok {
		return p
	}
	if frameworkEffect != "" {
		return ToolPolicy{Effect: frameworkEffect}
	}
	return ToolPolicy{Effect: a.DefaultToolEffect}
}

// UnofferedToolPolicies returns, sorted, the tool_policies keys that are
// not in offered, the tools the agent's runner reported in Configure. Such
// a policy never applies, most likely a typo. With offered empty (a runner
// that does not report its tools) it returns nil: nothing can be checked.
func (a *Agent) UnofferedToolPolicies(offered []string) []string {
	if len(offered) == 0 {
		return nil
	}
	var out []string
	for name := range a.ToolPolicies {
		if !slices.Contains(offered, name) && !a.mcpTool(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// mcpTool reports whether tool is named as a tool of one of the agent's
// MCP servers ("<server>__<tool>"), which the runner does not report: the
// worker lists them when a model call needs them.
func (a *Agent) mcpTool(tool string) bool {
	if a.ResourceAndPromptTools && slices.Contains(MCPResourceToolNames, tool) {
		return true
	}
	for _, srv := range a.MCP {
		if strings.HasPrefix(tool, srv+"__") {
			return true
		}
	}
	return false
}

// Load reads the YAML file at path, expands ${VAR} references from the
// environment, decodes it strictly, applies defaults, resolves relative file
// paths against the file's directory and validates the result. Problems with
// the file's content come back as a *ValidationError that lists them all,
// each with its key path and line.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return load(data, dir, path)
}

// LoadBytes is Load for a document in memory. Relative paths are joined
// with baseDir; when baseDir is empty they are kept relative to the working
// directory.
func LoadBytes(data []byte, baseDir string) (*Config, error) {
	return load(data, baseDir, "")
}

func load(data []byte, baseDir, file string) (*Config, error) {
	root, ferr := parseDocument(data)
	if ferr != nil {
		return nil, &ValidationError{File: file, Errors: []*FieldError{ferr}}
	}
	d := newDecoder(os.LookupEnv)
	cfg := new(Config)
	cfg.setDefaults()
	d.decode("", root, reflect.ValueOf(cfg).Elem())
	cfg.fromEnv = d.fromEnv
	cfg.resolve(baseDir)
	if baseDir != "" {
		if abs, err := filepath.Abs(baseDir); err == nil {
			cfg.dir = abs
		}
	}

	// Validate even when decoding failed, so the user sees every problem at
	// once, but drop what Validate says about a key that failed to decode
	// (or one below it): that is the same problem again.
	errs := d.errs
	if err := cfg.Validate(); err != nil {
		for _, fe := range err.(*ValidationError).Errors {
			if !d.failedAt(fe.Path) {
				fe.Line = d.line(fe.Path)
				errs = append(errs, fe)
			}
		}
	}
	if len(errs) == 0 {
		return cfg, nil
	}
	// Report in file order, problems without a line last.
	slices.SortStableFunc(errs, func(a, b *FieldError) int {
		return cmp.Compare(uint(a.Line-1), uint(b.Line-1))
	})
	if len(errs) > maxErrors {
		errs = append(errs[:maxErrors], &FieldError{Message: fmt.Sprintf("too many problems; showing the first %d", maxErrors)})
	}
	return nil, &ValidationError{File: file, Errors: errs}
}

// parseDocument parses exactly one YAML document whose top level is a
// mapping; an empty document is an empty mapping.
func parseDocument(data []byte) (*yaml.Node, *FieldError) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(err, data)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &FieldError{Line: extra.Line, Message: "only one YAML document is allowed"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(err, data)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 1}, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &FieldError{Line: root.Line, Message: "the top level must be a mapping, got " + describe(root, "")}
	}
	return root, nil
}

// yamlError turns a YAML syntax error in data into a FieldError, moving
// its line number into Line. The parser names the line where the block
// that holds the problem starts (a mis-indented key at line 40 of the
// agents list is "line 2"), so the line is the first one at which data
// stops parsing: the one after the longest prefix of lines that parses.
func yamlError(err error, data []byte) *FieldError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if n, _ := fmt.Sscanf(msg, "line %d:", &line); n == 1 {
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	}
	if at := firstBadLine(data); at > line {
		if at > line+1 && line > 0 {
			hint := ""
			if strings.Contains(msg, "indicator") || strings.Contains(msg, "expected key") || strings.Contains(msg, "mapping values") {
				hint = "; check this line's indentation"
			}
			msg = fmt.Sprintf("%s (in the block that starts at line %d%s)", msg, line, hint)
		}
		line = at
	}
	return &FieldError{Line: line, Message: "invalid YAML: " + msg}
}

// firstBadLine is the 1-based line after the longest prefix of data's
// lines that parses as YAML, or 0 when every prefix does. A prefix that
// ends inside a multi-line flow collection fails, but a later one parses
// again, so the longest parsing prefix is what counts.
func firstBadLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(data) > 256<<10 || len(lines) > 4000 {
		return 0 // a config this large is not worth a parse per line
	}
	lastOK := 0
	for k := 1; k <= len(lines); k++ {
		var n yaml.Node
		dec := yaml.NewDecoder(bytes.NewReader(bytes.Join(lines[:k], nil)))
		if err := dec.Decode(&n); err == nil || errors.Is(err, io.EOF) {
			lastOK = k
		}
	}
	if lastOK >= len(lines) {
		return 0
	}
	return lastOK + 1
}

// Dir is the config file's directory (absolute), where runner plugins
// start, so that relative paths in their args and runner_config resolve
// against it as command does; "" for a config loaded without one
// (LoadBytes with no baseDir), whose plugins start in the worker's
// working directory.
func (c *Config) Dir() string { return c.dir }

// resolve makes file paths absolute against baseDir and normalizes the
// checksums to lowercase.
func (c *Config) resolve(baseDir string) {
	join := func(p string) string {
		if p == "" || baseDir == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(baseDir, p)
	}
	for name, p := range c.Plugins {
		if p.Venv != "" {
			p.Venv = join(p.Venv)
		}
		if strings.ContainsRune(p.Command, '/') || strings.ContainsRune(p.Command, filepath.Separator) {
			p.Command = join(p.Command)
		} else if p.Venv != "" && p.Command != "" {
			// A bare name runs from the virtualenv: python, python3.
			p.Command = filepath.Join(p.Venv, "bin", p.Command)
		}
		p.SHA256 = strings.ToLower(p.SHA256)
		c.Plugins[name] = p
	}
	if t := c.Temporal.TLS; t != nil {
		t.CertFile, t.KeyFile, t.CAFile = join(t.CertFile), join(t.KeyFile), join(t.CAFile)
	}
	if t := c.HTTP.TLS; t != nil {
		t.CertFile, t.KeyFile = join(t.CertFile), join(t.KeyFile)
	}
	if m := c.MessageStore; m != nil {
		m.Path = join(m.Path)
	}
	c.Telemetry.Traces.File = join(c.Telemetry.Traces.File)
	for name, m := range c.MCPServers {
		if strings.ContainsRune(m.Command, '/') || strings.ContainsRune(m.Command, filepath.Separator) {
			m.Command = join(m.Command)
		}
		m.Dir = join(m.Dir)
		c.MCPServers[name] = m
	}
}

// MessageStoreOrNil is c.MessageStore, nil for a nil config.
func (c *Config) MessageStoreOrNil() *MessageStore {
	if c == nil {
		return nil
	}
	return c.MessageStore
}
