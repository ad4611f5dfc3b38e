// Package tracing writes the worker's OpenTelemetry traces: one trace per
// turn, rooted at an invoke_agent span, with a chat span per model call and
// an execute_tool span per tool call, and the Temporal SDK's own spans
// (go.temporal.io/sdk/contrib/opentelemetry) for the Steps between them.
//
// A turn outlives the worker process that started it, so its root cannot
// stay open: the turn's trace ID and root span ID are derived from the
// session ID, the first run ID and the turn ID, so every worker that runs
// one of the turn's Steps, and every replay, parents its spans on the same
// root; the root itself is written when the turn ends, with the turn's
// start and end as its explicit timestamps.
//
//	t, _ := tracing.New(ctx, tracing.Options{Exporter: tracing.ExporterOTLP, Endpoint: "http://collector:4317"})
//	defer t.Shutdown(ctx)
//	ctx, end := t.StartTool(ctx, tracing.Tool{Name: "refund_order"})
//	defer end("succeeded", "", nil)
//
// A nil *Tracer traces nothing. No tracing failure fails a Step: every call
// into OpenTelemetry is guarded, and a failure is logged (the first one at
// warning level) and that span skipped.
package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dex-agents/dex-agent-worker/pluginapi/otelenv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// The exporters: the runner SDK's (package otelenv), and the console.
const (
	ExporterNone = otelenv.ExporterNone
	ExporterOTLP = otelenv.ExporterOTLP
	ExporterFile = otelenv.ExporterFile
	// ExporterConsole prints each turn's span tree when the turn ends
	// (dev --trace).
	ExporterConsole = "console"
)

// The OTLP protocols.
const (
	ProtocolGRPC = otelenv.ProtocolGRPC
	ProtocolHTTP = otelenv.ProtocolHTTP
)

// ScopeName is the instrumentation scope of the worker's own spans.
const ScopeName = "github.com/dex-agents/dex-agent-worker"

// Options configure a Tracer.
type Options struct {
	// Exporter is one of the Exporter constants; "" and "none" trace
	// nothing (New returns nil).
	Exporter string
	// Endpoint is the OTLP collector's URL: http://host:port is plain
	// text, https:// uses TLS. Default http://localhost:4317 (grpc) or
	// http://localhost:4318 (http).
	Endpoint string
	// Protocol is grpc (default) or http.
	Protocol string
	// Headers go with every OTLP export (an API key of a tracing backend).
	Headers map[string]string
	// File is where the file exporter appends its JSON lines.
	File string
	// Writer is where the console exporter prints (default os.Stderr).
	Writer io.Writer
	// SampleRatio is the share of turns traced, 0 < r <= 1; 0 means 1.
	// The decision follows from the trace ID, so every worker of a turn
	// makes the same one.
	SampleRatio float64
	// CaptureContent puts tool arguments and results on the spans.
	CaptureContent bool
	// ServiceName and ServiceVersion go on the resource; the name
	// defaults to dex-agent-worker.
	ServiceName, ServiceVersion string
	// BatchTimeout is how long ended spans wait before they are exported;
	// default 1s (a SIGKILLed process loses what it had not exported).
	BatchTimeout time.Duration
	// Logger gets tracing failures (nil: none).
	Logger *slog.Logger
	// SpanExporter, when set, takes the spans instead of Exporter's (an
	// exporter of the embedding program, or of a test).
	SpanExporter sdktrace.SpanExporter

	// processor runs before the exporter's (tests).
	processor sdktrace.SpanProcessor
}

// Tracer writes one process's spans. Its methods are safe for concurrent
// use, and a nil *Tracer traces nothing.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	capture  bool
	ratio    float64
	log      *slog.Logger
	failures atomic.Int64
	service  string

	// ended holds the turn roots this process wrote, so a workflow task
	// that runs again here (after a failed completion) does not write one
	// twice; a task run again on another worker still can.
	endedMu sync.Mutex
	ended   map[trace.SpanID]struct{}
}

// maxEndedTurns bounds Tracer.ended.
const maxEndedTurns = 10_000

// New starts the exporter Options name and returns the Tracer; nil (and
// no error) when the exporter is none.
func New(ctx context.Context, o Options) (*Tracer, error) {
	exp := o.SpanExporter
	if exp == nil {
		switch o.Exporter {
		case "", ExporterNone:
			return nil, nil
		}
		var err error
		if exp, err = exporter(ctx, o); err != nil {
			return nil, err
		}
	}
	name := o.ServiceName
	if name == "" {
		name = "dex-agent-worker"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.ServiceVersion))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	ratio := o.SampleRatio
	if ratio <= 0 || ratio > 1 {
		ratio = 1
	}
	batch := o.BatchTimeout
	if batch <= 0 {
		batch = time.Second
	}
	t := &Tracer{capture: o.CaptureContent, ratio: ratio, log: o.Logger, service: name}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	popts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithIDGenerator(idGenerator{}),
		sdktrace.WithSpanProcessor(SessionProcessor{}),
	}
	if o.processor != nil {
		popts = append(popts, sdktrace.WithSpanProcessor(o.processor))
	}
	popts = append(popts, sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBatchTimeout(batch))))
	t.provider = sdktrace.NewTracerProvider(popts...)
	t.tracer = t.provider.Tracer(ScopeName, trace.WithInstrumentationVersion(o.ServiceVersion))
	return t, nil
}

func exporter(ctx context.Context, o Options) (sdktrace.SpanExporter, error) {
	if o.Exporter == ExporterConsole {
		w := o.Writer
		if w == nil {
			w = os.Stderr
		}
		return NewConsoleExporter(w), nil
	}
	return otelenv.NewExporter(ctx, otelenv.Options{Exporter: o.Exporter, Endpoint: o.Endpoint, Protocol: o.Protocol, Headers: o.Headers, File: o.File})
}

// Endpoint returns the OTLP endpoint URL for protocol (otelenv.Endpoint).
func Endpoint(protocol, endpoint string) (string, error) { return otelenv.Endpoint(protocol, endpoint) }

// Shutdown exports what is left and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// ForceFlush exports every ended span now.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Provider is the tracer provider (a no-op one for a nil Tracer), for
// instrumentation such as otelgrpc.
func (t *Tracer) Provider() trace.TracerProvider {
	if t == nil {
		return noop.NewTracerProvider()
	}
	return t.provider
}

// Propagator is the W3C trace context and baggage propagator every hop
// (Temporal headers, gRPC metadata, MCP _meta) uses.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// guard recovers a panic of OpenTelemetry code (a span processor, an
// exporter) and logs it: the first at warning level with its stack, later
// ones at debug level.
func (t *Tracer) guard(what string) {
	if r := recover(); r != nil {
		if t.failures.Add(1) == 1 {
			t.log.Warn("tracing failed; the span is skipped, the Step goes on", "span", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			return
		}
		t.log.Debug("tracing failed; the span is skipped", "span", what, "panic", fmt.Sprint(r))
	}
}

// Failures counts the tracing failures guard caught.
func (t *Tracer) Failures() int64 {
	if t == nil {
		return 0
	}
	return t.failures.Load()
}

// TurnRoot returns the span context of a turn's invoke_agent root. It
// follows from the session ID, the run ID that started the session's
// chain of runs, and the turn ID alone, so every process derives the same
// one, on every replay; sampled follows the ratio, from the trace ID as
// the SDK's ratio sampler decides.
func TurnRoot(sessionID, firstRunID, turnID string, ratio float64) trace.SpanContext {
	h := sha256.Sum256([]byte("dex-agent-worker/turn\x00" + sessionID + "\x00" + firstRunID + "\x00" + turnID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], h[:16])
	copy(sid[:], h[16:24])
	if !tid.IsValid() {
		tid[15] = 1
	}
	if !sid.IsValid() {
		sid[7] = 1
	}
	var flags trace.TraceFlags
	if ratio <= 0 || ratio >= 1 || binary.BigEndian.Uint64(tid[8:16])>>1 < uint64(ratio*(1<<63)) {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
}

// Ratio is the Tracer's sample ratio (1 for a nil Tracer).
func (t *Tracer) Ratio() float64 {
	if t == nil {
		return 1
	}
	return t.ratio
}

// idGenerator is random, except for the root of a turn, whose IDs the
// context carries.
type idGenerator struct{}

type forcedKey struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(forcedKey{}).(trace.SpanContext); ok {
		return sc.TraceID(), sc.SpanID()
	}
	var tid trace.TraceID
	binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
	binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	return tid, newSpanID()
}

func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// The session's baggage member: every span started under it gets
// gen_ai.conversation.id and session.id, in this process and in the
// runner plugins its gRPC calls reach.
const sessionBaggage = otelenv.SessionBaggage

// WithSession returns ctx carrying the session ID as baggage.
func WithSession(ctx context.Context, sessionID string) context.Context {
	m, err := baggage.NewMemberRaw(sessionBaggage, sessionID)
	if err != nil {
		return ctx
	}
	b, err := baggage.FromContext(ctx).SetMember(m)
	if err != nil {
		return ctx
	}
	return baggage.ContextWithBaggage(ctx, b)
}

// SessionProcessor sets gen_ai.conversation.id and session.id on every span
// started under a context whose baggage names the session.
type SessionProcessor = otelenv.SessionProcessor

// ErrorType names an error for error.type: its Temporal application error
// type when it has one, else its Go type.
func ErrorType(err error) string {
	var typed interface{ Type() string }
	if errors.As(err, &typed) && typed.Type() != "" {
		return typed.Type()
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
}

// fail marks a span failed with err.
func fail(s trace.Span, err error) {
	s.SetStatus(codes.Error, err.Error())
	s.SetAttributes(attribute.String(KeyErrorType, ErrorType(err)))
	s.RecordError(err)
}

// ChildOnly wraps tp so that its tracers start spans only under a valid
// parent: instrumentation such as otelgrpc then traces the calls a Step
// makes, and not the ones outside any trace (a plugin's launch, a health
// check).
func ChildOnly(tp trace.TracerProvider) trace.TracerProvider { return childOnlyProvider{tp: tp} }

type childOnlyProvider struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (p childOnlyProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childOnlyTracer{t: p.tp.Tracer(name, opts...)}
}

type childOnlyTracer struct {
	embedded.Tracer
	t trace.Tracer
}

func (t childOnlyTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.t.Start(ctx, name, opts...)
}
