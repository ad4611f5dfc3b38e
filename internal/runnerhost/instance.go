package runnerhost

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/dex-agents/dex-agent-worker/internal/tracing"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// agentConfig is one remembered configuration; rev orders them, so a
// process knows which ones it has.
type agentConfig struct {
	agent string
	data  []byte
	rev   uint64
}

// instance manages the processes of one plugin, one at a time.
type instance struct {
	tracer   trace.TracerProvider // nil: calls are not traced
	spec     PluginSpec
	checksum []byte
	logger   *slog.Logger
	reaping  *sync.WaitGroup // the Host's: Close waits for these kills

	mu        sync.Mutex
	proc      *process      // the current process, nil while none
	launching chan struct{} // closed when the relaunch in flight ends
	failures  int           // consecutive launch failures and deaths
	restarts  int64         // relaunches that started a process
	retryAt   time.Time     // no relaunch before this
	lastErr   error         // why the last launch failed or the process died
	closed    bool
	info      pluginapi.InfoResponse
	caps      pluginapi.Capabilities
	version   int
	configs   map[string]agentConfig
	rev       uint64                               // the newest agentConfig.rev
	tools     map[string][]string                  // agent -> the tools its latest Configure reported
	choices   map[string][]pluginapi.SettingChoice // agent -> its latest Configure's setting choices
	policies  map[string]runnerPolicies            // agent -> its latest Configure's own tool policies
}

// process is one plugin process.
type process struct {
	client   *plugin.Client
	protocol plugin.ClientProtocol
	runner   fullRunner
	info     pluginapi.InfoResponse
	caps     pluginapi.Capabilities
	version  int
	id       string
	// stopping is set before the host kills the process, so its exit is
	// not logged as a crash.
	stopping *atomic.Bool

	mu      sync.Mutex
	broken  bool // a call saw it die; never use it again
	cfgSem  chan struct{}
	applied map[string]uint64 // agent -> rev this process has
	upTo    uint64            // every rev up to this one is applied
}

// fullRunner is what pluginapi.RunnerPlugin dispenses on the host side.
// Describe is Info plus capabilities and protocol versions.
type fullRunner interface {
	pluginapi.Runner
	pluginapi.UnfinishedTurnMessageBuilder
	pluginapi.ToolTaskPoller
	pluginapi.ToolTaskCanceller
	pluginapi.InputTokenEstimator
	pluginapi.Compactor
	Describe(ctx context.Context) (*pluginapi.InfoResponse, pluginapi.Capabilities, []int, error)
}

func (p *process) alive() bool {
	p.mu.Lock()
	broken := p.broken
	p.mu.Unlock()
	return !broken && !p.client.Exited()
}

func (p *process) markBroken() {
	p.mu.Lock()
	p.broken = true
	p.mu.Unlock()
}

// kill ends the process and waits until it is gone.
func (p *process) kill() {
	p.markBroken()
	p.stopping.Store(true)
	p.client.Kill()
}

// ping runs go-plugin's gRPC health check on the process.
func (p *process) ping(ctx context.Context) error {
	c, ok := p.protocol.(*plugin.GRPCClient)
	if !ok {
		return p.protocol.Ping()
	}
	_, err := grpc_health_v1.NewHealthClient(c.Conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: plugin.GRPCServiceName})
	return err
}

// start launches a process and waits for it, or for ctx. A start that
// outlives ctx is killed when it completes.
func (i *instance) start(ctx context.Context) (*process, error) {
	type result struct {
		p   *process
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := i.startProcess(ctx)
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		return r.p, r.err
	case <-ctx.Done():
		i.reaping.Go(func() {
			if r := <-done; r.p != nil {
				r.p.kill()
			}
		})
		return nil, fmt.Errorf("runner plugin %q: start: %w", i.spec.Name, ctx.Err())
	}
}

func (i *instance) startProcess(ctx context.Context) (*process, error) {
	env := i.spec.environ()
	redact := newRedactor(env)
	cmd := exec.Command(i.spec.Command, i.spec.Args...)
	cmd.Dir = i.spec.Dir
	cmd.Env = append(env, i.spec.TraceEnv...)
	cmd.SysProcAttr = pluginProcAttr()
	stderr := newTail()
	stopping := new(atomic.Bool)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		Plugins:          plugin.PluginSet{pluginapi.PluginName: &pluginapi.RunnerPlugin{}},
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true,
		StartTimeout:     startTimeout,
		Logger:           newHCLogAdapter(i.logger, redact, stopping),
		Stderr:           stderr,
		SyncStdout:       outputLogger(i.logger, redact, "stdout"),
		SyncStderr:       outputLogger(i.logger, redact, "stderr"),
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(i.maxMessage()), grpc.MaxCallSendMsgSize(i.maxMessage()))},
	}
	if i.tracer != nil {
		cfg.GRPCDialOptions = append(cfg.GRPCDialOptions, grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tracing.ChildOnly(i.tracer)), otelgrpc.WithPropagators(tracing.Propagator))))
	}
	if i.spec.Reattach == "" {
		// Mutual TLS as go-plugin's AutoMTLS, with a key every plugin's
		// TLS stack accepts (see clientTLS).
		certPEM, tlsCfg, err := clientTLS(time.Now())
		if err != nil {
			return nil, fmt.Errorf("runner plugin %q: %w", i.spec.Name, err)
		}
		cmd.Env = append(cmd.Env, "PLUGIN_CLIENT_CERT="+string(certPEM))
		cfg.TLSConfig = tlsCfg
	}
	if i.spec.Reattach != "" {
		// A runner someone started by hand (under a debugger) in debug
		// mode: no process to start, check or manage, and no AutoMTLS (the
		// runner serves on a local socket without TLS).
		rc, err := ParseReattach(i.spec.Reattach)
		if err != nil {
			return nil, fmt.Errorf("runner plugin %q: %w", i.spec.Name, err)
		}
		cfg.Cmd, cfg.Reattach, cfg.Managed, cfg.SkipHostEnv = nil, rc, false, false
		cfg.SyncStdout, cfg.SyncStderr = nil, nil
	}
	if i.checksum != nil && i.spec.Reattach == "" {
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: i.checksum, Hash: sha256.New()}
	}
	client := plugin.NewClient(cfg)

	fail := func(what string, err error) error {
		stopping.Store(true)
		client.Kill() // waits for the stderr reader, so the tail is complete
		msg := fmt.Sprintf("runner plugin %q: %s: %s", i.spec.Name, what, redact.String(err.Error()))
		if m := missingPythonModule(stderr.String()); m != "" {
			msg += fmt.Sprintf("\nthe plugin's Python (%s) has no module %q: install the package that provides it into that interpreter's environment (its bin/pip install ...)", i.spec.Command, m)
		}
		if t := stderr.String(); t != "" {
			msg += "\nplugin stderr (last lines):\n" + redact.String(t)
		}
		return &launchError{msg: msg, err: err}
	}

	protocol, err := client.Client()
	if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
		stopping.Store(true)
		client.Kill()
		return nil, fmt.Errorf("runner plugin %q: refusing to start %s: its SHA-256 is %s, the configuration expects %s: %w",
			i.spec.Name, cmd.Path, fileSHA256(cmd.Path), i.spec.SHA256, err)
	}
	if err != nil {
		return nil, fail("start "+i.spec.Command, handshakeError(err, redact))
	}
	raw, err := protocol.Dispense(pluginapi.PluginName)
	if err != nil {
		return nil, fail("dispense", err)
	}
	runner, ok := raw.(fullRunner)
	if !ok {
		return nil, fail("dispense", fmt.Errorf("the client %T lacks a runner method (pluginapi and runnerhost disagree)", raw))
	}
	info, caps, versions, err := runner.Describe(ctx)
	if err != nil {
		return nil, fail("Info", err)
	}
	version := client.NegotiatedVersion()
	if !slices.Contains(versions, version) {
		return nil, fail("Info", fmt.Errorf("the plugin speaks protocol versions %v, the handshake chose %d", versions, version))
	}
	p := &process{
		client:   client,
		protocol: protocol,
		runner:   runner,
		info:     *info,
		caps:     caps,
		version:  version,
		id:       client.ID(),
		stopping: stopping,
		cfgSem:   make(chan struct{}, 1),
		applied:  map[string]uint64{},
	}
	i.mu.Lock()
	i.info, i.caps, i.version = p.info, p.caps, p.version
	i.mu.Unlock()
	i.logger.Info("runner plugin started", "pid", p.id, "name", info.Name, "version", info.Version, "protocol", version)
	return p, nil
}

// launchError is a failed start; its message is meant for people.
type launchError struct {
	msg string
	err error
}

func (e *launchError) Error() string { return e.msg }
func (e *launchError) Unwrap() error { return e.err }

func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return hex.EncodeToString(h.Sum(nil))
}

func backoff(failures int) time.Duration {
	d := restartBackoffMin
	for n := 1; n < failures && d < restartBackoffMax; n++ {
		d *= 2
	}
	return min(d, restartBackoffMax)
}

// noteFailure records a failed launch or a dead process. i.mu is held.
func (i *instance) noteFailure(err error) {
	i.failures++
	i.lastErr = err
	i.retryAt = time.Now().Add(backoff(i.failures))
}

// noteSuccess resets the backoff after a call the process answered.
func (i *instance) noteSuccess() {
	i.mu.Lock()
	i.failures = 0
	i.mu.Unlock()
}

// acquire returns the current live process, with every remembered
// configuration applied. When there is none it starts a relaunch in the
// background (shared by every waiting call) once the backoff has passed,
// and waits for it or for ctx. If the relaunch it waited for fails, it
// returns that failure rather than trying again: retries are the caller's.
// Its errors wrap ErrPluginShutdown, except a failed re-configuration.
func (i *instance) acquire(ctx context.Context) (*process, error) {
	waited := false
	for {
		i.mu.Lock()
		if i.closed {
			i.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", errHostClosed, ErrPluginShutdown)
		}
		if p := i.proc; p != nil {
			if p.alive() {
				i.mu.Unlock()
				if err := i.ensureConfigured(ctx, p); err != nil {
					return nil, err
				}
				return p, nil
			}
			i.proc = nil
			i.noteFailure(errors.New("the process exited"))
			i.logger.Warn("runner plugin process is gone; it is restarted on the next call",
				"pid", p.id, "restart_in", time.Until(i.retryAt).Round(time.Millisecond))
			i.reaping.Go(p.kill) // reap it and release its resources
		}
		if ch := i.launching; ch != nil {
			i.mu.Unlock()
			select {
			case <-ch:
				waited = true
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the plugin to restart: %w: %w", ErrPluginShutdown, ctx.Err())
			}
		}
		if waited {
			lastErr := i.lastErr
			i.mu.Unlock()
			return nil, fmt.Errorf("restart failed: %w: %w", ErrPluginShutdown, lastErr)
		}
		if wait := time.Until(i.retryAt); wait > 0 {
			retryAt, lastErr := i.retryAt, i.lastErr
			i.mu.Unlock()
			if deadline, ok := ctx.Deadline(); ok && deadline.Before(retryAt) {
				return nil, fmt.Errorf("restarting in %s (last failure: %v): %w", wait.Round(time.Millisecond), lastErr, ErrPluginShutdown)
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("waiting to restart the plugin: %w: %w", ErrPluginShutdown, ctx.Err())
			}
		}
		ch := make(chan struct{})
		i.launching = ch
		i.mu.Unlock()
		// The relaunch serves every waiting call, so it must not end with
		// this caller's ctx; relaunchTimeout bounds it instead.
		go i.relaunch(context.WithoutCancel(ctx), ch)
	}
}

// acquireFor is acquire for a call named call, with errors that name the
// plugin and the call.
func (i *instance) acquireFor(ctx context.Context, call string) (*process, error) {
	p, err := i.acquire(ctx)
	if err != nil {
		var named *callError
		if errors.As(err, &named) {
			return nil, err
		}
		return nil, i.named(call, err)
	}
	return p, nil
}

func (i *instance) relaunch(ctx context.Context, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithTimeout(ctx, relaunchTimeout)
	defer cancel()
	p, err := i.startProcess(ctx)

	i.mu.Lock()
	i.launching = nil
	var orphan *process
	switch {
	case err != nil:
		i.noteFailure(err)
		i.logger.Error("runner plugin restart failed", "error", err, "attempt", i.failures, "retry_in", backoff(i.failures))
	case i.closed:
		orphan = p
	default:
		i.proc = p
		i.restarts++
	}
	i.mu.Unlock()
	if orphan != nil {
		orphan.kill() // before done closes: Close waits for it
	}
}

// ensureConfigured applies the remembered configurations p lacks, in the
// order they were made.
func (i *instance) ensureConfigured(ctx context.Context, p *process) error {
	i.mu.Lock()
	rev := i.rev
	i.mu.Unlock()
	p.mu.Lock()
	upTo := p.upTo
	p.mu.Unlock()
	if upTo >= rev {
		return nil
	}

	select {
	case p.cfgSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("runner plugin %q: waiting for configuration: %w", i.spec.Name, ctx.Err())
	}
	defer func() { <-p.cfgSem }()

	i.mu.Lock()
	todo := make([]agentConfig, 0, len(i.configs))
	for _, c := range i.configs {
		todo = append(todo, c)
	}
	rev = i.rev
	i.mu.Unlock()
	slices.SortFunc(todo, func(a, b agentConfig) int { return cmp.Compare(a.rev, b.rev) })

	for _, c := range todo {
		p.mu.Lock()
		have := p.applied[c.agent]
		p.mu.Unlock()
		if have == c.rev {
			continue
		}
		if err := i.sendConfig(ctx, p, c); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.upTo = max(p.upTo, rev)
	p.mu.Unlock()
	return nil
}

func (i *instance) sendConfig(ctx context.Context, p *process, c agentConfig) error {
	resp, err := p.runner.Configure(ctx, &pluginapi.ConfigureRequest{
		Agent:           c.agent,
		RunnerConfig:    slices.Clone(c.data),
		ProtocolVersion: p.version,
	})
	if err := i.wrap(ctx, p, fmt.Sprintf("Configure agent %q", c.agent), err); err != nil {
		return err
	}
	p.mu.Lock()
	p.applied[c.agent] = c.rev
	p.mu.Unlock()
	if resp != nil {
		i.mu.Lock()
		i.tools[c.agent] = slices.Clone(resp.Tools)
		i.choices[c.agent] = slices.Clone(resp.SettingChoices)
		i.policies[c.agent] = runnerPolicies{tools: maps.Clone(resp.ToolPolicies), defaultEffect: resp.DefaultToolEffect}
		i.mu.Unlock()
	}
	return nil
}

// runnerPolicies are the policies a runner reported for an agent's tools.
type runnerPolicies struct {
	tools         map[string]pluginapi.ToolPolicy
	defaultEffect pluginapi.Effect
}

func (i *instance) configure(ctx context.Context, agent string, data []byte) error {
	i.mu.Lock()
	i.rev++
	c := agentConfig{agent: agent, data: slices.Clone(data), rev: i.rev}
	i.mu.Unlock()

	p, err := i.acquireFor(ctx, fmt.Sprintf("Configure agent %q", agent))
	if err != nil {
		return err
	}
	select {
	case p.cfgSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("runner plugin %q: waiting for configuration: %w", i.spec.Name, ctx.Err())
	}
	err = i.sendConfig(ctx, p, c)
	<-p.cfgSem
	if err != nil {
		return err
	}
	i.mu.Lock()
	if old, ok := i.configs[agent]; !ok || old.rev < c.rev {
		i.configs[agent] = c
	}
	i.mu.Unlock()
	return nil
}

// maxMessage is the plugin's gRPC message limit.
func (i *instance) maxMessage() int {
	if i.spec.MaxMessageBytes > 0 {
		return i.spec.MaxMessageBytes
	}
	return MaxMessageBytes
}

// named adds the plugin's name to an error that lacks it.
func (i *instance) named(call string, err error) error {
	return fmt.Errorf("runner plugin %q: %s: %w", i.spec.Name, call, err)
}

func (i *instance) close() {
	i.mu.Lock()
	i.closed = true
	p, launching := i.proc, i.launching
	i.proc = nil
	i.mu.Unlock()
	if launching != nil {
		<-launching // relaunch kills what it started, as i.closed is set
	}
	if p != nil {
		p.kill()
	}
}

// wrap classifies err, an error of a call made on p, and names the plugin
// and the call. The pluginapi client reports its classification as a gRPC
// status code: Unavailable (the plugin went away), InvalidArgument
// (malformed outcome) or Unimplemented.
func (i *instance) wrap(ctx context.Context, p *process, call string, err error) error {
	if err == nil {
		i.noteSuccess()
		return nil
	}
	var sentinel error
	switch status.Code(err) {
	case codes.Unavailable:
		sentinel = ErrPluginShutdown
		if p.client.Exited() || !i.probe(ctx, p) {
			p.markBroken()
		}
	case codes.InvalidArgument:
		sentinel = ErrMalformedOutcome
		i.noteSuccess()
	case codes.Unimplemented:
		sentinel = ErrUnsupported
		i.noteSuccess()
	case codes.ResourceExhausted:
		if strings.Contains(status.Convert(err).Message(), "larger than max") {
			sentinel = ErrMessageTooLarge
			err = fmt.Errorf("%w (%d bytes): %s", ErrMessageTooLarge, i.maxMessage(), status.Convert(err).Message())
			i.noteSuccess()
		}
	default:
		if ctx.Err() == nil {
			i.noteSuccess()
		}
	}
	return &callError{plugin: i.spec.Name, call: call, sentinel: sentinel, err: err}
}

// probe reports whether p still answers its health check. It waits no
// longer than ctx, and when ctx ends first it reports true: unsure, it
// leaves the process alone and lets the next call find out.
func (i *instance) probe(ctx context.Context, p *process) bool {
	probeCtx, cancel := context.WithTimeout(ctx, shutdownProbeTimeout)
	defer cancel()
	return p.ping(probeCtx) == nil || ctx.Err() != nil
}

// callError is the error of a Runner handle call.
type callError struct {
	plugin   string
	call     string
	sentinel error
	err      error
}

func (e *callError) Error() string {
	return fmt.Sprintf("runner plugin %q: %s: %v", e.plugin, e.call, e.err)
}

func (e *callError) Unwrap() []error {
	if e.sentinel != nil {
		return []error{e.sentinel, e.err}
	}
	return []error{e.err}
}
