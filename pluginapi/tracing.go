package pluginapi

import (
	"context"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"google.golang.org/grpc"
)

// propagator reads the worker's trace context and baggage (W3C) from each
// call's metadata.
var propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// serveTracing returns the gRPC option that continues the worker's trace
// on each call, with tp (the global provider when nil), and makes tp and
// the W3C propagator global, so spans a Runner starts from its methods'
// contexts, or its HTTP client's instrumentation, join the turn's trace.
// With no provider set anywhere, the API's no-op provider traces nothing.
func serveTracing(tp trace.TracerProvider) []grpc.ServerOption {
	if tp == nil {
		tp = otel.GetTracerProvider()
	} else {
		otel.SetTracerProvider(tp)
	}
	otel.SetTextMapPropagator(propagator)
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(childOnly(tp)), otelgrpc.WithPropagators(propagator)))}
}

// childOnly wraps tp so that its tracers start spans only under a valid
// parent: calls outside any trace (the host's health checks, Info) are not
// traced.
func childOnly(tp trace.TracerProvider) trace.TracerProvider { return childOnlyProvider{tp: tp} }

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
