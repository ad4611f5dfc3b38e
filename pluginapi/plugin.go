package pluginapi

import (
	"context"
	"errors"
	"math"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
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

// Serve serves r as a runner plugin and returns when the host is done with
// the process. Call it from main:
//
//	func main() { pluginapi.Serve(myrunner.New()) }
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
//
// When the worker traces (telemetry.traces), it tells the plugin where the
// spans go in its environment (OTEL_TRACES_EXPORTER and the variables
// named by the EnvTraces* and EnvOTLP* constants). Serve then traces each
// gRPC call under the worker's span, and sets the global tracer provider
// and propagator, so spans a Runner starts from its methods' contexts, or
// its HTTP client's instrumentation, join the turn's trace.
func Serve(r Runner) {
	traceOpts, stopTracing := serveTracing()
	defer stopTracing()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &RunnerPlugin{Runner: r}},
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

// Interface guards
var _ plugin.GRPCPlugin = (*RunnerPlugin)(nil)
