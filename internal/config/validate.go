package config

import (
	"github.com/dex-agents/dex-agent-worker/internal/approvaltext"
	"net/mail"

	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/approvalrules"
)

var (
	agentNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	flowTypeRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	sha256RE    = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	// An MCP server's name prefixes its tools' names, which a model
	// provider takes as letters, digits, "_" and "-".
	mcpServerNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	headerNameRE    = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

const effectList = "read, idempotent_write, non_idempotent_write or unclassified"

// problems collects FieldErrors.
type problems []*FieldError

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, &FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (p *problems) required(path, value string) bool {
	if value == "" {
		p.add(path, "is required")
		return false
	}
	return true
}

// Validate checks the whole configuration and returns a *ValidationError
// listing every problem, or nil. It does not touch the file system: files
// named by the config are opened by the code that uses them.
func (c *Config) Validate() error {
	var p problems
	c.Temporal.validate(&p, "temporal")
	c.Logging.validate(&p, "logging")

	names := make([]string, 0, len(c.Plugins))
	for name := range c.Plugins {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		path := keyPath("plugins", name)
		if name == "" {
			p.add(path, "plugin name must not be empty")
		}
		c.Plugins[name].validate(&p, path)
	}

	servers := make([]string, 0, len(c.MCPServers))
	for name := range c.MCPServers {
		servers = append(servers, name)
	}
	slices.Sort(servers)
	for _, name := range servers {
		path := keyPath("mcp_servers", name)
		if !mcpServerNameRE.MatchString(name) {
			p.add(path, `invalid MCP server name %q: want letters, digits, "_" and "-" (it prefixes its tools' names)`, name)
		}
		c.MCPServers[name].validate(&p, path)
	}

	if l := c.ApprovalLinks; l != nil {
		if c.ApprovalDigest == nil {
			p.add("approval_links", "needs approval_digest: a link is bound to the digest of the call it approves")
		}
		validateKeyEnvs(&p, "approval_links", "the links' signing key", 32, l.KeyEnv, l.PreviousKeyEnvs)
		if u, err := url.Parse(l.PublicURL); l.PublicURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			p.add("approval_links.public_url", "want the absolute http or https URL people reach the HTTP API at, such as https://dex.example.com, got %q", l.PublicURL)
		}
		if l.TTL < 0 || l.TTL > 720*time.Hour {
			p.add("approval_links.ttl", "must be from 1s to 720h (30 days), got %s", formatDuration(l.TTL))
		}
	}
	if d := c.ApprovalDigest; d != nil {
		validateKeyEnvs(&p, "approval_digest", "the approval digest key", 16, d.KeyEnv, d.PreviousKeyEnvs)
	}

	queues := make([]string, 0, len(c.ModelQueues))
	for name := range c.ModelQueues {
		queues = append(queues, name)
	}
	slices.Sort(queues)
	for _, name := range queues {
		qp, q := keyPath("model_queues", name), c.ModelQueues[name]
		if !mcpServerNameRE.MatchString(name) {
			p.add(qp, `invalid model queue name %q: want letters, digits, "_" and "-" (it names a task queue)`, name)
		}
		if q.ActivitiesPerSecond < 0 {
			p.add(qp+".activities_per_second", "must be > 0 (leave it out for no limit), got %v", q.ActivitiesPerSecond)
		}
		if q.MaxConcurrentPerWorker < 0 {
			p.add(qp+".max_concurrent_per_worker", "must be > 0 (leave it out for the default), got %d", q.MaxConcurrentPerWorker)
		}
	}

	if len(c.Agents) == 0 {
		p.add("agents", "at least one agent is required")
	}
	byName := make(map[string]int)
	byFlowType := make(map[string]int)
	for i := range c.Agents {
		a := &c.Agents[i]
		path := indexPath("agents", i)
		if p.required(path+".name", a.Name) {
			if !agentNameRE.MatchString(a.Name) {
				p.add(path+".name", `invalid name %q: want lowercase letters, digits, "_" and "-", starting with a letter or digit`, a.Name)
			} else if j, dup := byName[a.Name]; dup {
				p.add(path+".name", "duplicate agent name %q (also agents[%d])", a.Name, j)
			} else {
				byName[a.Name] = i
			}
		}
		if p.required(path+".flow_type", a.FlowType) {
			if !flowTypeRE.MatchString(a.FlowType) {
				p.add(path+".flow_type", `invalid flow type %q: want a letter, then letters, digits or "_"`, a.FlowType)
			} else if j, dup := byFlowType[a.FlowType]; dup {
				p.add(path+".flow_type", "duplicate flow type %q (also agents[%d])", a.FlowType, j)
			} else {
				byFlowType[a.FlowType] = i
			}
		}
		if p.required(path+".runner", a.Runner) {
			if _, ok := c.Plugins[a.Runner]; !ok {
				p.add(path+".runner", "unknown plugin %q%s", a.Runner, pluginHint(a.Runner, names))
			}
		}
		a.validate(&p, path)
		if q := a.RunModelLimit.Queue; q != "" {
			if _, ok := c.ModelQueues[q]; !ok {
				p.add(path+".run_model_limit.queue", "unknown model queue %q%s", q, listHint("model_queues", q, queues))
			}
		}
		if a.ResourceAndPromptTools && len(a.MCP) == 0 {
			p.add(path+".resource_and_prompt_tools", "needs MCP servers: name them in mcp")
		}
		seen := make(map[string]int)
		for j, name := range a.MCP {
			mp := indexPath(path+".mcp", j)
			if _, ok := c.MCPServers[name]; !ok {
				p.add(mp, "unknown MCP server %q%s", name, listHint("mcp_servers", name, servers))
			} else if k, dup := seen[name]; dup {
				p.add(mp, "duplicate MCP server %q (also mcp[%d])", name, k)
			} else {
				seen[name] = j
			}
		}
	}
	for i := range c.Agents {
		c.Agents[i].validateSubAgents(&p, indexPath("agents", i), byName)
		c.Agents[i].validateNotify(&p, indexPath("agents", i), c.Notifications)
	}
	if n := c.Notifications; n != nil {
		for _, name := range sortedKeys(n.Channels) {
			n.Channels[name].validate(&p, keyPath("notifications.channels", name))
		}
	}
	if c.Worker.MaxCachedWorkflows < 0 {
		p.add("worker.max_cached_workflows", "must be >= 0 (0: the SDK's default, 10,000), got %d", c.Worker.MaxCachedWorkflows)
	}
	if c.ShutdownTimeout <= 0 {
		p.add("shutdown_timeout", "must be > 0, got %s", formatDuration(c.ShutdownTimeout))
	}
	c.Events.validate(&p, "events")
	if l := c.Telemetry.Metrics.Prometheus; l != "" {
		if _, _, err := net.SplitHostPort(l); err != nil {
			p.add("telemetry.metrics.prometheus", "invalid address %q: want host:port, such as :9464 or 127.0.0.1:9464", l)
		}
	}
	c.Telemetry.Traces.validate(&p, "telemetry.traces")
	c.HTTP.validate(&p, "http", byName)
	if c.MessageStore != nil {
		c.MessageStore.validate(&p, "message_store")
	}
	c.validateSpend(&p)
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Errors: p}
}

func (e *Events) validate(p *problems, path string) {
	switch e.Backend {
	case EventsMemory, "":
		for _, k := range []struct {
			key string
			set bool
		}{{"url_env", e.URLEnv != ""}, {"token_key_env", e.TokenKeyEnv != ""}, {"max_bytes_per_session", e.MaxBytesPerSession != 0},
			{"ttl", e.TTL != 0}, {"key_prefix", e.KeyPrefix != ""}} {
			if k.set {
				p.add(path+"."+k.key, `is for backend "redis" (backend is "memory"; its limits are capacity_bytes, max_total_bytes and idle_ttl)`)
			}
		}
	case EventsRedis:
		for _, k := range []struct{ key, name, what string }{
			{"url_env", e.URLEnv, "the Redis URL"}, {"token_key_env", e.TokenKeyEnv, "the resume token key"},
		} {
			switch {
			case k.name == "":
				p.add(path+"."+k.key, "is required: the environment variable that holds %s", k.what)
			case !isEnvName(k.name):
				p.add(path+"."+k.key, "invalid environment variable name %q: want a letter or _, then letters, digits or _", k.name)
			case os.Getenv(k.name) == "":
				p.add(path+"."+k.key, "environment variable %s is not set", k.name)
			}
		}
		if e.TokenKeyEnv != "" && os.Getenv(e.TokenKeyEnv) != "" {
			if n := len(os.Getenv(e.TokenKeyEnv)); n < 16 {
				p.add(path+".token_key_env", "the key in %s is %d bytes; it must be at least 16 (try: openssl rand -hex 32)", e.TokenKeyEnv, n)
			}
		}
		if e.URLEnv != "" && os.Getenv(e.URLEnv) != "" {
			if err := checkRedisURL(os.Getenv(e.URLEnv)); err != nil {
				p.add(path+".url_env", "%s: %v", e.URLEnv, err)
			}
		}
		if e.MaxBytesPerSession != 0 && e.MaxBytesPerSession < 64*1024 {
			p.add(path+".max_bytes_per_session", "must be at least 65536, got %d", e.MaxBytesPerSession)
		}
		if e.TTL != 0 && e.TTL < time.Second {
			p.add(path+".ttl", "must be at least 1s, got %s", formatDuration(e.TTL))
		}
		if strings.ContainsAny(e.KeyPrefix, "{}") {
			p.add(path+".key_prefix", "must not contain { or } (the session ID is the keys' hash tag)")
		}
	default:
		p.add(path+".backend", `unknown backend %q (want "memory" or "redis")`, e.Backend)
	}
	if e.CapacityBytes != 0 && e.CapacityBytes < 64*1024 {
		p.add(path+".capacity_bytes", "must be at least 65536, got %d", e.CapacityBytes)
	}
	// Zero keeps the default (for configs built in code).
	switch capacity := cmp.Or(e.CapacityBytes, DefaultEventsCapacityBytes); {
	case e.MaxTotalBytes < 0:
		p.add(path+".max_total_bytes", "must be > 0, got %d", e.MaxTotalBytes)
	case e.MaxTotalBytes != 0 && e.MaxTotalBytes < capacity:
		p.add(path+".max_total_bytes", "must be at least capacity_bytes (%d), got %d", capacity, e.MaxTotalBytes)
	}
	if e.IdleTTL != 0 && e.IdleTTL < time.Minute {
		p.add(path+".idle_ttl", "must be at least 1m (idle sessions are swept once a minute), got %s", formatDuration(e.IdleTTL))
	}
}

// checkRedisURL checks the shape of a Redis URL without showing it (it
// may hold a password).
func checkRedisURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL (want redis://host:port/db or rediss://...)")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix" {
		return fmt.Errorf("scheme %q: want redis, rediss or unix", u.Scheme)
	}
	if u.Scheme != "unix" && u.Host == "" {
		return errors.New("no host (want redis://host:port/db)")
	}
	return nil
}

func (m *MessageStore) validate(p *problems, path string) {
	switch m.Driver {
	case MessageStoreSQLite:
		if p.required(path+".path", m.Path) && strings.Contains(m.Path, "?") {
			p.add(path+".path", "%q must not contain '?'", m.Path)
		}
		if m.DSNEnv != "" {
			p.add(path+".dsn_env", `is for driver "postgres" (driver is "sqlite")`)
		}
	case MessageStorePostgres:
		if m.Path != "" {
			p.add(path+".path", `is for driver "sqlite" (driver is "postgres")`)
		}
		switch {
		case m.DSNEnv == "":
			p.add(path+".dsn_env", "is required: the environment variable that holds the DSN")
		case !isEnvName(m.DSNEnv):
			p.add(path+".dsn_env", "invalid environment variable name %q: want a letter or _, then letters, digits or _", m.DSNEnv)
		case os.Getenv(m.DSNEnv) == "":
			p.add(path+".dsn_env", "environment variable %s is not set", m.DSNEnv)
		}
	default:
		p.add(path+".driver", `unknown driver %q (want "sqlite" or "postgres")`, m.Driver)
	}
	if m.CacheBytes < 0 {
		p.add(path+".cache_bytes", "must be >= 0 (0 turns the cache off), got %d", m.CacheBytes)
	}
}

func (h *HTTP) validate(p *problems, path string, agents map[string]int) {
	if h.Listen != "" {
		if _, _, err := net.SplitHostPort(h.Listen); err != nil {
			p.add(path+".listen", "invalid address %q: want host:port, such as 127.0.0.1:8080", h.Listen)
		}
		if len(h.Auth.Tokens) == 0 {
			p.add(path+".auth.tokens", "at least one token is required when http.listen is set")
		}
	}
	if t := h.TLS; t != nil {
		tp := path + ".tls"
		switch {
		case t.CertFile == "" && t.KeyFile == "":
			p.add(tp, "set cert_file and key_file, or leave tls out to serve plain HTTP")
		case t.CertFile != "" && t.KeyFile == "":
			p.add(tp+".key_file", "is required when cert_file is set")
		case t.KeyFile != "" && t.CertFile == "":
			p.add(tp+".cert_file", "is required when key_file is set")
		}
	}
	if h.MaxStreamsPerToken < 0 {
		p.add(path+".max_streams_per_token", "must be > 0, got %d", h.MaxStreamsPerToken)
	}
	// One token, one scope: a value listed twice would reach the union of
	// both scopes, whichever entry the server matched.
	valueAt := make(map[string]string)
	for i := range h.Auth.Tokens {
		t := &h.Auth.Tokens[i]
		tp := indexPath(path+".auth.tokens", i)
		valuePath := tp + ".token"
		switch {
		case t.Token != "" && t.TokenEnv != "":
			p.add(tp, "set token or token_env, not both")
		case t.Token == "" && t.TokenEnv == "":
			p.add(tp, "set token (such as ${DEX_API_TOKEN}) or token_env")
		case t.TokenEnv != "":
			valuePath = tp + ".token_env"
			if v := os.Getenv(t.TokenEnv); v == "" {
				p.add(tp+".token_env", "environment variable %s is not set", t.TokenEnv)
			} else {
				t.Token = Secret(v)
			}
		}
		if t.Token != "" && len(t.Token.Reveal()) < 16 {
			p.add(tp+".token", "is too short: use at least 16 characters")
		}
		if v := t.Token.Reveal(); v != "" {
			if first, dup := valueAt[v]; dup {
				p.add(valuePath, "has the same value as %s: one token, one scope (give each scope its own token)", first)
			} else {
				valueAt[v] = valuePath
			}
		}
		for j, a := range t.Agents {
			if _, ok := agents[a]; !ok {
				p.add(indexPath(tp+".agents", j), "unknown agent %q", a)
			}
		}
		if sp := t.SessionPrefix; len(sp) > 128 {
			p.add(tp+".session_prefix", "is longer than 128 characters")
		} else if strings.ContainsFunc(sp, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' }) {
			p.add(tp+".session_prefix", "%q has a space, a control character or '/', which session IDs cannot have", sp)
		}
	}
}

func (t *Temporal) validate(p *problems, path string) {
	if p.required(path+".address", t.Address) && !strings.Contains(t.Address, "://") {
		if _, _, err := net.SplitHostPort(t.Address); err != nil {
			p.add(path+".address", "invalid address %q: want host:port, such as localhost:7233", t.Address)
		}
	}
	p.required(path+".namespace", t.Namespace)
	p.required(path+".task_queue", t.TaskQueue)
	if d := t.Deployment; d != nil {
		dp := path + ".deployment"
		if p.required(dp+".name", d.Name) && !deploymentNameRE.MatchString(d.Name) {
			p.add(dp+".name", "invalid deployment name %q: want letters, digits, \"_\" and \"-\" (a \".\" would join it to the build ID ambiguously)", d.Name)
		}
		if p.required(dp+".build_id", d.BuildID) && (len(d.BuildID) > 255 || strings.ContainsAny(d.BuildID, " \t\r\n")) {
			p.add(dp+".build_id", "invalid build ID %q: want at most 255 characters and no spaces", d.BuildID)
		}
	}
	if t.TLS != nil {
		tp := path + ".tls"
		switch {
		case t.TLS.CertFile != "" && t.TLS.KeyFile == "":
			p.add(tp+".key_file", "is required when cert_file is set")
		case t.TLS.KeyFile != "" && t.TLS.CertFile == "":
			p.add(tp+".cert_file", "is required when key_file is set")
		}
	}
}

var deploymentNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (l *Logging) validate(p *problems, path string) {
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		p.add(path+".level", "unknown level %q (want debug, info, warn or error)", l.Level)
	}
	switch l.Format {
	case "text", "json":
	default:
		p.add(path+".format", "unknown format %q (want text or json)", l.Format)
	}
}

func (pl Plugin) validate(p *problems, path string) {
	p.required(path+".command", pl.Command)
	if pl.SHA256 != "" && !sha256RE.MatchString(pl.SHA256) {
		p.add(path+".sha256", "want 64 hexadecimal digits (a SHA-256 checksum), got %d characters", len(pl.SHA256))
	}
	validateEnvNames(p, path+".env", pl.Env)
}

// validateEnvNames checks a list of environment variable names.
func validateEnvNames(p *problems, path string, names []string) {
	seen := make(map[string]int)
	for i, name := range names {
		ep := indexPath(path, i)
		if !isEnvName(name) {
			p.add(ep, "invalid environment variable name %q: want a letter or _, then letters, digits or _", name)
		} else if j, dup := seen[name]; dup {
			p.add(ep, "duplicate environment variable %s (also env[%d])", name, j)
		} else {
			seen[name] = i
		}
	}
}

func (m MCPServer) validate(p *problems, path string) {
	switch {
	case m.Command == "" && m.URL == "":
		p.add(path, "set command (a stdio server) or url (a Streamable HTTP server)")
	case m.Command != "" && m.URL != "":
		p.add(path, "set command or url, not both")
	case m.URL != "":
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add(path+".url", "want an http or https URL with a host")
		}
		if len(m.Env) > 0 {
			p.add(path+".env", "is for stdio servers (command); send an HTTP server's secrets in headers")
		}
		if len(m.Args) > 0 {
			p.add(path+".args", "is for stdio servers (command)")
		}
		if m.Dir != "" {
			p.add(path+".dir", "is for stdio servers (command)")
		}
	default:
		if len(m.Headers) > 0 {
			p.add(path+".headers", "is for Streamable HTTP servers (url); pass a stdio server's secrets in env")
		}
	}
	validateEnvNames(p, path+".env", m.Env)
	for _, name := range sortedKeys(m.Headers) {
		if !headerNameRE.MatchString(name) {
			p.add(keyPath(path+".headers", name), "invalid HTTP header name %q", name)
		}
	}
	if m.ConnectionTimeout <= 0 {
		p.add(path+".connection_timeout", "must be > 0, got %s", formatDuration(m.ConnectionTimeout))
	}
	if m.RequestTimeout <= 0 {
		p.add(path+".request_timeout", "must be > 0, got %s", formatDuration(m.RequestTimeout))
	}
	if m.TaskWaitTimeout <= 0 {
		p.add(path+".task_wait_timeout", "must be > 0, got %s", formatDuration(m.TaskWaitTimeout))
	}
	if m.ConnectionAttempts < 1 {
		p.add(path+".connection_attempts", "must be at least 1, got %d", m.ConnectionAttempts)
	}
}

// listHint lists the defined names of section for a name not among them,
// suggesting the closest.
func listHint(section, name string, names []string) string {
	if len(names) == 0 {
		return " (no " + section + " are defined)"
	}
	if best, ok := closest(name, names); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return " (" + section + ": " + strings.Join(quoted, ", ") + ")"
}

func (a *Agent) validate(p *problems, path string) {
	if !a.DefaultToolEffect.Valid() {
		p.add(path+".default_tool_effect", "unknown effect %q (want %s)", a.DefaultToolEffect, effectList)
	}
	tools := make([]string, 0, len(a.ToolPolicies))
	for tool := range a.ToolPolicies {
		tools = append(tools, tool)
	}
	slices.Sort(tools)
	for _, tool := range tools {
		tp := keyPath(path+".tool_policies", tool)
		if strings.TrimSpace(tool) == "" {
			p.add(tp, "tool name must not be empty")
		}
		switch e := a.ToolPolicies[tool].Effect; {
		case e == "":
			p.add(tp+".effect", "is required (want %s)", effectList)
		case !e.Valid():
			p.add(tp+".effect", "unknown effect %q (want %s)", e, effectList)
		}
		if text := a.ToolPolicies[tool].ApprovalText; text != "" {
			if _, err := approvaltext.Parse(text); err != nil {
				p.add(tp+".approval_text", "%v", err)
			}
		}
		if text := a.ToolPolicies[tool].DisplayText; text != "" {
			if _, err := approvaltext.Parse(text); err != nil {
				p.add(tp+".display_text", "%v", err)
			}
		}
	}
	if a.InterruptDeadline < 0 {
		p.add(path+".interrupt_deadline", "must be > 0 (leave it out for no deadline), got %s", formatDuration(a.InterruptDeadline))
	}
	switch {
	case a.InterruptExpiringLead < 0:
		p.add(path+".interrupt_expiring_lead", "must be > 0 (leave it out for no warning), got %s", formatDuration(a.InterruptExpiringLead))
	case a.InterruptExpiringLead > 0 && a.InterruptDeadline <= 0:
		p.add(path+".interrupt_expiring_lead", "needs interrupt_deadline: without a deadline nothing expires")
	case a.InterruptExpiringLead > 0 && a.InterruptExpiringLead >= a.InterruptDeadline:
		p.add(path+".interrupt_expiring_lead", "%s must be less than interrupt_deadline %s", formatDuration(a.InterruptExpiringLead), formatDuration(a.InterruptDeadline))
	}
	switch {
	case a.MaxInterruptDeadline < 0:
		p.add(path+".max_interrupt_deadline", "must be > 0 (leave it out to refuse extensions), got %s", formatDuration(a.MaxInterruptDeadline))
	case a.MaxInterruptDeadline > 0 && a.InterruptDeadline <= 0:
		p.add(path+".max_interrupt_deadline", "needs interrupt_deadline: without a deadline there is nothing to extend")
	case a.MaxInterruptDeadline > 0 && a.MaxInterruptDeadline < a.InterruptDeadline:
		p.add(path+".max_interrupt_deadline", "%s must be at least interrupt_deadline %s", formatDuration(a.MaxInterruptDeadline), formatDuration(a.InterruptDeadline))
	}
	if _, errs := approvalrules.Compile(a.Rules()); errs != nil {
		for _, e := range errs {
			p.add(fmt.Sprintf("%s.approval_rules[%d].%s", path, e.Index, e.Field), "%v", e.Err)
		}
	}
	a.RunModelLimit.validate(p, path+".run_model_limit")
	a.ToolLimit.validate(p, path+".tool_limit")
	// A turn that needs more retries than this is stuck; the bound also
	// keeps the attempts a Step is given far from overflowing.
	const maxRecoveryAttempts = 10_000
	if r := a.Recovery; r != nil {
		switch {
		case r.MaxAttempts < 0:
			p.add(path+".recovery.max_attempts", "must be >= 0, got %d", r.MaxAttempts)
		case r.MaxAttempts > maxRecoveryAttempts:
			p.add(path+".recovery.max_attempts", "must be at most %d, got %d", maxRecoveryAttempts, r.MaxAttempts)
		case r.NoProgressTimeout < 0:
			p.add(path+".recovery.no_progress_timeout", "must be > 0, got %s", formatDuration(r.NoProgressTimeout))
		case r.NoProgressTimeout > 0 && r.NoProgressTimeout < time.Second:
			p.add(path+".recovery.no_progress_timeout", "must be at least 1s, got %s", formatDuration(r.NoProgressTimeout))
		case r.MaxAttempts == 0 && r.NoProgressTimeout == 0:
			p.add(path+".recovery", "sets neither max_attempts nor no_progress_timeout (leave it out for no recovery budget)")
		}
	}
	if a.MessageWindowSize < 1 {
		p.add(path+".message_window_size", "must be >= 1, got %d", a.MessageWindowSize)
	}
	if a.MessageChunkSize < 1 {
		p.add(path+".message_chunk_size", "must be >= 1, got %d", a.MessageChunkSize)
	}
	if b := a.MessageChunkMaxBytes; b < MinMessageChunkMaxBytes || b > MaxMessageChunkMaxBytes {
		p.add(path+".message_chunk_max_bytes", "must be from %d (1 KiB) to %d (8 MiB), got %d", MinMessageChunkMaxBytes, MaxMessageChunkMaxBytes, b)
	}
	if l := a.RetainedMessageLimit; !l.Unlimited && l.N < 1 {
		p.add(path+".retained_message_limit", "must be >= 1, or null to keep every message, got %d", l.N)
	}
	for i, name := range a.BuiltInTools {
		ip := indexPath(path+".built_in_tools", i)
		switch {
		case !slices.Contains(BuiltInToolNames, name):
			p.add(ip, "unknown built-in tool %q (want %s)", name, strings.Join(BuiltInToolNames, " or "))
		case slices.Contains(a.BuiltInTools[:i], name):
			p.add(ip, "%s is listed twice", name)
		}
		if _, ok := a.ToolPolicies[name]; ok && slices.Contains(BuiltInToolNames, name) && !slices.Contains(a.BuiltInTools[:i], name) {
			p.add(keyPath(path+".tool_policies", name), "%s is an enabled built-in tool: the session runs it (read, no approval), so it takes no policy", name)
		}
	}
	if a.PlanModeEnabled && !slices.Contains(a.BuiltInTools, "write_todos") {
		p.add(path+".plan_mode_enabled", "plan mode needs the write_todos built-in: add it to built_in_tools")
	}
	if slices.Contains(a.BuiltInTools, "durable_wait") && (a.MaxDurableWait < time.Second || a.MaxDurableWait > 10*DefaultMaxDurableWait) {
		p.add(path+".max_durable_wait", "must be from 1s to 87600h (10 years), got %s", formatDuration(a.MaxDurableWait))
	}
	if c := a.Compaction; c != nil {
		cp := path + ".compaction"
		if c.ContextWindowTokens < 1000 {
			p.add(cp+".context_window_tokens", "must be >= 1000 (the model's context window in tokens), got %d", c.ContextWindowTokens)
		}
		if c.TriggerRatio <= 0 || c.TriggerRatio > 1 {
			p.add(cp+".trigger_ratio", "must be > 0 and <= 1, got %g", c.TriggerRatio)
		}
		if c.KeepRatio <= 0 || c.KeepRatio >= c.TriggerRatio {
			p.add(cp+".keep_ratio", "must be > 0 and below trigger_ratio (%g), got %g", c.TriggerRatio, c.KeepRatio)
		}
		if c.ReservedInputTokens < 0 || c.ReservedInputTokens >= c.ContextWindowTokens {
			p.add(cp+".reserved_input_tokens", "must be >= 0 and below context_window_tokens, got %d", c.ReservedInputTokens)
		}
	}
}

func (l *ToolLimit) validate(p *problems, path string) {
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"start_to_close_timeout", l.StartToCloseTimeout}, {"heartbeat_timeout", l.HeartbeatTimeout}} {
		if d.v <= 0 {
			p.add(path+"."+d.key, "must be > 0, got %s", formatDuration(d.v))
		}
	}
	if l.MaximumAttempts < 1 {
		p.add(path+".maximum_attempts", "must be >= 1, got %d", l.MaximumAttempts)
	}
	checkHeartbeat(p, path, l.HeartbeatTimeout, l.StartToCloseTimeout)
}

// MinHeartbeatTimeout is the shortest heartbeat timeout a Step can meet: it
// heartbeats every third of the timeout, and the engine sends at most two
// heartbeats a second.
const MinHeartbeatTimeout = 2 * time.Second

func checkHeartbeat(p *problems, path string, heartbeat, startToClose time.Duration) {
	switch {
	case heartbeat > 0 && heartbeat < MinHeartbeatTimeout:
		p.add(path+".heartbeat_timeout", "must be at least %s: a Step heartbeats every third of its heartbeat timeout, and the engine sends at most two heartbeats a second; got %s",
			formatDuration(MinHeartbeatTimeout), formatDuration(heartbeat))
	case heartbeat > 0 && startToClose > 0 && heartbeat > startToClose:
		p.add(path+".heartbeat_timeout", "%s is longer than start_to_close_timeout (%s), so it could never fire", formatDuration(heartbeat), formatDuration(startToClose))
	}
}

func (l *RunModelLimit) validate(p *problems, path string) {
	positive := func(key string, d time.Duration) bool {
		if d <= 0 {
			p.add(path+"."+key, "must be > 0, got %s", formatDuration(d))
			return false
		}
		return true
	}
	startOK := positive("start_to_close_timeout", l.StartToCloseTimeout)
	positive("heartbeat_timeout", l.HeartbeatTimeout)
	if l.MaximumAttempts < 1 {
		p.add(path+".maximum_attempts", "must be >= 1, got %d", l.MaximumAttempts)
	}
	checkHeartbeat(p, path, l.HeartbeatTimeout, l.StartToCloseTimeout)
	if positive("schedule_to_close_timeout", l.ScheduleToCloseTimeout) && startOK && l.ScheduleToCloseTimeout < l.StartToCloseTimeout {
		p.add(path+".schedule_to_close_timeout", "%s must be >= start_to_close_timeout (%s)",
			formatDuration(l.ScheduleToCloseTimeout), formatDuration(l.StartToCloseTimeout))
	}
	// The model call's own bounds: off when unset, else at least
	// MinChunkTimeout (the plugins heartbeat twice a second at most), and
	// inside the attempt's start_to_close_timeout.
	for _, b := range []struct {
		key string
		d   time.Duration
	}{{"first_chunk_timeout", l.FirstChunkTimeout}, {"chunk_gap_timeout", l.ChunkGapTimeout}, {"call_timeout", l.CallTimeout}} {
		switch {
		case b.d < 0 || (b.d > 0 && b.d < MinChunkTimeout):
			p.add(path+"."+b.key, "must be at least %s (or unset for no bound), got %s", formatDuration(MinChunkTimeout), formatDuration(b.d))
		case b.d > 0 && startOK && b.d > l.StartToCloseTimeout:
			p.add(path+"."+b.key, "%s is longer than start_to_close_timeout (%s), so it could never fire", formatDuration(b.d), formatDuration(l.StartToCloseTimeout))
		case b.key != "call_timeout" && b.d > 0 && l.CallTimeout > 0 && b.d > l.CallTimeout:
			p.add(path+"."+b.key, "%s is longer than call_timeout (%s), so it could never fire", formatDuration(b.d), formatDuration(l.CallTimeout))
		}
	}
}

// MinChunkTimeout is the smallest first_chunk_timeout, chunk_gap_timeout
// and call_timeout.
const MinChunkTimeout = time.Second

// pluginHint suggests the plugin a mistyped runner meant, or lists them.
func pluginHint(runner string, names []string) string {
	if len(names) == 0 {
		return " (no plugins are defined)"
	}
	if best, ok := closest(runner, names); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return " (plugins: " + strings.Join(quoted, ", ") + ")"
}

// validateSpend checks the prices, the agents' and the tokens' spend
// limits and the spend hooks.
func (c *Config) validateSpend(p *problems) {
	models := make([]string, 0, len(c.Prices))
	for m := range c.Prices {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		pr, path := c.Prices[m], keyPath("prices", m)
		if m == "" {
			p.add(path, "a model name must not be empty")
		}
		for _, f := range []struct {
			key string
			v   float64
		}{{"input", pr.Input}, {"cached_input", pr.CachedInput}, {"output", pr.Output}} {
			if f.v < 0 || f.v > 1e6 {
				p.add(path+"."+f.key, "must be from 0 to 1000000 US dollars per million tokens, got %g", f.v)
			}
		}
	}
	for i := range c.Agents {
		a := &c.Agents[i]
		path := indexPath("agents", i)
		a.SpendLimits.validate(p, path+".spend_limits", len(c.Prices) > 0)
		if h := a.SpendLimit; h != nil {
			hp := path + ".spend_limit"
			if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.add(hp+".url", "want an absolute http or https URL, got %q", h.URL)
			}
			if h.Timeout <= 0 || h.Timeout > time.Minute {
				p.add(hp+".timeout", "must be > 0 and at most 1m, got %s", formatDuration(h.Timeout))
			}
			for name := range h.Headers {
				if name == "" || strings.ContainsAny(name, " :\r\n") {
					p.add(keyPath(hp+".headers", name), "invalid header name")
				}
			}
		}
	}
	names := map[string]bool{}
	for i := range c.HTTP.Auth.Tokens {
		t := &c.HTTP.Auth.Tokens[i]
		path := indexPath("http.auth.tokens", i)
		if t.SpendLimits == nil {
			continue
		}
		switch {
		case t.Name == "":
			p.add(path+".name", "a token with spend_limits needs a name: its spend is counted by name")
		case names[t.Name]:
			p.add(path+".name", "another token with spend_limits has the name %q", t.Name)
		}
		names[t.Name] = true
		t.SpendLimits.validate(p, path+".spend_limits", len(c.Prices) > 0)
	}
}

func (l *SpendLimits) validate(p *problems, path string, priced bool) {
	if l == nil {
		return
	}
	for _, b := range []struct {
		key string
		b   *Budget
	}{{"per_session", l.PerSession}, {"per_turn", l.PerTurn}, {"per_day", l.PerDay}} {
		if b.b == nil {
			continue
		}
		bp := path + "." + b.key
		if *b.b == (Budget{}) {
			p.add(bp, "set at least one of model_calls, input_tokens, output_tokens and cost_usd")
		}
		for _, f := range []struct {
			key string
			v   int64
		}{{"model_calls", b.b.ModelCalls}, {"input_tokens", b.b.InputTokens}, {"output_tokens", b.b.OutputTokens}} {
			if f.v < 0 {
				p.add(bp+"."+f.key, "must be > 0, got %d", f.v)
			}
		}
		switch {
		case b.b.CostUSD < 0 || b.b.CostUSD > 1e9:
			p.add(bp+".cost_usd", "must be > 0 and at most 1000000000, got %g", b.b.CostUSD)
		case b.b.CostUSD > 0 && !priced:
			p.add(bp+".cost_usd", "needs prices: add a top-level prices table with the agent's models (or a default)")
		}
	}
}

func (t *TelemetryTraces) validate(p *problems, path string) {
	switch t.Exporter {
	case "", TracesNone:
		if t.Endpoint != "" || t.File != "" || t.HeadersEnv != "" {
			p.add(path+".exporter", "is %q, so endpoint, file and headers_env do nothing: set exporter to otlp or file", cmp.Or(t.Exporter, TracesNone))
		}
	case TracesOTLP:
		if t.File != "" {
			p.add(path+".file", "is for the file exporter; this one is otlp")
		}
		if e := t.Endpoint; e != "" {
			if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.add(path+".endpoint", "%q is not an http:// or https:// URL (such as http://otel-collector:4317)", e)
			}
		}
	case TracesFile:
		if t.File == "" {
			p.add(path+".file", "is required with exporter file: the file the spans are appended to")
		}
		if t.Endpoint != "" || t.HeadersEnv != "" {
			p.add(path+".endpoint", "endpoint and headers_env are for the otlp exporter; this one is file")
		}
	default:
		p.add(path+".exporter", "unknown exporter %q: want otlp, file or none", t.Exporter)
	}
	switch t.Protocol {
	case "", "grpc", "http":
	default:
		p.add(path+".protocol", "unknown protocol %q: want grpc or http", t.Protocol)
	}
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		p.add(path+".sample_ratio", "must be in (0, 1], got %g", t.SampleRatio)
	}
	if t.HeadersEnv != "" && !isEnvName(t.HeadersEnv) {
		p.add(path+".headers_env", "%q is not an environment variable name", t.HeadersEnv)
	}
}

// maxSubAgentName keeps delegate_to_<agent> within the 64 characters
// model providers allow a tool name.
const maxSubAgentName = 64 - len("delegate_to_")

func (a *Agent) validateSubAgents(p *problems, path string, byName map[string]int) {
	for i, sa := range a.SubAgents {
		sp := indexPath(path+".sub_agents", i)
		if !p.required(sp+".agent", sa.Agent) {
			continue
		}
		if _, ok := byName[sa.Agent]; !ok {
			p.add(sp+".agent", "unknown agent %q", sa.Agent)
		}
		switch {
		case sa.Agent == a.Name:
			p.add(sp+".agent", "an agent cannot be its own sub-agent")
		case len(sa.Agent) > maxSubAgentName:
			p.add(sp+".agent", "the name is over %d characters: delegate_to_%s would pass the 64 a tool name may have", maxSubAgentName, sa.Agent)
		case slices.ContainsFunc(a.SubAgents[:i], func(o SubAgent) bool { return o.Agent == sa.Agent }):
			p.add(sp+".agent", "%s is listed twice", sa.Agent)
		}
		switch sa.Mode {
		case "", "wait", "background":
		default:
			p.add(sp+".mode", "unknown mode %q (want wait or background)", sa.Mode)
		}
		if sa.MaxTurns < 0 {
			p.add(sp+".max_turns", "must be >= 0 (0: no bound), got %d", sa.MaxTurns)
		}
		dup := slices.ContainsFunc(a.SubAgents[:i], func(o SubAgent) bool { return o.Agent == sa.Agent })
		if _, ok := a.ToolPolicies["delegate_to_"+sa.Agent]; ok && !dup {
			p.add(keyPath(path+".tool_policies", "delegate_to_"+sa.Agent), "delegate_to_%s is a sub-agent's tool: the session runs it, and the sub-agent's own policies guard what it does", sa.Agent)
		}
	}
}

func (ch NotificationChannel) validate(p *problems, path string) {
	switch ch.Type {
	case "webhook", "slack":
	case "email":
		ch.validateEmail(p, path)
		return
	default:
		p.add(path+".type", "unknown channel type %q (want webhook, slack or email)", ch.Type)
	}
	if ch.SMTP != nil || ch.From != "" || len(ch.To) > 0 {
		p.add(path, "smtp, from and to are an email channel's")
	}
	switch {
	case (ch.URL == "") == (ch.URLEnv == ""):
		p.add(path, "set url or url_env (the variable that holds the URL), not both")
	case ch.URL != "":
		if u, err := url.Parse(ch.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			p.add(path+".url", "want an absolute http or https URL, got %q", ch.URL)
		}
	case !isEnvName(ch.URLEnv):
		p.add(path+".url_env", "invalid environment variable name %q", ch.URLEnv)
	case os.Getenv(ch.URLEnv) == "":
		p.add(path+".url_env", "environment variable %s is not set", ch.URLEnv)
	}
	if ch.Type == "slack" && ch.SecretEnv != "" {
		p.add(path+".secret_env", "a Slack incoming webhook is not signed: its URL is the secret (put it in url_env)")
	}
	if ch.SecretEnv != "" {
		switch v := os.Getenv(ch.SecretEnv); {
		case !isEnvName(ch.SecretEnv):
			p.add(path+".secret_env", "invalid environment variable name %q", ch.SecretEnv)
		case v == "":
			p.add(path+".secret_env", "environment variable %s is not set", ch.SecretEnv)
		case len(v) < 16:
			p.add(path+".secret_env", "the secret in %s is %d bytes; it must be at least 16", ch.SecretEnv, len(v))
		}
	}
}

func (a *Agent) validateNotify(p *problems, path string, n *Notifications) {
	for i, r := range a.Notify {
		rp := indexPath(path+".notify", i)
		channel := func(key, name string) {
			if n == nil || name == "" {
				if name == "" {
					p.add(rp+"."+key, "is required")
				} else {
					p.add(rp+"."+key, "unknown channel %q: no notifications.channels are set", name)
				}
				return
			}
			if _, ok := n.Channels[name]; !ok {
				p.add(rp+"."+key, "unknown channel %q", name)
			}
		}
		channel("channel", r.Channel)
		for j, k := range r.Kinds {
			if k != "approval" && k != "question" {
				p.add(indexPath(rp+".kinds", j), "unknown kind %q (want approval or question)", k)
			}
		}
		switch {
		case r.EscalateAfter == 0 && r.EscalateTo != "":
			p.add(rp+".escalate_after", "is required with escalate_to")
		case r.EscalateAfter < 0:
			p.add(rp+".escalate_after", "must be > 0, got %s", formatDuration(r.EscalateAfter))
		case r.EscalateAfter > 0 && r.EscalateTo == "":
			p.add(rp+".escalate_to", "is required with escalate_after")
		case r.EscalateAfter > 0 && (a.InterruptDeadline == 0 || r.EscalateAfter >= a.InterruptDeadline):
			p.add(rp+".escalate_after", "must be shorter than the agent's interrupt_deadline (%s): the escalation goes out before the deadline", formatDuration(a.InterruptDeadline))
		case r.EscalateAfter > 0:
			channel("escalate_to", r.EscalateTo)
		}
	}
}

func (ch NotificationChannel) validateEmail(p *problems, path string) {
	if ch.URL != "" || ch.URLEnv != "" || ch.SecretEnv != "" {
		p.add(path, "an email channel takes smtp, from and to, not url, url_env or secret_env")
	}
	if _, err := mail.ParseAddress(ch.From); err != nil {
		p.add(path+".from", "want one mail address, got %q", ch.From)
	}
	if len(ch.To) == 0 {
		p.add(path+".to", "is required: the addresses the mail goes to")
	}
	for i, a := range ch.To {
		if _, err := mail.ParseAddress(a); err != nil {
			p.add(indexPath(path+".to", i), "want a mail address, got %q", a)
		}
	}
	s := ch.SMTP
	if s == nil {
		p.add(path+".smtp", "is required: the server the mail goes through")
		return
	}
	sp := path + ".smtp"
	if s.Host == "" {
		p.add(sp+".host", "is required")
	}
	if s.Port < 0 || s.Port > 65535 {
		p.add(sp+".port", "must be from 1 to 65535, got %d", s.Port)
	}
	if s.StartTLS != nil && !*s.StartTLS && !loopbackHost(s.Host) {
		p.add(sp+".starttls", "may be false only for a server on this machine (%s is not): mail with approval links must not cross a network unencrypted", s.Host)
	}
	if (s.Username == "") != (s.PasswordEnv == "") {
		p.add(sp, "set both username and password_env, or neither")
	}
	if s.PasswordEnv != "" && os.Getenv(s.PasswordEnv) == "" {
		p.add(sp+".password_env", "environment variable %s is not set", s.PasswordEnv)
	}
	if s.CAFile != "" {
		if _, err := os.Stat(s.CAFile); err != nil {
			p.add(sp+".ca_file", "cannot read %s: %v", s.CAFile, err)
		}
	}
}

// loopbackHost reports a host name or address of this machine.
func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// validateKeyEnvs checks a section's key_env and previous_key_envs: each
// names a set variable that holds a key of at least minBytes.
func validateKeyEnvs(p *problems, section, what string, minBytes int, keyEnv string, previous []string) {
	for i, name := range append([]string{keyEnv}, previous...) {
		kp := section + ".key_env"
		if i > 0 {
			kp = indexPath(section+".previous_key_envs", i-1)
		}
		switch v := os.Getenv(name); {
		case name == "":
			p.add(kp, "is required: the environment variable that holds %s", what)
		case !isEnvName(name):
			p.add(kp, "invalid environment variable name %q: want a letter or _, then letters, digits or _", name)
		case v == "":
			p.add(kp, "environment variable %s is not set", name)
		case len(v) < minBytes:
			p.add(kp, "the key in %s is %d bytes; it must be at least %d (try: openssl rand -hex 32)", name, len(v), minBytes)
		}
	}
}
