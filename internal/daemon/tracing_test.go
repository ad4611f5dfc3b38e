package daemon

import (
	"slices"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

func TestTraceEnvTellsAPluginWhereItsSpansGo(t *testing.T) {
	cfg := &config.Config{
		Plugins: map[string]config.Plugin{"granted": {Env: []string{"OTEL_HEADERS"}}, "plain": {}},
		Telemetry: config.Telemetry{Traces: config.TelemetryTraces{
			Exporter: config.TracesOTLP, Endpoint: "http://collector:4318", Protocol: "http", HeadersEnv: "OTEL_HEADERS", SampleRatio: 0.5,
		}},
	}
	plain := traceEnv(cfg, "plain", "otlp")
	want := []string{
		"OTEL_SERVICE_NAME=dex-runner-plain", "OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://collector:4318/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
		"DEX_TRACES_SAMPLE_RATIO=0.5",
	}
	if !slices.Equal(plain, want) {
		t.Errorf("plain plugin: %v\nwant %v", plain, want)
	}
	// The headers' variable is named only to a plugin its env grants it
	// to; the value is never in the list.
	if granted := traceEnv(cfg, "granted", "otlp"); !slices.Contains(granted, "DEX_TRACES_HEADERS_ENV=OTEL_HEADERS") {
		t.Errorf("granted plugin: %v", granted)
	}
	cfg.Telemetry.Traces = config.TelemetryTraces{Exporter: config.TracesFile, File: "/var/log/dex/spans.jsonl"}
	if got := traceEnv(cfg, "plain", "file"); !slices.Contains(got, "DEX_TRACES_FILE=/var/log/dex/spans.jsonl") || !slices.Contains(got, "OTEL_TRACES_EXPORTER=file") {
		t.Errorf("file: %v", got)
	}
	if got := traceEnv(cfg, "plain", "console"); !slices.Equal(got, []string{"OTEL_TRACES_EXPORTER=none"}) {
		t.Errorf("console (dev --trace): %v", got)
	}
}
