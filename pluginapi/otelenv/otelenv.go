// Package otelenv starts a runner's OpenTelemetry tracer provider from the
// environment the worker gives a plugin when it traces, so the runner's
// spans join the turns' traces and go where the worker's go.
//
// Package pluginapi itself uses only the OpenTelemetry API: a runner that
// does not import otelenv links no exporter and emits no span. A runner
// that wants its spans exported starts the provider and hands it to Serve:
//
//	tp, err := otelenv.Start(ctx) // nil when the worker does not trace
//	if err != nil {
//		log.Print(err) // the runner works untraced
//	}
//	if tp != nil {
//		defer tp.Shutdown(context.Background())
//	}
//	pluginapi.Serve(pluginapi.ServeOptions{Runner: r, TracerProvider: tp})
//
// A runner in another language reads the OTEL_ variables with its own SDK:
// they are the standard ones.
package otelenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The environment variables the worker sets on a runner plugin when it
// traces, besides the standard OTEL_ ones.
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

// The exporters.
const (
	ExporterNone = "none"
	ExporterOTLP = "otlp"
	ExporterFile = "file"
)

// The OTLP protocols.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http"
)

// The span attributes SessionProcessor sets, and the baggage member it
// reads them from.
const (
	KeyConversationID = "gen_ai.conversation.id"
	KeySessionID      = "session.id"
	SessionBaggage    = "dex.session.id"
)

// Options say where spans go.
type Options struct {
	// Exporter is otlp, file, or none ("" too).
	Exporter string
	// Endpoint is the OTLP collector's URL (see Endpoint), Protocol grpc
	// (the default) or http, and Headers go with every export.
	Endpoint string
	Protocol string
	Headers  map[string]string
	// File is where the file exporter appends JSON lines.
	File string
	// ServiceName goes on the resource.
	ServiceName string
	// SampleRatio is the share of traces sampled, 0 < r <= 1; 0 means 1.
	// A span under a parent follows the parent's decision.
	SampleRatio float64
}

// FromEnv reads Options from the environment the worker sets.
func FromEnv() Options {
	o := Options{
		Exporter:    os.Getenv(EnvTracesExporter),
		Endpoint:    os.Getenv(EnvOTLPEndpoint),
		Protocol:    ProtocolOf(os.Getenv(EnvOTLPProtocol)),
		File:        os.Getenv(EnvTracesFile),
		ServiceName: os.Getenv(EnvServiceName),
	}
	if r, err := strconv.ParseFloat(os.Getenv(EnvTracesSampleRatio), 64); err == nil {
		o.SampleRatio = r
	}
	if name := os.Getenv(EnvTracesHeadersEnv); name != "" {
		o.Headers = ParseHeaders(os.Getenv(name))
	}
	return o
}

// Provider returns the tracer provider the environment asks for, or nil
// when it asks for none. When the provider cannot start (a malformed
// endpoint, a trace file it cannot open), it says why on stderr and
// returns nil: the runner works untraced.
func Provider() trace.TracerProvider {
	tp, err := Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner: tracing is off:", err)
		return nil
	}
	if tp == nil {
		return nil
	}
	return tp
}

// Start returns the tracer provider the environment asks for, or nil (and
// no error) when it asks for none. Shut it down before the process exits so
// that the last spans are exported.
func Start(ctx context.Context) (*sdktrace.TracerProvider, error) {
	return New(ctx, FromEnv())
}

// New returns a tracer provider that exports as o says, or nil (and no
// error) for no exporter. Its spans started under a context whose baggage
// names a session carry the session's ID (SessionProcessor).
func New(ctx context.Context, o Options) (*sdktrace.TracerProvider, error) {
	if o.Exporter == "" || o.Exporter == ExporterNone {
		return nil, nil
	}
	exp, err := NewExporter(ctx, o)
	if err != nil {
		return nil, err
	}
	name := o.ServiceName
	if name == "" {
		name = "dex-runner"
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", name)))
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	ratio := o.SampleRatio
	if ratio <= 0 || ratio > 1 {
		ratio = 1
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithSpanProcessor(SessionProcessor{}),
		sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBatchTimeout(time.Second))),
	), nil
}

// NewExporter starts the otlp or file exporter o names.
func NewExporter(ctx context.Context, o Options) (sdktrace.SpanExporter, error) {
	switch o.Exporter {
	case ExporterOTLP:
		endpoint, err := Endpoint(o.Protocol, o.Endpoint)
		if err != nil {
			return nil, err
		}
		if o.Protocol == ProtocolHTTP {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithHeaders(o.Headers))
		}
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint), otlptracegrpc.WithHeaders(o.Headers))
	case ExporterFile:
		if o.File == "" {
			return nil, errors.New("tracing: the file exporter needs a file")
		}
		f, err := os.OpenFile(o.File, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("tracing: open the trace file: %w", err)
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
		if err != nil {
			f.Close()
			return nil, err
		}
		return closingExporter{exp, f}, nil
	}
	return nil, fmt.Errorf("tracing: unknown exporter %q (want otlp, file or none)", o.Exporter)
}

// closingExporter closes the trace file after the last export.
type closingExporter struct {
	sdktrace.SpanExporter
	f *os.File
}

func (c closingExporter) Shutdown(ctx context.Context) error {
	err := c.SpanExporter.Shutdown(ctx)
	return errors.Join(err, c.f.Close())
}

// Endpoint returns the OTLP endpoint URL for protocol, with the default
// when endpoint is empty and /v1/traces added for http; an error names an
// endpoint that is no http:// or https:// URL.
func Endpoint(protocol, endpoint string) (string, error) {
	if endpoint == "" {
		endpoint = "http://localhost:4317"
		if protocol == ProtocolHTTP {
			endpoint = "http://localhost:4318"
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("tracing: endpoint %q is not an http:// or https:// URL (such as http://otel-collector:4317)", endpoint)
	}
	if protocol == ProtocolHTTP && (u.Path == "" || u.Path == "/") {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// ProtocolOf maps an OTEL_EXPORTER_OTLP_PROTOCOL value to grpc or http.
func ProtocolOf(p string) string {
	if strings.HasPrefix(p, "http") {
		return ProtocolHTTP
	}
	return ProtocolGRPC
}

// ParseHeaders reads key=value pairs separated by commas; malformed pairs
// are skipped.
func ParseHeaders(s string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(pair, "="); ok && strings.TrimSpace(k) != "" {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// SessionProcessor sets gen_ai.conversation.id and session.id on every span
// started under a context whose baggage names the session.
type SessionProcessor struct{}

func (SessionProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	if id := baggage.FromContext(parent).Member(SessionBaggage).Value(); id != "" {
		s.SetAttributes(attribute.String(KeyConversationID, id), attribute.String(KeySessionID, id))
	}
}
func (SessionProcessor) OnEnd(sdktrace.ReadOnlySpan)      {}
func (SessionProcessor) Shutdown(context.Context) error   { return nil }
func (SessionProcessor) ForceFlush(context.Context) error { return nil }
