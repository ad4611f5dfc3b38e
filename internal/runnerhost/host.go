package runnerhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// Sentinel errors. Every error of a Runner handle names the plugin and the
// call, and wraps at most one of these.
var (
	// ErrPluginShutdown means the plugin process went away (it crashed, was
	// killed, or its connection broke) or is restarting. The call may be
	// retried: the next call relaunches the process. A Temporal activity
	// returns it as an ordinary retryable error.
	ErrPluginShutdown = errors.New("runner plugin shut down")
	// ErrMalformedOutcome means the runner's response broke the contract,
	// such as a stream that ended without an outcome or sent two. The message
	// starts with "runner returned a malformed outcome: ".
	ErrMalformedOutcome = errors.New("runner returned a malformed outcome")
	// ErrUnsupported means the plugin does not implement an optional call
	// (its Info capabilities say so).
	ErrUnsupported = errors.New("runner plugin does not support this call")
	// ErrUnknownPlugin means no plugin of that name was launched.
	ErrUnknownPlugin = errors.New("unknown runner plugin")
	// ErrMessageTooLarge means a request or an answer passed
	// MaxMessageBytes; repeating the call cannot help.
	ErrMessageTooLarge = errors.New("the gRPC message passes the host's limit")
)

// MaxMessageBytes bounds one gRPC message between the host and a plugin in
// either direction (a turn's transcript, a model call's outcome). gRPC's
// default of 4 MiB is far too small for a long session's transcript.
const MaxMessageBytes = 512 << 20

// Timing of launches and restarts.
const (
	// startTimeout bounds the handshake of a new process.
	startTimeout = 30 * time.Second
	// relaunchTimeout bounds a relaunch in the background: handshake, Info.
	relaunchTimeout = 45 * time.Second
	// restartBackoffMin and restartBackoffMax bound the wait before a
	// restart: it doubles with each consecutive failure (a launch that
	// failed or a process that died) and resets after a call succeeds.
	restartBackoffMin = 100 * time.Millisecond
	restartBackoffMax = 10 * time.Second
	// shutdownProbeTimeout bounds the health check that tells a crashed
	// process from a runner that returned Unavailable itself.
	shutdownProbeTimeout = 2 * time.Second
)

// PluginSpec says how to launch one runner plugin.
type PluginSpec struct {
	// Name is the plugin's name in the worker config; logs and errors use it.
	Name string
	// Command is the executable, a path or a name looked up in PATH.
	Command string
	// Args are the command's arguments.
	Args []string
	// Dir is the plugin process's working directory ("" for the worker's):
	// the worker passes its config file's directory, so relative paths in
	// args and runner_config resolve against it, as command does.
	Dir string
	// SHA256 is the executable's expected SHA-256 in hex, or "" to skip
	// the check. A mismatch refuses to start the plugin.
	SHA256 string
	// MaxMessageBytes bounds one gRPC message to or from the plugin; 0
	// means MaxMessageBytes.
	MaxMessageBytes int
	// Env names the worker's environment variables the plugin may see.
	// Listed variables that are unset are left out; nothing else is passed
	// (not even PATH) besides go-plugin's own handshake variables.
	Env []string
	// Reattach, when set, attaches to a runner already running in debug
	// mode (DEX_RUNNER_DEBUG=1, started by hand, say under a debugger)
	// instead of starting Command: the PID:NETWORK:ADDRESS it printed. The
	// host neither starts, restarts nor stops such a runner.
	Reattach string
	// TraceEnv are NAME=value pairs the worker adds to say where the
	// plugin's spans go (OTEL_*, DEX_TRACES_*): tracing settings, not
	// secrets, so its logs are not redacted by them.
	TraceEnv []string
}

func (s PluginSpec) validate() (checksum []byte, err error) {
	if s.Name == "" {
		return nil, errors.New("runner plugin: the name is empty")
	}
	if s.Command == "" {
		return nil, fmt.Errorf("runner plugin %q: the command is empty", s.Name)
	}
	for _, name := range s.Env {
		switch {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			return nil, fmt.Errorf("runner plugin %q: %q is not an environment variable name", s.Name, name)
		case name == pluginapi.Handshake.MagicCookieKey || strings.HasPrefix(name, "PLUGIN_"):
			return nil, fmt.Errorf("runner plugin %q: environment variable %s is reserved for the plugin handshake", s.Name, name)
		}
	}
	if s.SHA256 == "" {
		return nil, nil
	}
	checksum, err = hex.DecodeString(s.SHA256)
	if err != nil || len(checksum) != sha256.Size {
		return nil, fmt.Errorf("runner plugin %q: sha256 %q is not 64 hex digits", s.Name, s.SHA256)
	}
	return checksum, nil
}

// checkCommand reports a command that cannot be started, with the reason
// in words: go-plugin would only say "fork/exec ...". A bare name is looked
// up on the worker's PATH, as exec.Command does.
func (s PluginSpec) checkCommand() error {
	if s.Reattach != "" {
		_, err := ParseReattach(s.Reattach)
		return err
	}
	path := s.Command
	if !strings.ContainsRune(path, filepath.Separator) {
		p, err := exec.LookPath(path)
		if err != nil {
			if isPython(path) {
				return fmt.Errorf("runner plugin %q: command %q is not found on PATH: install Python 3.11 or later, or set plugins.%s.venv to the runner's virtualenv", s.Name, path, s.Name)
			}
			return fmt.Errorf("runner plugin %q: command %q is not found on PATH (give a path to the binary)", s.Name, path)
		}
		path = p
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && isPython(filepath.Base(path)) && filepath.Base(filepath.Dir(path)) == "bin":
		venv := filepath.Dir(filepath.Dir(path))
		return fmt.Errorf("runner plugin %q: command %s does not exist: create the virtualenv with %q and install the runner's packages into it (%s/bin/pip install ...)",
			s.Name, path, "python3 -m venv "+venv, venv)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("runner plugin %q: command %s does not exist (build the plugin, or fix plugins.%s.command)", s.Name, path, s.Name)
	case err != nil:
		return fmt.Errorf("runner plugin %q: command %s: %w", s.Name, path, err)
	case fi.IsDir():
		return fmt.Errorf("runner plugin %q: command %s is a directory, not a program", s.Name, path)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("runner plugin %q: command %s is not executable (mode %v; chmod +x it)", s.Name, path, fi.Mode().Perm())
	}
	return nil
}

// isPython reports whether a command's name is a Python interpreter's
// (python, python3, python3.12).
func isPython(name string) bool {
	rest, ok := strings.CutPrefix(name, "python")
	return ok && strings.Trim(rest, "0123456789.") == ""
}

// missingPythonModule is the hint for a Python plugin that exited before
// its handshake because a package is missing: the module Python named in
// its ModuleNotFoundError, or "".
func missingPythonModule(stderr string) string {
	const marker = "ModuleNotFoundError: No module named '"
	i := strings.LastIndex(stderr, marker)
	if i < 0 {
		return ""
	}
	name, _, ok := strings.Cut(stderr[i+len(marker):], "'")
	if !ok {
		return ""
	}
	return name
}

// environ returns the allow-listed variables that are set.
func (s PluginSpec) environ() []string {
	env := []string{}
	for _, name := range s.Env {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// Host launches runner plugins and hands out Runners that call them. It is
// safe for concurrent use.
type Host struct {
	logger *slog.Logger

	mu       sync.Mutex
	plugins  map[string]*instance
	pending  map[string]bool
	launches sync.WaitGroup // Launch calls in flight
	reaping  sync.WaitGroup // processes being killed in the background
	closed   bool
	// tracer traces the gRPC calls to the plugins, nil: none.
	tracer trace.TracerProvider
}

// SetTracerProvider traces the gRPC calls of plugins launched after it
// with tp (otelgrpc), under the span of the caller's context, and passes
// the trace context to the plugin in the call's metadata.
func (h *Host) SetTracerProvider(tp trace.TracerProvider) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tracer = tp
}

// Restarts returns how many times the Host started a plugin process again
// after one died, over all plugins.
func (h *Host) Restarts() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, i := range h.plugins {
		i.mu.Lock()
		n += i.restarts
		i.mu.Unlock()
	}
	return n
}

// New returns a Host that logs to logger (nil: no logs).
func New(logger *slog.Logger) *Host {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Host{logger: logger, plugins: map[string]*instance{}, pending: map[string]bool{}}
}

// Launch checks that spec.Command exists and is executable, starts the
// plugin, completes the handshake (with AutoMTLS, and the
// checksum when spec.SHA256 is set) and calls Info. It returns once the
// plugin answers, or with an error that names the plugin and carries the
// plugin's own message or the tail of its stderr. A plugin name is
// launched once; later restarts are the Host's business.
func (h *Host) Launch(ctx context.Context, spec PluginSpec) error {
	checksum, err := spec.validate()
	if err != nil {
		return err
	}
	if err := spec.checkCommand(); err != nil {
		return err
	}
	spec.Args = slices.Clone(spec.Args)
	spec.Env = slices.Clone(spec.Env)
	spec.TraceEnv = slices.Clone(spec.TraceEnv)

	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return fmt.Errorf("runner plugin %q: %w", spec.Name, errHostClosed)
	case h.plugins[spec.Name] != nil || h.pending[spec.Name]:
		h.mu.Unlock()
		return fmt.Errorf("runner plugin %q is already launched", spec.Name)
	}
	h.pending[spec.Name] = true
	h.launches.Add(1)
	tracer := h.tracer
	h.mu.Unlock()
	defer h.launches.Done()

	inst := &instance{
		tracer:   tracer,
		spec:     spec,
		checksum: checksum,
		logger:   h.logger.With("plugin", spec.Name),
		reaping:  &h.reaping,
		configs:  map[string]agentConfig{},
		tools:    map[string][]string{},
		choices:  map[string][]pluginapi.SettingChoice{},
		policies: map[string]runnerPolicies{},
	}
	proc, err := inst.start(ctx)

	h.mu.Lock()
	delete(h.pending, spec.Name)
	closed := h.closed
	if err == nil && !closed {
		inst.proc = proc
		h.plugins[spec.Name] = inst
	}
	h.mu.Unlock()
	switch {
	case err != nil:
		return err
	case closed:
		proc.kill()
		return fmt.Errorf("runner plugin %q: %w", spec.Name, errHostClosed)
	}
	return nil
}

var errHostClosed = errors.New("the runner host is closed")

func (h *Host) instance(name string) (*instance, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	inst := h.plugins[name]
	if inst == nil {
		return nil, fmt.Errorf("runner plugin %q: %w", name, ErrUnknownPlugin)
	}
	return inst, nil
}

// Configure sends one agent's runner_config (JSON) to the plugin and
// remembers it: a relaunched process receives every remembered
// configuration before any other call. The error carries the plugin's
// message.
func (h *Host) Configure(ctx context.Context, plugin, agent string, runnerConfig []byte) error {
	inst, err := h.instance(plugin)
	if err != nil {
		return err
	}
	return inst.configure(ctx, agent, runnerConfig)
}

// Runner returns a handle to the plugin. It implements pluginapi.Runner and
// every optional interface; an optional call the plugin lacks fails with
// ErrUnsupported (check Info's capabilities first). Every call goes to the
// current process: a dead one is relaunched lazily, waiting out a capped
// exponential backoff, but never past the call's ctx. A call cut short by a
// crash fails with an error that wraps ErrPluginShutdown.
func (h *Host) Runner(plugin string) (pluginapi.Runner, error) {
	inst, err := h.instance(plugin)
	if err != nil {
		return nil, err
	}
	return &handle{inst: inst}, nil
}

// Info returns what the plugin's latest process reported at start-up, and
// false for a plugin that was never launched.
func (h *Host) Info(plugin string) (pluginapi.InfoResponse, pluginapi.Capabilities, bool) {
	inst, err := h.instance(plugin)
	if err != nil {
		return pluginapi.InfoResponse{}, pluginapi.Capabilities{}, false
	}
	inst.mu.Lock()
	defer inst.mu.Unlock()
	return inst.info, inst.caps, true
}

// ContractVersion returns the runner contract version the plugin's latest
// process speaks (the handshake's), and 0 for a plugin never launched.
func (h *Host) ContractVersion(plugin string) int {
	inst, err := h.instance(plugin)
	if err != nil {
		return 0
	}
	inst.mu.Lock()
	defer inst.mu.Unlock()
	return inst.version
}

// Tools returns the names of the tools the plugin reported for the agent in
// its latest successful Configure, in the plugin's order. nil means unknown:
// the agent was never configured, or the plugin reports no tools (a plugin
// built before ConfigureResponse.Tools existed).
func (h *Host) Tools(plugin, agent string) []string {
	inst, err := h.instance(plugin)
	if err != nil {
		return nil
	}
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if len(inst.tools[agent]) == 0 {
		return nil
	}
	return slices.Clone(inst.tools[agent])
}

// SettingChoices returns the setting choices the plugin reported for the
// agent in its latest successful Configure (nil for none or unknown).
func (h *Host) SettingChoices(plugin, agent string) []pluginapi.SettingChoice {
	inst, err := h.instance(plugin)
	if err != nil {
		return nil
	}
	inst.mu.Lock()
	defer inst.mu.Unlock()
	return slices.Clone(inst.choices[agent])
}

// ToolPolicies returns the policies the plugin reported for the agent's
// own tools in its latest successful Configure, and its default effect
// (nil and "" for none or unknown).
func (h *Host) ToolPolicies(plugin, agent string) (map[string]pluginapi.ToolPolicy, pluginapi.Effect) {
	inst, err := h.instance(plugin)
	if err != nil {
		return nil, ""
	}
	inst.mu.Lock()
	defer inst.mu.Unlock()
	p := inst.policies[agent]
	return maps.Clone(p.tools), p.defaultEffect
}

// Ping checks the plugin's current process with go-plugin's gRPC health
// check. It never starts a process: a plugin that is down fails with
// ErrPluginShutdown.
func (h *Host) Ping(ctx context.Context, plugin string) error {
	inst, err := h.instance(plugin)
	if err != nil {
		return err
	}
	inst.mu.Lock()
	p := inst.proc
	inst.mu.Unlock()
	if p == nil || !p.alive() {
		return fmt.Errorf("runner plugin %q: not running: %w", plugin, ErrPluginShutdown)
	}
	if err := p.ping(ctx); err != nil {
		return fmt.Errorf("runner plugin %q: health check: %w: %w", plugin, ErrPluginShutdown, err)
	}
	return nil
}

// Close kills every plugin process, in parallel, and waits until they are
// gone (like go-plugin's CleanupClients, for this Host's plugins only; the
// clients are also Managed, so CleanupClients at exit catches any left).
// Calls in flight fail with ErrPluginShutdown, later calls too.
func (h *Host) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	insts := make([]*instance, 0, len(h.plugins))
	for _, inst := range h.plugins {
		insts = append(insts, inst)
	}
	h.mu.Unlock()

	h.launches.Wait()
	var wg sync.WaitGroup
	for _, inst := range insts {
		wg.Go(inst.close)
	}
	wg.Wait()
	h.reaping.Wait()
}
