package otelenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/baggage"
)

func TestFromEnvReadsWhatTheWorkerSets(t *testing.T) {
	t.Setenv(EnvTracesExporter, "otlp")
	t.Setenv(EnvOTLPEndpoint, "http://collector:4318")
	t.Setenv(EnvOTLPProtocol, "http/protobuf")
	t.Setenv(EnvServiceName, "dex-runner-orders")
	t.Setenv(EnvTracesSampleRatio, "0.25")
	t.Setenv(EnvTracesHeadersEnv, "MY_HEADERS")
	t.Setenv("MY_HEADERS", "x-api-key=secret, broken, b = 2")
	o := FromEnv()
	if o.Exporter != "otlp" || o.Endpoint != "http://collector:4318" || o.Protocol != ProtocolHTTP || o.ServiceName != "dex-runner-orders" || o.SampleRatio != 0.25 {
		t.Errorf("FromEnv = %+v", o)
	}
	if len(o.Headers) != 2 || o.Headers["x-api-key"] != "secret" || o.Headers["b"] != "2" {
		t.Errorf("headers = %v", o.Headers)
	}
}

func TestNoExporterIsNoProvider(t *testing.T) {
	for _, exp := range []string{"", ExporterNone} {
		tp, err := New(context.Background(), Options{Exporter: exp})
		if tp != nil || err != nil {
			t.Errorf("exporter %q: %v, %v; want no provider", exp, tp, err)
		}
	}
	t.Setenv(EnvTracesExporter, "none")
	if tp := Provider(); tp != nil {
		t.Errorf("Provider() = %v with tracing off; want an untyped nil", tp)
	}
}

func TestABadSettingLeavesTheRunnerUntraced(t *testing.T) {
	for _, o := range []Options{
		{Exporter: "zipkin"},
		{Exporter: ExporterOTLP, Endpoint: "collector:4317"},
		{Exporter: ExporterFile},
		{Exporter: ExporterFile, File: filepath.Join(t.TempDir(), "missing", "dir", "spans.jsonl")},
	} {
		if tp, err := New(context.Background(), o); tp != nil || err == nil || !strings.HasPrefix(err.Error(), "tracing: ") {
			t.Errorf("%+v: %v, %v; want an error that names the problem", o, tp, err)
		}
	}
	t.Setenv(EnvTracesExporter, ExporterFile)
	t.Setenv(EnvTracesFile, "")
	if tp := Provider(); tp != nil {
		t.Errorf("Provider() = %v for a file exporter without a file; want nil", tp)
	}
}

func TestFileExporterWritesSpansWithTheSession(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	tp, err := New(context.Background(), Options{Exporter: ExporterFile, File: file, ServiceName: "dex-runner-test"})
	if err != nil || tp == nil {
		t.Fatalf("New: %v, %v", tp, err)
	}
	m, _ := baggage.NewMemberRaw(SessionBaggage, "s-42")
	b, _ := baggage.New(m)
	_, span := tp.Tracer("test").Start(baggage.ContextWithBaggage(context.Background(), b), "work")
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Name":"work"`, `"gen_ai.conversation.id"`, `"s-42"`, `"dex-runner-test"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the trace file lacks %s:\n%s", want, data)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct{ protocol, in, want string }{
		{ProtocolGRPC, "", "http://localhost:4317"},
		{ProtocolHTTP, "", "http://localhost:4318/v1/traces"},
		{ProtocolHTTP, "https://c.example:443/custom", "https://c.example:443/custom"},
	} {
		if got, err := Endpoint(tc.protocol, tc.in); err != nil || got != tc.want {
			t.Errorf("Endpoint(%s, %q) = %q, %v; want %q", tc.protocol, tc.in, got, err, tc.want)
		}
	}
}
