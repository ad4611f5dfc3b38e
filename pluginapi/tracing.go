package pluginapi

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc"

	"github.com/dex-agents/dex-agent-worker/internal/tracing"
)

// The environment variables the worker sets on a runner plugin when it
// traces, besides OTEL_SERVICE_NAME and the OTLP ones
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
// that OpenTelemetry SDKs of every language read. Serve reads them; a
// runner in another language reads the OTEL_ ones with its own SDK.
const (
	// EnvTracesExporter is OTEL_TRACES_EXPORTER: otlp, file or none.
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	// EnvTracesFile is the file the file exporter appends to.
	EnvTracesFile = "DEX_TRACES_FILE"
	// EnvTracesHeadersEnv names the variable that holds the OTLP headers;
	// the plugin sees it only when its config grants it (env).
	EnvTracesHeadersEnv = "DEX_TRACES_HEADERS_ENV"
	// EnvTracesSampleRatio is the worker's sample ratio.
	EnvTracesSampleRatio = "DEX_TRACES_SAMPLE_RATIO"
	EnvOTLPEndpoint      = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvOTLPProtocol      = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName       = "OTEL_SERVICE_NAME"
)

// serveTracing starts the plugin's tracer from the environment the worker
// set: the gRPC server then continues the worker's trace (otelgrpc), and
// the global tracer provider is the plugin's, so a runner's own
// instrumentation nests under the worker's call. It returns no option when
// the worker does not trace, or when the tracer cannot start (the runner
// works untraced, and says so on stderr).
func serveTracing() ([]grpc.ServerOption, func()) {
	exporter := os.Getenv(EnvTracesExporter)
	if exporter == "" || exporter == tracing.ExporterNone {
		return nil, func() {}
	}
	o := tracing.Options{
		Exporter:    exporter,
		Endpoint:    os.Getenv(EnvOTLPEndpoint),
		Protocol:    ProtocolOf(os.Getenv(EnvOTLPProtocol)),
		File:        os.Getenv(EnvTracesFile),
		ServiceName: os.Getenv(EnvServiceName),
	}
	if r, err := strconv.ParseFloat(os.Getenv(EnvTracesSampleRatio), 64); err == nil {
		o.SampleRatio = r
	}
	if name := os.Getenv(EnvTracesHeadersEnv); name != "" {
		o.Headers = parseHeaders(os.Getenv(name))
	}
	t, err := tracing.New(context.Background(), o)
	if err != nil || t == nil {
		if err != nil {
			os.Stderr.WriteString("runner: tracing is off: " + err.Error() + "\n")
		}
		return nil, func() {}
	}
	otel.SetTracerProvider(t.Provider())
	otel.SetTextMapPropagator(tracing.Propagator)
	opt := grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tracing.ChildOnly(t.Provider())), otelgrpc.WithPropagators(tracing.Propagator)))
	return []grpc.ServerOption{opt}, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = t.Shutdown(ctx)
	}
}

// ProtocolOf maps an OTEL_EXPORTER_OTLP_PROTOCOL value to grpc or http.
func ProtocolOf(p string) string {
	if strings.HasPrefix(p, "http") {
		return tracing.ProtocolHTTP
	}
	return tracing.ProtocolGRPC
}

// parseHeaders reads key=value pairs separated by commas; malformed pairs
// are skipped.
func parseHeaders(s string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(pair, "="); ok && strings.TrimSpace(k) != "" {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}
