package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/tracing/otlptest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// waitForTurnTrace waits until the receiver holds the invoke_agent root of
// the session's turn and every span cond asks for, and returns the
// turn's spans.
func waitForTurnTrace(t *testing.T, r *otlptest.Receiver, sessionID, turnID string, cond func([]otlptest.Span) bool) []otlptest.Span {
	t.Helper()
	var spans []otlptest.Span
	err := agenttest.WaitFor(ctx(t), "the trace of "+sessionID+" "+turnID, time.Minute, func() (bool, error) {
		for _, s := range r.Spans() {
			if s.ParentID == "" && strings.HasPrefix(s.Name, "invoke_agent") &&
				s.Attributes["gen_ai.conversation.id"] == sessionID && s.Attributes["dex.agent.turn.id"] == turnID {
				spans = r.Trace(s.TraceID)
				return cond(spans), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v; received:\n%s", err, dumpSpans(r.Spans()))
	}
	return spans
}

func named(spans []otlptest.Span, prefix string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func byID(spans []otlptest.Span) map[string]otlptest.Span {
	m := map[string]otlptest.Span{}
	for _, s := range spans {
		m[s.SpanID] = s
	}
	return m
}

func dumpSpans(spans []otlptest.Span) string {
	sort.Slice(spans, func(i, j int) bool { return spans[i].Start.Before(spans[j].Start) })
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s %s parent=%s %s [%s] turn=%s attempt=%s\n", s.TraceID[:8], s.SpanID, s.ParentID, s.Name, s.Service,
			s.Attributes["dex.agent.turn.id"], s.Attributes["dex.step.attempt"])
	}
	return b.String()
}

// TestTraceOfAnOrdersTurnWithAnApproval runs "refund order 7" on the orders
// demo with traces going to an in-process OTLP receiver: the worker and its
// runner plugin both export there. The turn, approval included, is one
// well-formed trace under its invoke_agent root, with a chat span per model
// call and an execute_tool span per tool call carrying their gen_ai
// attributes, and the runner plugin's server spans parented across the
// gRPC hop.
func TestTraceOfAnOrdersTurnWithAnApproval(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	r := otlptest.Start(t)
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	s := agenttest.NewStack(t, fmt.Sprintf(`
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
      request_return_label: {effect: idempotent_write}
telemetry:
  traces: {exporter: otlp, endpoint: "%s"}
  capture_content: true
`, plugin, r.GRPCEndpoint()))
	s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: "OrdersAgent", InitialMessage: "refund order 7"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the answer", id, idleWithAnswer)
	if !strings.Contains(lastText(snap), "refund") {
		t.Fatalf("answer %q", lastText(snap))
	}

	spans := waitForTurnTrace(t, r, id, "turn-1", func(spans []otlptest.Span) bool {
		models, tools := 0, 0
		for _, s := range spans {
			if s.Service == "dex-runner-orders" && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				switch {
				case strings.HasSuffix(s.Name, "/RunModelStep"):
					models++
				case strings.HasSuffix(s.Name, "/ExecuteDeferredToolCall"):
					tools++
				}
			}
		}
		// Three model calls and two tool calls reach the plugin (counted
		// by name: the host's Info probes reach it too).
		return len(named(spans, "chat")) >= 3 && len(named(spans, "execute_tool")) >= 2 && models >= 3 && tools >= 2
	})
	if msg := otlptest.WellFormed(spans); msg != "" {
		t.Fatalf("%s:\n%s", msg, dumpSpans(spans))
	}
	ids := byID(spans)
	root := named(spans, "invoke_agent")[0]
	if root.Name != "invoke_agent orders" || root.Kind != tracepb.Span_SPAN_KIND_INTERNAL ||
		root.Attributes["gen_ai.operation.name"] != "invoke_agent" || root.Attributes["gen_ai.agent.name"] != "orders" ||
		root.Attributes["dex.agent.turn.outcome"] != "completed" {
		t.Errorf("root = %+v", root)
	}
	// The root covers the turn: every Step span lies within it.
	for _, s := range spans {
		if s.Start.Before(root.Start) || s.End.After(root.End.Add(time.Millisecond)) {
			if s.Service == "dex-agent-worker" && (strings.HasPrefix(s.Name, "chat") || strings.HasPrefix(s.Name, "execute_tool")) {
				t.Errorf("%s [%s, %s] lies outside the root [%s, %s]", s.Name, s.Start, s.End, root.Start, root.End)
			}
		}
	}
	// Every span says which session it belongs to, in both processes.
	for _, s := range spans {
		if s.Attributes["gen_ai.conversation.id"] != id {
			t.Errorf("%s [%s] has gen_ai.conversation.id %q, want %q", s.Name, s.Service, s.Attributes["gen_ai.conversation.id"], id)
		}
	}
	chats := named(spans, "chat")
	if len(chats) != 3 {
		t.Errorf("%d chat spans, want 3 (lookup, refund, answer):\n%s", len(chats), dumpSpans(spans))
	}
	for _, c := range chats {
		a := c.Attributes
		if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || a["gen_ai.operation.name"] != "chat" || a["gen_ai.provider.name"] != "scripted" ||
			a["gen_ai.request.model"] == "" || c.Name != "chat "+a["gen_ai.request.model"] || a["gen_ai.usage.input_tokens"] == "" ||
			a["dex.step.type"] != "RunModel" || a["dex.step.attempt"] != "1" || a["dex.agent.turn.id"] != "turn-1" {
			t.Errorf("chat span %s: kind %v, attributes %v", c.Name, c.Kind, a)
		}
	}
	tools := map[string]otlptest.Span{}
	for _, s := range named(spans, "execute_tool") {
		tools[s.Attributes["gen_ai.tool.name"]] = s
	}
	for tool, effect := range map[string]string{"lookup_order": "read", "refund_order": "non_idempotent_write"} {
		s, ok := tools[tool]
		if !ok {
			t.Errorf("no execute_tool span for %s", tool)
			continue
		}
		a := s.Attributes
		if s.Name != "execute_tool "+tool || a["dex.agent.tool.effect"] != effect || a["dex.agent.tool_call.status"] != "succeeded" ||
			a["gen_ai.tool.call.id"] == "" || !strings.Contains(a["gen_ai.tool.call.arguments"], `"7"`) || a["gen_ai.tool.call.result"] == "" {
			t.Errorf("execute_tool span of %s: %v", tool, a)
		}
		// The gRPC hop: the worker's client span under the tool's span, and
		// the plugin's server span under that.
		var hop bool
		for _, c := range spans {
			if c.ParentID != s.SpanID || c.Kind != tracepb.Span_SPAN_KIND_CLIENT || !strings.Contains(c.Name, "ExecuteDeferredToolCall") {
				continue
			}
			for _, srv := range spans {
				if srv.ParentID == c.SpanID && srv.Service == "dex-runner-orders" && srv.Kind == tracepb.Span_SPAN_KIND_SERVER {
					hop = true
				}
			}
		}
		if !hop {
			t.Errorf("no plugin server span under a client span under execute_tool %s:\n%s", tool, dumpSpans(spans))
		}
	}
	// The Temporal interceptor's spans are in the turn's trace too: each
	// Step's RunActivity hangs from the root directly, so it needs no span
	// of the worker that scheduled it.
	runs := named(spans, "RunActivity:")
	if len(runs) < 5 {
		t.Errorf("%d RunActivity spans, want >= 5", len(runs))
	}
	for _, s := range runs {
		if s.ParentID != root.SpanID {
			t.Errorf("%s's parent is %s (%s), want the root", s.Name, s.ParentID, ids[s.ParentID].Name)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("the turn's trace:\n%s", dumpSpans(spans))
	}
}

// TestTraceOfATurnWhoseWorkerWasKilled SIGKILLs the worker while its model
// call runs; a second worker retries the call and finishes the turn. The
// turn's trace is still well formed: one root, written by the worker that
// ended the turn, every span's parent in the trace, and a chat span for the
// attempt that answered only.
func TestTraceOfATurnWhoseWorkerWasKilled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	r := otlptest.Start(t)
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	s := agenttest.NewStack(t, testConfig(plugin)+fmt.Sprintf(`
telemetry:
  traces: {exporter: otlp, endpoint: "%s", protocol: http}
`, strings.TrimSuffix(r.HTTPEndpoint(), "/v1/traces")))
	gate := s.Gate("model-k")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	id := start(t, s, "modelgate:k")
	reached(t, gate)
	// What the first worker ended before the kill is exported (its batches
	// go out within a second): the Step that built the user message, in the
	// worker and in its plugin.
	err := agenttest.WaitFor(ctx(t), "the first worker's spans", time.Minute, func() (bool, error) {
		var worker, plugin bool
		for _, s := range r.Spans() {
			if s.Attributes["gen_ai.conversation.id"] == id && strings.HasPrefix(s.Name, "RunActivity:BuildUserMessage") {
				worker = true
			}
			if s.Attributes["gen_ai.conversation.id"] == id && s.Service == "dex-runner-testrunner" {
				plugin = true
			}
		}
		return worker && plugin, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Kill()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	snap := s.WaitForSnapshot("the answer", id, idleWithAnswer)
	wantAnswer(t, snap, "echo: modelgate:k")

	spans := waitForTurnTrace(t, r, id, "turn-1", func(spans []otlptest.Span) bool { return len(named(spans, "chat")) >= 1 })
	if msg := otlptest.WellFormed(spans); msg != "" {
		t.Fatalf("%s:\n%s", msg, dumpSpans(spans))
	}
	chats := named(spans, "chat")
	if len(chats) != 1 || chats[0].Attributes["dex.step.attempt"] != "2" {
		t.Errorf("chat spans %s; want one, of attempt 2 (attempt 1's worker died):\n%s", fmt.Sprint(len(chats)), dumpSpans(spans))
	}
	if n := len(named(spans, "RunActivity:RunModel")); n != 1 {
		t.Errorf("%d RunActivity:RunModel spans; want the one of the attempt that ended", n)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("the turn's trace:\n%s", dumpSpans(spans))
	}
}
