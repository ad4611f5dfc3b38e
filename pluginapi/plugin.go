package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

// Handshake is the go-plugin handshake between the worker and a runner
// plugin. ProtocolVersion changes only when the wire format breaks. The
// magic cookie only keeps people from running a plugin binary by hand; it
// is not a security measure.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "DEX_RUNNER_PLUGIN",
	MagicCookieValue: "9f1c7e2a-dex-runner-plugin",
}

// PluginName is the name under which a plugin process serves its Runner.
const PluginName = "runner"

// maxMessageSize is the largest request a plugin accepts. A request carries
// the whole transcript, which can pass gRPC's default limit of 4 MB.
const maxMessageSize = math.MaxInt32

// RunnerPlugin is the go-plugin adapter for a Runner. A plugin serves one
// with Runner set (Serve does that); the host registers one with Runner nil
// and dispenses a client that implements Runner and every optional
// interface. An optional call that the plugin's runner does not implement
// fails with gRPC code Unimplemented; a host asks Info for the plugin's
// capabilities first.
type RunnerPlugin struct {
	plugin.NetRPCUnsupportedPlugin

	// Runner is the implementation a plugin serves. The host leaves it nil.
	Runner Runner
}

// GRPCServer registers the Runner service. go-plugin calls it in the plugin
// process.
func (p *RunnerPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Runner == nil {
		return errors.New("pluginapi: RunnerPlugin.Runner is nil")
	}
	runnerpb.RegisterRunnerServer(s, newGRPCServer(p.Runner))
	return nil
}

// GRPCClient returns the host's view of the plugin's Runner. go-plugin calls
// it in the host process with a ctx that ends when the plugin process
// exits; calls in flight then fail with gRPC code Unavailable.
func (p *RunnerPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return newGRPCClient(ctx, runnerpb.NewRunnerClient(c)), nil
}

// ServeOptions configure Serve. Fields may be added; a zero field keeps
// its default.
type ServeOptions struct {
	// Runner serves the contract. Required.
	Runner Runner
	// TracerProvider traces each call under the worker's span (nil: the
	// global provider, which traces nothing unless the program set one).
	// Serve makes it the global provider, and the W3C propagator the
	// global propagator, so spans a Runner starts from its methods'
	// contexts, or its HTTP client's instrumentation, join the turn's
	// trace. When Serve returns it shuts the provider down (when it has a
	// Shutdown method), exporting the last spans. Package otelenv starts
	// the provider the worker's environment asks for; pluginapi itself
	// uses only the OpenTelemetry API.
	TracerProvider trace.TracerProvider
}

// Serve runs the plugin: it answers the go-plugin handshake on stdout,
// serves the runner contract over gRPC with AutoMTLS, the gRPC health
// service and the controller's Shutdown, logs as go-hclog JSON on stderr,
// and returns when the host stops the plugin. Call it from main:
//
//	func main() { pluginapi.Serve(pluginapi.ServeOptions{Runner: &myRunner{}}) }
//
// Print nothing to stdout before Serve runs (in main, in an init function,
// or in a package you import): the worker reads the first line of the
// plugin's stdout as go-plugin's handshake, so any other line fails the
// start, with the error "the plugin printed to stdout before
// pluginapi.Serve: ...". Write logs to os.Stderr instead. Once Serve runs,
// os.Stdout and os.Stderr are piped to the worker.
//
// Run by hand, the binary prints a note and exits with status 1. Logs
// written to os.Stderr reach the worker's log, tagged with the plugin's
// name; JSON lines in hashicorp/go-hclog's format keep their level and
// fields.
func Serve(o ServeOptions) {
	if o.Runner == nil {
		panic("pluginapi.Serve: ServeOptions.Runner is nil")
	}
	if os.Getenv(EnvDebug) != "" {
		serveDebug(o)
		return
	}
	traceOpts := serveTracing(o.TracerProvider)
	if s, ok := o.TracerProvider.(interface{ Shutdown(context.Context) error }); ok {
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.Shutdown(ctx)
		}()
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &RunnerPlugin{Runner: o.Runner}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, traceOpts...)
			return plugin.DefaultGRPCServer(append(opts, grpc.MaxRecvMsgSize(maxMessageSize), grpc.MaxSendMsgSize(maxMessageSize)))
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "runner",
			Level:      hclog.Info,
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
}

// EnvDebug, set to any value, makes Serve run the runner in debug mode:
// started by hand (under a debugger such as dlv), it serves on a local
// socket without the handshake or TLS, prints to stderr the value of the
// worker's --reattach flag that connects to it, and runs until interrupted.
// The worker then uses it instead of starting the plugin's command:
//
//	DEX_RUNNER_DEBUG=1 dlv exec ./bin/notes
//	dex-agent-worker dev --config dex.yaml --reattach notes=4242:unix:/tmp/plugin123
const EnvDebug = "DEX_RUNNER_DEBUG"

// serveDebug serves the runner in debug mode (EnvDebug).
func serveDebug(o ServeOptions) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &RunnerPlugin{Runner: o.Runner}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, serveTracing(o.TracerProvider)...)
			return plugin.DefaultGRPCServer(append(opts, grpc.MaxRecvMsgSize(maxMessageSize), grpc.MaxSendMsgSize(maxMessageSize)))
		},
		Logger: hclog.New(&hclog.LoggerOptions{Name: "runner", Level: hclog.Info, Output: os.Stderr, JSONFormat: true}),
		Test:   &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed},
	})
	select {
	case rc := <-reattach:
		fmt.Fprintf(os.Stderr, "runner serving in debug mode (pid %d); start the worker with:\n  --reattach NAME=%d:%s:%s\n(NAME: the plugin's name in the worker config). Stop with Ctrl-C.\n",
			rc.Pid, rc.Pid, rc.Addr.Network(), rc.Addr.String())
	case <-closed:
		return
	}
	<-closed
}

// Interface guards
var _ plugin.GRPCPlugin = (*RunnerPlugin)(nil)
