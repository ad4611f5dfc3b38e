package tracing

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

func newTestTracer(t *testing.T, o Options) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	o.SpanExporter = exp
	tr, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

func flushed(t *testing.T, tr *Tracer, exp *tracetest.InMemoryExporter) tracetest.SpanStubs {
	t.Helper()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func TestTurnRootIsDerivedAndSampledAsTheSDKSamples(t *testing.T) {
	a := TurnRoot("s1", "run-1", "turn-1", 1)
	if b := TurnRoot("s1", "run-1", "turn-1", 1); a.TraceID() != b.TraceID() || a.SpanID() != b.SpanID() {
		t.Fatal("the same turn derived two roots")
	}
	for _, other := range []trace.SpanContext{TurnRoot("s1", "run-1", "turn-2", 1), TurnRoot("s2", "run-1", "turn-1", 1), TurnRoot("s1", "run-2", "turn-1", 1)} {
		if other.TraceID() == a.TraceID() {
			t.Fatal("two turns share a trace ID")
		}
	}
	if !a.IsValid() || !a.IsSampled() || !a.IsRemote() {
		t.Fatalf("root %v: want valid, sampled, remote", a)
	}
	sampler := sdktrace.TraceIDRatioBased(0.25)
	sampled := 0
	const n = 4000
	for i := range n {
		sc := TurnRoot("s", "r", fmt.Sprintf("turn-%d", i), 0.25)
		res := sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: sc.TraceID(), Name: "x"})
		if sdk := res.Decision == sdktrace.RecordAndSample; sdk != sc.IsSampled() {
			t.Fatalf("turn-%d: the root says sampled=%v, the SDK's ratio sampler %v", i, sc.IsSampled(), sdk)
		}
		if sc.IsSampled() {
			sampled++
		}
	}
	if sampled < n/5 || sampled > n*3/10 {
		t.Errorf("%d of %d turns sampled at 0.25", sampled, n)
	}
}

func TestTurnEndedWritesTheRootWithItsIDsAndTimes(t *testing.T) {
	tr, exp := newTestTracer(t, Options{ServiceVersion: "v9"})
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(36 * time.Hour) // an approval waited a day and a half
	tr.TurnEnded(Turn{SessionID: "s1", FirstRunID: "run-1", RunID: "run-3", TurnID: "turn-4", TurnNumber: 4, Agent: "orders",
		Start: start, End: end, Outcome: "failed", Error: "RunModel failed: boom"})
	spans := flushed(t, tr, exp)
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	want := TurnRoot("s1", "run-1", "turn-4", 1)
	if s.SpanContext.TraceID() != want.TraceID() || s.SpanContext.SpanID() != want.SpanID() || s.Parent.IsValid() {
		t.Errorf("root %v parent %v, want %v and no parent", s.SpanContext, s.Parent, want)
	}
	if !s.StartTime.Equal(start) || !s.EndTime.Equal(end) || s.Name != "invoke_agent orders" || s.SpanKind != trace.SpanKindInternal {
		t.Errorf("root %s %v [%s, %s]", s.Name, s.SpanKind, s.StartTime, s.EndTime)
	}
	a := attrMap(s.Attributes)
	for k, v := range map[string]string{KeyOperationName: "invoke_agent", KeyAgentName: "orders", KeyConversationID: "s1",
		KeyRunID: "run-3", KeyTurnID: "turn-4", KeyTurnOutcome: "failed", KeyErrorType: "TurnFailed"} {
		if a[k] != v {
			t.Errorf("%s = %q, want %q", k, a[k], v)
		}
	}
	if s.Status.Code != codes.Error || s.Status.Description != "RunModel failed: boom" {
		t.Errorf("status %+v", s.Status)
	}
	prev := TurnRoot("s1", "run-1", "turn-3", 1)
	if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != prev.SpanID() || s.Links[0].SpanContext.TraceID() != prev.TraceID() {
		t.Errorf("links %+v, want turn-3's root", s.Links)
	}
	if got := attrMap(s.Resource.Attributes()); got["service.name"] != "dex-agent-worker" || got["service.version"] != "v9" {
		t.Errorf("resource %v", got)
	}
}

// A workflow task that ends a turn and runs again in the same process
// (its completion failed) writes the turn's root once.
func TestTurnEndedTwiceWritesOneRoot(t *testing.T) {
	tr, exp := newTestTracer(t, Options{})
	turn := Turn{SessionID: "s1", FirstRunID: "run-1", RunID: "run-1", TurnID: "turn-1", TurnNumber: 1, Agent: "a",
		Start: time.Now().Add(-time.Second), End: time.Now(), Outcome: "completed"}
	tr.TurnEnded(turn)
	tr.TurnEnded(turn)
	turn.TurnID, turn.TurnNumber = "turn-2", 2
	tr.TurnEnded(turn)
	if spans := flushed(t, tr, exp); len(spans) != 2 {
		t.Fatalf("%d roots written for two turns, one of them ended twice", len(spans))
	}
}

func TestChatAndToolSpans(t *testing.T) {
	step := Step{SessionID: "s1", RunID: "r1", TurnID: "turn-1", Type: "RunModel", ExecutionID: "r1/12", Attempt: 2}
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprint("capture=", capture), func(t *testing.T) {
			tr, exp := newTestTracer(t, Options{CaptureContent: capture})
			parent := TurnRoot("s1", "r1", "turn-1", 1)
			ctx := trace.ContextWithRemoteSpanContext(WithSession(context.Background(), "s1"), parent)
			start := time.Now().Add(-time.Second)
			tr.Chat(ctx, Chat{Step: step, Start: start, RequestModel: "gpt-x", ResponseModel: "gpt-x-1", Provider: "openai",
				ResponseID: "resp_1", FinishReasons: []string{"tool_calls"}, ModelCalls: 1, InputTokens: 120, OutputTokens: 30,
				CachedTokens: 100, RequestedToolCalls: []string{"call_1"}})
			tr.Chat(ctx, Chat{Step: step, Start: start, ModelCalls: 3, InputTokens: 999})
			tr.Chat(ctx, Chat{Step: step, Start: start, Err: errors.New("provider said 500")})
			tctx, end := tr.StartTool(ctx, Tool{Step: step, Name: "refund_order", CallID: "call_1", Effect: "non_idempotent_write", Arguments: `{"order_id":"7"}`,
				ApprovalRule: "approval_rules[0]", ApprovalDecision: "allow", ShadowApprovalDecision: "deny"})
			if got := trace.SpanContextFromContext(tctx); got.TraceID() != parent.TraceID() || got.SpanID() == parent.SpanID() {
				t.Errorf("the tool's context carries %v, want a span of the turn's trace", got)
			}
			end("failed", "", typed{"no such order", "ToolExecutionError"})
			spans := flushed(t, tr, exp)
			if len(spans) != 4 {
				t.Fatalf("%d spans", len(spans))
			}
			one, several, failed, tool := spans[0], spans[1], spans[2], spans[3]
			for _, s := range spans {
				if s.Parent.SpanID() != parent.SpanID() || s.SpanContext.TraceID() != parent.TraceID() {
					t.Errorf("%s: parent %v, want the turn's root", s.Name, s.Parent)
				}
				a := attrMap(s.Attributes)
				if a[KeyConversationID] != "s1" || a[KeyStepAttempt] != "2" || a[KeyStepExecutionID] != "r1/12" || a[KeyTurnID] != "turn-1" {
					t.Errorf("%s: step attributes %v", s.Name, a)
				}
			}
			a := attrMap(one.Attributes)
			if one.Name != "chat gpt-x" || one.SpanKind != trace.SpanKindClient || !one.StartTime.Equal(start) ||
				a[KeyProviderName] != "openai" || a[KeyResponseModel] != "gpt-x-1" || a[KeyResponseID] != "resp_1" ||
				a[KeyFinishReasons] != `["tool_calls"]` || a[KeyInputTokens] != "120" || a[KeyOutputTokens] != "30" ||
				a[KeyCacheReadTokens] != "100" || a[KeyRequestedToolCalls] != `["call_1"]` {
				t.Errorf("one call: %s %v %v", one.Name, one.SpanKind, a)
			}
			if _, ok := a[KeyReasoningTokens]; ok {
				t.Error("a zero count is on the span")
			}
			a = attrMap(several.Attributes)
			if several.Name != "chat" || several.SpanKind != trace.SpanKindInternal || a[KeyInputTokens] != "" || a[KeyModelCalls] != "3" {
				t.Errorf("several calls: %s %v %v", several.Name, several.SpanKind, a)
			}
			a = attrMap(failed.Attributes)
			if failed.Status.Code != codes.Error || a[KeyErrorType] != "errors.errorString" || len(failed.Events) != 1 {
				t.Errorf("failed call: %+v %v", failed.Status, a)
			}
			a = attrMap(tool.Attributes)
			if tool.Name != "execute_tool refund_order" || tool.SpanKind != trace.SpanKindInternal || a[KeyToolName] != "refund_order" ||
				a[KeyToolCallID] != "call_1" || a[KeyToolEffect] != "non_idempotent_write" || a[KeyToolCallStatus] != "failed" ||
				a[KeyApprovalRule] != "approval_rules[0]" || a[KeyApprovalDecision] != "allow" || a[KeyShadowApprovalDecision] != "deny" ||
				a[KeyErrorType] != "ToolExecutionError" || tool.Status.Code != codes.Error {
				t.Errorf("tool: %v %+v", a, tool.Status)
			}
			if _, ok := a[KeyToolArguments]; ok != capture {
				t.Errorf("arguments on the span: %v, capture_content %v", ok, capture)
			}
		})
	}
}

type typed struct{ msg, typ string }

func (e typed) Error() string { return e.msg }
func (e typed) Type() string  { return e.typ }

// panicky is a span processor that panics, as a broken one would.
type panicky struct{}

func (panicky) OnStart(context.Context, sdktrace.ReadWriteSpan) { panic("processor broke") }
func (panicky) OnEnd(sdktrace.ReadOnlySpan)                     { panic("processor broke") }
func (panicky) Shutdown(context.Context) error                  { return nil }
func (panicky) ForceFlush(context.Context) error                { return nil }

func TestATracingFailureNeverFailsTheStep(t *testing.T) {
	var logs testpeer.SyncBuffer
	tr, _ := newTestTracer(t, Options{processor: panicky{}, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx := context.Background()
	tr.Chat(ctx, Chat{Start: time.Now(), ModelCalls: 1})
	_, end := tr.StartTool(ctx, Tool{Name: "t"})
	end("succeeded", "", nil)
	tr.TurnEnded(Turn{SessionID: "s", TurnID: "turn-1", Start: time.Now(), End: time.Now()})
	if n := tr.Failures(); n < 3 {
		t.Errorf("%d failures counted, want >= 3", n)
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "processor broke") || !strings.Contains(out, "level=DEBUG") {
		t.Errorf("want one warning with the panic, then debug lines:\n%s", out)
	}
}

func TestANilTracerTracesNothing(t *testing.T) {
	var tr *Tracer
	ctx := context.Background()
	tr.Chat(ctx, Chat{})
	got, end := tr.StartTool(ctx, Tool{})
	end("succeeded", "", nil)
	tr.TurnEnded(Turn{})
	if got != ctx || tr.Shutdown(ctx) != nil || tr.ForceFlush(ctx) != nil || tr.Failures() != 0 {
		t.Fatal("a nil Tracer did something")
	}
	if _, s := tr.Provider().Tracer("x").Start(ctx, "y"); s.IsRecording() {
		t.Fatal("a nil Tracer's provider records")
	}
	if tr2, err := New(ctx, Options{Exporter: ExporterNone}); tr2 != nil || err != nil {
		t.Fatalf("exporter none: %v %v", tr2, err)
	}
}

func TestTheFileExporterWritesJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	tr, err := New(context.Background(), Options{Exporter: ExporterFile, File: path})
	if err != nil {
		t.Fatal(err)
	}
	tr.TurnEnded(Turn{SessionID: "s", FirstRunID: "r", TurnID: "turn-1", TurnNumber: 1, Agent: "a", Start: time.Now(), End: time.Now(), Outcome: "completed"})
	tr.Chat(context.Background(), Chat{Start: time.Now(), ModelCalls: 1})
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			Name        string
			SpanContext struct{ TraceID string }
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "invoke_agent a,chat" {
		t.Errorf("lines %v", names)
	}
	if _, err := New(context.Background(), Options{Exporter: ExporterFile, File: filepath.Join(t.TempDir(), "no", "dir", "f")}); err == nil {
		t.Error("a file in a missing directory was accepted")
	}
}

func TestTheConsoleExporterPrintsATurnsTree(t *testing.T) {
	var out testpeer.SyncBuffer
	tr, err := New(context.Background(), Options{Exporter: ExporterConsole, Writer: &out})
	if err != nil {
		t.Fatal(err)
	}
	root := TurnRoot("s", "r", "turn-1", 1)
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), root)
	tctx, end := tr.StartTool(ctx, Tool{Name: "lookup_order", CallID: "c1", Effect: "read"})
	tr.Chat(tctx, Chat{Start: time.Now(), RequestModel: "m", ModelCalls: 1, InputTokens: 5})
	end("succeeded", "", nil)
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.String() != "" {
		t.Fatalf("printed before the root came:\n%s", out.String())
	}
	tr.TurnEnded(Turn{SessionID: "s", FirstRunID: "r", TurnID: "turn-1", TurnNumber: 1, Agent: "orders", Start: time.Now(), End: time.Now(), Outcome: "completed"})
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "trace "+root.TraceID().String()) ||
		!strings.HasPrefix(lines[1], "  invoke_agent orders") || !strings.HasPrefix(lines[2], "    execute_tool lookup_order") ||
		!strings.HasPrefix(lines[3], "      chat m") || !strings.Contains(lines[3], "usage.input_tokens=5") ||
		!strings.Contains(lines[2], "tool_call.status=succeeded") {
		t.Errorf("tree:\n%s", got)
	}
}

func TestChildOnlyStartsSpansUnderAParentOnly(t *testing.T) {
	tr, exp := newTestTracer(t, Options{})
	tracer := ChildOnly(tr.Provider()).Tracer("x")
	_, orphan := tracer.Start(context.Background(), "no parent")
	orphan.End()
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), TurnRoot("s", "r", "turn-1", 1))
	_, child := tracer.Start(ctx, "child")
	child.End()
	spans := flushed(t, tr, exp)
	if len(spans) != 1 || spans[0].Name != "child" {
		t.Fatalf("spans %v", spans.Snapshots())
	}
}

func TestEndpoint(t *testing.T) {
	for _, c := range []struct{ protocol, in, want string }{
		{"grpc", "", "http://localhost:4317"},
		{"http", "", "http://localhost:4318/v1/traces"},
		{"http", "https://api.example.com", "https://api.example.com/v1/traces"},
		{"http", "http://c:4318/custom/path", "http://c:4318/custom/path"},
		{"grpc", "https://c:4317", "https://c:4317"},
	} {
		got, err := Endpoint(c.protocol, c.in)
		if err != nil || got != c.want {
			t.Errorf("Endpoint(%q, %q) = %q, %v; want %q", c.protocol, c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"collector:4317", "ftp://c", "http://"} {
		if _, err := Endpoint("grpc", bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Endpoint(%q): %v", bad, err)
		}
	}
}

func TestClipKeepsContentValidUTF8(t *testing.T) {
	long := "a" + strings.Repeat("é", maxContentAttributeLen) // 2 bytes each after one: the cut falls inside a rune
	got := clip(long)
	if !utf8.ValidString(got) || len(got) > maxContentAttributeLen+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("clip of %d bytes: valid %v, %d bytes", len(long), utf8.ValidString(got), len(got))
	}
	if got := clip("ok \xff bad"); got != "ok \uFFFD bad" {
		t.Errorf("clip of invalid UTF-8 = %q", got)
	}
	if got := clip("short"); got != "short" {
		t.Errorf("clip = %q", got)
	}
}
