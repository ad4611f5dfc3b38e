package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/dex-agents/dex-agent-worker/pluginapi/otelenv"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/tracing"
	"github.com/dex-agents/dex-agent-worker/internal/tracing/temporaltrace"
)

// startTracing starts the trace exporter the config names (or the console
// one of dev --trace), and the Temporal interceptors and plugin gRPC
// tracing that go with it.
func (d *Daemon) startTracing(ctx context.Context, cfg *config.Config, opts Options, logger *slog.Logger) error {
	t := cfg.Telemetry.Traces
	o := tracing.Options{
		Exporter: t.Exporter, Endpoint: t.Endpoint, Protocol: t.Protocol, File: t.File,
		SampleRatio: t.SampleRatio, CaptureContent: cfg.Telemetry.CaptureContent,
		ServiceName: "dex-agent-worker", ServiceVersion: opts.Version,
		Logger: logger.With("component", "tracing"),
	}
	if opts.TraceConsole != nil {
		o.Exporter, o.Writer = tracing.ExporterConsole, opts.TraceConsole
	}
	headers, err := t.Headers()
	if err != nil {
		return err
	}
	o.Headers = headers
	tr, err := tracing.New(ctx, o)
	if err != nil {
		return fmt.Errorf("telemetry.traces: %w", err)
	}
	if tr == nil {
		return nil
	}
	d.tracer, d.traceExporter = tr, o.Exporter
	if d.traces, err = temporaltrace.New(tr); err != nil {
		return fmt.Errorf("telemetry.traces: the Temporal interceptor: %w", err)
	}
	d.host.SetTracerProvider(tr.Provider())
	logger.Info("tracing", "exporter", o.Exporter, "sample_ratio", tr.Ratio(), "capture_content", o.CaptureContent)
	return nil
}

// traceEnv tells a runner plugin where its spans go, in the variables
// pluginapi.Serve (and any OpenTelemetry SDK, for the OTEL_ ones) reads.
// The export headers are named, never passed: the plugin sees them only
// when its env grants their variable. The console exporter of dev has no
// place for a plugin's spans.
func traceEnv(cfg *config.Config, plugin, exporter string) []string {
	t := cfg.Telemetry.Traces
	env := []string{otelenv.EnvServiceName + "=dex-runner-" + plugin}
	switch exporter {
	case tracing.ExporterOTLP:
		endpoint, err := tracing.Endpoint(t.Protocol, t.Endpoint)
		if err != nil {
			return nil
		}
		protocol := "grpc"
		if t.Protocol == tracing.ProtocolHTTP {
			protocol = "http/protobuf"
		}
		env = append(env, otelenv.EnvTracesExporter+"=otlp",
			otelenv.EnvOTLPEndpoint+"="+endpoint, otelenv.EnvOTLPProtocol+"="+protocol)
		if t.HeadersEnv != "" && slices.Contains(cfg.Plugins[plugin].Env, t.HeadersEnv) {
			env = append(env, otelenv.EnvTracesHeadersEnv+"="+t.HeadersEnv)
		}
	case tracing.ExporterFile:
		env = append(env, otelenv.EnvTracesExporter+"=file", otelenv.EnvTracesFile+"="+t.File)
	default:
		return []string{otelenv.EnvTracesExporter + "=none"}
	}
	if t.SampleRatio > 0 {
		env = append(env, otelenv.EnvTracesSampleRatio+"="+strconv.FormatFloat(t.SampleRatio, 'g', -1, 64))
	}
	return env
}
