// Package temporaltrace joins the Temporal SDK's OpenTelemetry interceptor
// (go.temporal.io/sdk/contrib/opentelemetry) to the worker's turn traces.
//
// The interceptor traces the client's calls (StartWorkflow, UpdateWorkflow)
// and, on the worker, each workflow run, update and Step (StartActivity in
// workflow code, RunActivity where the Step runs). A session lives for
// months, so its Steps do not hang under the run's span: workflow code
// starts each Step of a turn under the turn's root (tracing.TurnRoot), and
// the Step's header carries that root, so the Step's spans need no span of
// the workflow worker that scheduled it (which a SIGKILL may have lost).
//
//	tr, _ := temporaltrace.New(t)
//	c, _ := client.Dial(client.Options{Interceptors: tr.Interceptors()}) // its workers take them too
//	sessionflow.Runtime{Tracer: tr}
package temporaltrace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	tempotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/internal/tracing"
)

// headerKey is the Temporal header field of the span context, the one all
// SDKs use.
const headerKey = "_tracer-data"

// The interceptor's tags that name the workflow: the session ID.
const workflowIDTag = "temporalWorkflowID"

type spanKey struct{}

type turnKey struct{}

// Tracing is the Temporal side of a tracing.Tracer. A nil *Tracing traces
// nothing.
type Tracing struct {
	t      *tracing.Tracer
	tracer interceptor.Tracer
	ic     interceptor.Interceptor
}

// New returns the Temporal glue of t; nil for a nil t.
func New(t *tracing.Tracer) (*Tracing, error) {
	if t == nil {
		return nil, nil
	}
	tr, err := tempotel.NewTracer(tempotel.TracerOptions{
		Tracer:              t.Provider().Tracer("temporal-sdk-go"),
		TextMapPropagator:   tracing.Propagator,
		SpanContextKey:      spanKey{},
		HeaderKey:           headerKey,
		DisableQueryTracing: true, // the API polls snapshots; one span each is noise
		SpanStarter:         startSpan,
	})
	if err != nil {
		return nil, err
	}
	return &Tracing{t: t, tracer: tr, ic: interceptor.NewTracingInterceptor(tr)}, nil
}

// startSpan starts the interceptor's spans; each one that names a
// workflow also gets gen_ai.conversation.id and session.id.
func startSpan(ctx context.Context, t trace.Tracer, name string, opts ...trace.SpanStartOption) trace.Span {
	_, s := t.Start(ctx, name, opts...)
	return sessionSpan{s}
}

type sessionSpan struct{ trace.Span }

func (s sessionSpan) SetAttributes(kv ...attribute.KeyValue) {
	for _, a := range kv {
		if a.Key == workflowIDTag {
			kv = append(kv, attribute.String(tracing.KeyConversationID, a.Value.AsString()), attribute.String(tracing.KeySessionID, a.Value.AsString()))
			break
		}
	}
	s.Span.SetAttributes(kv...)
}

// Interceptors are the client's interceptors; a worker made from the
// client takes them too. The first gives a turn's Steps the turn's root:
// on the outbound side it runs after the tracing interceptor (outbound
// calls go through the interceptors in reverse), so the root it writes
// into a Step's header replaces the StartActivity span there.
func (t *Tracing) Interceptors() []interceptor.ClientInterceptor {
	if t == nil {
		return nil
	}
	return []interceptor.ClientInterceptor{&turnInterceptor{t: t}, replayGuard{t.ic}}
}

// replayGuard keeps the tracing interceptor's workflow spans (RunWorkflow,
// HandleUpdate, HandleSignal) out of replays: it starts them whenever
// workflow code runs, so a worker that replays a long session's history
// (after a restart, or a cache eviction) would export every update's span
// again.
type replayGuard struct{ interceptor.Interceptor }

func (g replayGuard) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &guardedInbound{WorkflowInboundInterceptor: g.Interceptor.InterceptWorkflow(ctx, next), next: next}
}

// guardedInbound is the tracing interceptor's inbound side, bypassed
// during replay. Init still goes through it, so Steps started after the
// replay are traced.
type guardedInbound struct {
	interceptor.WorkflowInboundInterceptor
	next interceptor.WorkflowInboundInterceptor
}

func (g *guardedInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	if workflow.IsReplaying(ctx) {
		return g.next.ExecuteWorkflow(ctx, in)
	}
	return g.WorkflowInboundInterceptor.ExecuteWorkflow(ctx, in)
}

func (g *guardedInbound) HandleSignal(ctx workflow.Context, in *interceptor.HandleSignalInput) error {
	if workflow.IsReplaying(ctx) {
		return g.next.HandleSignal(ctx, in)
	}
	return g.WorkflowInboundInterceptor.HandleSignal(ctx, in)
}

func (g *guardedInbound) ExecuteUpdate(ctx workflow.Context, in *interceptor.UpdateInput) (any, error) {
	if workflow.IsReplaying(ctx) {
		return g.next.ExecuteUpdate(ctx, in)
	}
	return g.WorkflowInboundInterceptor.ExecuteUpdate(ctx, in)
}

func (g *guardedInbound) ValidateUpdate(ctx workflow.Context, in *interceptor.UpdateInput) error {
	if workflow.IsReplaying(ctx) {
		return g.next.ValidateUpdate(ctx, in)
	}
	return g.WorkflowInboundInterceptor.ValidateUpdate(ctx, in)
}

// WithTurn returns ctx under which the Steps workflow code starts join
// the turn's trace: the interceptor's StartActivity span is a child of the
// turn's root, and the Step's header carries the root itself.
func (t *Tracing) WithTurn(ctx workflow.Context, sessionID, firstRunID, turnID string) workflow.Context {
	if t == nil {
		return ctx
	}
	root := tracing.TurnRoot(sessionID, firstRunID, turnID, t.t.Ratio())
	gctx := trace.ContextWithSpanContext(tracing.WithSession(context.Background(), sessionID), root)
	span := t.tracer.SpanFromContext(gctx)
	if span == nil {
		return ctx
	}
	ctx = workflow.WithValue(ctx, spanKey{}, span)
	return workflow.WithValue(ctx, turnKey{}, span)
}

// TurnEnded writes the turn's root span.
func (t *Tracing) TurnEnded(tr tracing.Turn) {
	if t == nil {
		return
	}
	t.t.TurnEnded(tr)
}

// turnInterceptor writes the turn's root into the header of the Steps
// started under WithTurn, over the StartActivity span the tracing
// interceptor wrote there.
type turnInterceptor struct {
	interceptor.InterceptorBase
	t *Tracing
}

func (i *turnInterceptor) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &turnInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, t: i.t}
}

type turnInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	t *Tracing
}

func (w *turnInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return w.Next.Init(&turnOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, t: w.t})
}

type turnOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	t *Tracing
}

func (o *turnOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.writeRoot(ctx)
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *turnOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.writeRoot(ctx)
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *turnOutbound) writeRoot(ctx workflow.Context) {
	span, _ := ctx.Value(turnKey{}).(interceptor.TracerSpan)
	if span == nil {
		return
	}
	header := interceptor.WorkflowHeader(ctx)
	if header == nil {
		return
	}
	m, err := o.t.tracer.MarshalSpan(span)
	if err != nil {
		return
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(m)
	if err != nil {
		return
	}
	header[headerKey] = p
}
