package tracing

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ConsoleExporter prints each turn's span tree when its invoke_agent root
// arrives (dev --trace). It holds at most maxConsoleTraces traces of up to
// maxConsoleSpans spans while they wait for their root; spans of traces
// with no turn (a session's start, an update) are dropped after a minute.
type ConsoleExporter struct {
	mu     sync.Mutex
	w      io.Writer
	traces map[trace.TraceID]*pendingTrace
}

type pendingTrace struct {
	first time.Time
	spans []sdktrace.ReadOnlySpan
}

const (
	maxConsoleTraces = 256
	maxConsoleSpans  = 2048
	consoleTraceTTL  = time.Minute
)

// NewConsoleExporter returns a ConsoleExporter that prints to w.
func NewConsoleExporter(w io.Writer) *ConsoleExporter {
	return &ConsoleExporter{w: w, traces: map[trace.TraceID]*pendingTrace{}}
}

// ExportSpans implements sdktrace.SpanExporter.
func (c *ConsoleExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for id, p := range c.traces {
		if now.Sub(p.first) > consoleTraceTTL {
			delete(c.traces, id)
		}
	}
	var done []trace.TraceID
	for _, s := range spans {
		id := s.SpanContext().TraceID()
		p := c.traces[id]
		if p == nil {
			if len(c.traces) >= maxConsoleTraces {
				continue
			}
			p = &pendingTrace{first: now}
			c.traces[id] = p
		}
		if len(p.spans) < maxConsoleSpans {
			p.spans = append(p.spans, s)
		}
		if !s.Parent().IsValid() && strings.HasPrefix(s.Name(), OperationInvokeAgent) {
			done = append(done, id)
		}
	}
	for _, id := range done {
		if p := c.traces[id]; p != nil {
			delete(c.traces, id)
			fmt.Fprint(c.w, FormatTree(p.spans))
		}
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (c *ConsoleExporter) Shutdown(context.Context) error { return nil }

// FormatTree prints spans as a tree under their roots, children in start
// order, with each span's duration and its main attributes.
func FormatTree(spans []sdktrace.ReadOnlySpan) string {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() && ids[p.SpanID()] {
			children[p.SpanID()] = append(children[p.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(&b, "%s%s  %s%s\n", strings.Repeat("  ", depth+1), s.Name(), s.EndTime().Sub(s.StartTime()).Round(time.Millisecond), summary(s))
		kids := children[s.SpanContext().SpanID()]
		slices.SortStableFunc(kids, byStart)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.SortStableFunc(roots, byStart)
	for _, r := range roots {
		fmt.Fprintf(&b, "trace %s\n", r.SpanContext().TraceID())
		walk(r, 0)
	}
	return b.String()
}

// summary is the attributes worth a glance.
func summary(s sdktrace.ReadOnlySpan) string {
	var parts []string
	for _, kv := range s.Attributes() {
		switch string(kv.Key) {
		case KeyTurnID, KeyTurnOutcome, KeyResponseModel, KeyInputTokens, KeyOutputTokens,
			KeyToolCallID, KeyToolEffect, KeyToolCallStatus, KeyStepAttempt, KeyErrorType:
			parts = append(parts, shortKey(string(kv.Key))+"="+kv.Value.Emit())
		}
	}
	if s.Status().Code == codes.Error {
		parts = append(parts, "ERROR "+s.Status().Description)
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, " ")
}

// shortKey drops the namespaces of a key for the tree: turn.id,
// tool_call.status, usage.input_tokens.
func shortKey(k string) string {
	for _, p := range []string{"gen_ai.", "dex.agent.", "dex."} {
		if strings.HasPrefix(k, p) {
			return strings.TrimPrefix(k, p)
		}
	}
	return k
}
