package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// clearSessionEnv unsets the variables the session commands read.
func clearSessionEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{"DEX_TEMPORAL_ADDRESS", "DEX_TEMPORAL_NAMESPACE", "DEX_CONFIG", "DEX_API_TOKEN", "DEX_HTTP_ADDRESS"} {
		t.Setenv(name, "")
	}
}

func TestSessionTemporalSettings(t *testing.T) {
	clearSessionEnv(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(cfgPath, []byte(`
temporal:
  address: temporal.example:7233
  namespace: prod
  task_queue: agents-prod
  tls: {ca_file: ca.pem, server_name: temporal.example}
plugins:
  p: {command: /bin/true}
agents:
  - {name: support, flow_type: SupportAgent, runner: p}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEX_TEST_TEMPORAL_KEY", "tk-0123456789")
	tests := []struct {
		name  string
		env   map[string]string
		flags sessionFlags
		want  config.Temporal
	}{
		{
			name: "defaults",
			want: config.Temporal{Address: "localhost:7233", Namespace: "default", TaskQueue: "dex-agents"},
		},
		{
			name: "environment",
			env:  map[string]string{"DEX_TEMPORAL_ADDRESS": "10.0.0.1:7233", "DEX_TEMPORAL_NAMESPACE": "staging"},
			want: config.Temporal{Address: "10.0.0.1:7233", Namespace: "staging", TaskQueue: "dex-agents"},
		},
		{
			name:  "the config file",
			flags: sessionFlags{config: cfgPath},
			want: config.Temporal{Address: "temporal.example:7233", Namespace: "prod", TaskQueue: "agents-prod",
				TLS: &config.TLS{CAFile: filepath.Join(dir, "ca.pem"), ServerName: "temporal.example"}},
		},
		{
			name:  "the config file from $DEX_CONFIG, under the environment",
			env:   map[string]string{"DEX_CONFIG": cfgPath, "DEX_TEMPORAL_NAMESPACE": "staging"},
			flags: sessionFlags{},
			want: config.Temporal{Address: "temporal.example:7233", Namespace: "staging", TaskQueue: "agents-prod",
				TLS: &config.TLS{CAFile: filepath.Join(dir, "ca.pem"), ServerName: "temporal.example"}},
		},
		{
			name: "flags over everything",
			env:  map[string]string{"DEX_TEMPORAL_ADDRESS": "10.0.0.1:7233"},
			flags: sessionFlags{config: cfgPath, address: "my.tmprl.cloud:7233", namespace: "ns", taskQueue: "q",
				tlsCert: "c.pem", tlsKey: "c.key", tlsServerName: "my.tmprl.cloud", apiKeyEnv: "DEX_TEST_TEMPORAL_KEY"},
			want: config.Temporal{Address: "my.tmprl.cloud:7233", Namespace: "ns", TaskQueue: "q", APIKey: "tk-0123456789",
				TLS: &config.TLS{CertFile: "c.pem", KeyFile: "c.key", CAFile: filepath.Join(dir, "ca.pem"), ServerName: "my.tmprl.cloud"}},
		},
		{
			name:  "TLS from flags alone",
			flags: sessionFlags{tlsCA: "ca.pem"},
			want:  config.Temporal{Address: "localhost:7233", Namespace: "default", TaskQueue: "dex-agents", TLS: &config.TLS{CAFile: "ca.pem"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			got, err := tt.flags.temporal()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("temporal() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSessionFlagErrors checks that the connection flags reach the dial
// (daemon.Dial reads the TLS files) and that bad ones are named.
func TestSessionFlagErrors(t *testing.T) {
	clearSessionEnv(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(cfgPath, []byte(`
temporal: {tls: {ca_file: ca.pem}}
plugins: {p: {command: /bin/true}}
agents: [{name: support, flow_type: SupportAgent, runner: p}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"session", "snapshot", "s1", "--tls-cert", "c.pem"}, "error: --tls-cert and --tls-key go together (a client certificate and its key)\n"},
		{[]string{"session", "snapshot", "s1", "--api-key-env", "DEX_TEST_UNSET_KEY"}, "error: --api-key-env: environment variable DEX_TEST_UNSET_KEY is not set\n"},
		{[]string{"session", "snapshot", "s1", "--tls-ca", notPEM}, "error: temporal.tls.ca_file: " + notPEM + " holds no PEM certificate\n"},
		{[]string{"session", "send", "s1", "hi", "--config", cfgPath}, "error: temporal.tls.ca_file: " + notPEM + " holds no PEM certificate\n"},
		{[]string{"session", "start", "--agent", "support"}, `error: cannot map agent "support" to its flow type: pass --flow-type TYPE, or --config FILE (the worker's config), ` +
			"or an API token (--token or $DEX_API_TOKEN, and --http-address) to ask the worker's HTTP API\n"},
		{[]string{"session", "start", "--agent", "nope", "--config", cfgPath}, "error: " + cfgPath + ` has no agent "nope" (it has: support)` + "\n"},
		{[]string{"session", "start", "--agent", "support", "--http-address", "http://127.0.0.1:1"}, "error: --http-address needs an API token: pass --token or set DEX_API_TOKEN\n"},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, tt.args...)
		if code != 1 || stderr != tt.want {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant:\n%s", tt.args, code, stderr, tt.want)
		}
	}
}

// TestSessionStartAsksTheAPI resolves the agent through GET /v1/agents.
func TestSessionStartAsksTheAPI(t *testing.T) {
	clearSessionEnv(t)
	const token = "0123456789abcdef0123"
	var requests []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"agents":[{"name":"orders","flow_type":"OrdersAgent"},{"name":"echo","flow_type":"EchoAgent"}]}`))
	}))
	defer api.Close()

	f := &sessionFlags{}
	ft, err := f.flowType(context.Background(), "echo", apiFlags{address: api.URL, token: token})
	if err != nil || ft != "EchoAgent" {
		t.Errorf("flowType(echo) = %q, %v; want EchoAgent", ft, err)
	}
	if want := []string{"GET /v1/agents Bearer " + token}; !cmp.Equal(want, requests) {
		t.Errorf("requests = %q, want %q", requests, want)
	}
	_, err = f.flowType(context.Background(), "nope", apiFlags{address: api.URL, token: token})
	if want := `the worker's HTTP API at ` + api.URL + ` has no agent "nope" for this token (it has: echo, orders)`; err == nil || err.Error() != want {
		t.Errorf("flowType(nope) error = %v, want %q", err, want)
	}

	// Through the command, with the token from the environment: the agent
	// resolves, and the start then fails at the dial (nothing listens).
	t.Setenv("DEX_API_TOKEN", token)
	_, stderr, code := runCLI(t, "session", "start", "--agent", "orders", "--http-address", api.URL, "--address", "127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "connect to Temporal at 127.0.0.1:1") || len(requests) != 3 {
		t.Errorf("start: exit %d, %d API requests, stderr %q", code, len(requests), stderr)
	}
	// chat refuses an unknown agent the same way, before it starts anything.
	_, stderr, code = runCLI(t, "chat", "--agent", "nope", "--http-address", api.URL)
	if want := `the worker's HTTP API at ` + api.URL + ` has no agent "nope" for this token (it has: echo, orders)`; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("chat --agent nope: exit %d, stderr %q, want %q", code, stderr, want)
	}
	_, stderr, code = runCLI(t, "session", "start", "--agent", "orders", "--http-address", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, `ask the worker's HTTP API at http://127.0.0.1:1 for agent "orders"`) {
		t.Errorf("no API: exit %d, stderr %q", code, stderr)
	}
}

func TestPrintSnapshot(t *testing.T) {
	t.Parallel()
	command := func(sub string, args ...string) string {
		return "dex-agent-worker session " + sub + " " + strings.Join(args, " ") + " --address h:1"
	}
	snap := wire.Snapshot{
		SessionID: "s-1", Agent: "orders",
		State: &wire.SessionState{Status: wire.StatusRunningTools, ActiveTurnID: "turn-1", TurnCount: 1},
		Usage: wire.Usage{ModelCalls: 2, InputTokens: 100, OutputTokens: 20},
		Messages: []wire.Message{
			{Sequence: 1, Role: wire.RoleUser, Text: "refund order 7"},
			{Sequence: 2, Role: wire.RoleAssistant},
		},
		ToolCalls: []wire.ToolCall{
			{ToolCallID: "call_2_0", ToolName: "lookup_order", Status: wire.ToolCallSucceeded, Arguments: `{"order_id":"7"}`},
			{ToolCallID: "call_3_0", ToolName: "refund_order", Status: wire.ToolCallAwaitingApproval, Arguments: `{"order_id":"7"}`},
		},
		PendingInterrupts: []wire.Interrupt{{
			InterruptID: "int-9", ToolCallID: "call_3_0", ToolName: "refund_order", Arguments: `{"order_id":"7"}`,
			Kind: wire.InterruptKindApproval, Deadline: "2026-12-02T10:00:00Z",
		}},
	}
	var b strings.Builder
	printSnapshot(&b, snap, command)
	want := `session s-1 (agent orders)
status   waiting for approval: refund_order (call_3_0), deadline 2026-12-02T10:00:00Z  [running_tools, turn-1]
usage    2 model calls, 100 input + 20 output tokens

messages
   1  user                   refund order 7
   2  assistant              (asks for tool calls)

tool calls of the active turn
  call_2_0             lookup_order         succeeded          {"order_id":"7"}
  call_3_0             refund_order         awaiting_approval  {"order_id":"7"}

waiting for approval
  refund_order {"order_id":"7"}
    call call_3_0, interrupt int-9, deadline 2026-12-02T10:00:00Z
    approve: dex-agent-worker session approve s-1 int-9 --address h:1
    reject:  dex-agent-worker session reject s-1 int-9 --message 'the reason the model sees' --address h:1
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("printSnapshot (-want +got):\n%s", diff)
	}

	// A question: its choices and the commands that answer it.
	snap.ToolCalls = []wire.ToolCall{{ToolCallID: "call_1_0", ToolName: "ask_user", Status: wire.ToolCallAwaitingAnswer, Arguments: `{"question":"Which order?"}`}}
	snap.PendingInterrupts = []wire.Interrupt{{
		InterruptID: "call_1_0", ToolCallID: "call_1_0", ToolName: "ask_user", Kind: wire.InterruptKindQuestion,
		Question: "Which order?", Choices: []string{"order 7: office chair", "order 8"}, AllowsFreeText: true,
	}}
	snap.Messages = nil
	b.Reset()
	printSnapshot(&b, snap, command)
	want = `session s-1 (agent orders)
status   waiting for question: ask_user (call_1_0)  [running_tools, turn-1]
usage    2 model calls, 100 input + 20 output tokens

tool calls of the active turn
  call_1_0             ask_user             awaiting_answer    {"question":"Which order?"}

waiting for an answer
  Which order?
    1. order 7: office chair
    2. order 8
    call call_1_0, other answers allowed
    answer:  dex-agent-worker session answer s-1 call_1_0 'order 7: office chair' --address h:1
    decline: dex-agent-worker session answer s-1 call_1_0 --decline --address h:1
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("printSnapshot of a question (-want +got):\n%s", diff)
	}

	// The status line of other moments of a turn.
	tests := []struct {
		name  string
		state wire.SessionState
		calls []wire.ToolCall
		ints  []wire.Interrupt
		want  string
	}{
		{"idle", wire.SessionState{Status: wire.StatusWaitingForUserMessage}, nil, nil, "waiting_for_user_message"},
		{"model", wire.SessionState{Status: wire.StatusRunningModel, ActiveTurnID: "turn-2"}, nil, nil, "running_model (turn-2)"},
		{"a tool runs while another waits",
			wire.SessionState{Status: wire.StatusRunningTools, ActiveTurnID: "turn-2"},
			[]wire.ToolCall{
				{ToolCallID: "c1", ToolName: "lookup_order", Status: wire.ToolCallApproved},
				{ToolCallID: "c2", ToolName: "refund_order", Status: wire.ToolCallAwaitingApproval},
			},
			[]wire.Interrupt{{InterruptID: "i2", ToolCallID: "c2", ToolName: "refund_order", Kind: wire.InterruptKindApproval}},
			"running lookup_order (c1); waiting for approval: refund_order (c2)  [running_tools, turn-2]"},
		{"two approvals",
			wire.SessionState{Status: wire.StatusRunningTools, ActiveTurnID: "turn-3"},
			nil,
			[]wire.Interrupt{
				{InterruptID: "i1", ToolCallID: "c1", ToolName: "refund_order", Kind: wire.InterruptKindApproval},
				{InterruptID: "i2", ToolCallID: "c2", ToolName: "cancel_order", Kind: wire.InterruptKindApproval, Deadline: "2026-12-02T10:00:00Z"},
			},
			"waiting for approval: refund_order (c1); cancel_order (c2), deadline 2026-12-02T10:00:00Z  [running_tools, turn-3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statusLine(wire.Snapshot{State: &tt.state, ToolCalls: tt.calls, PendingInterrupts: tt.ints})
			if got != tt.want {
				t.Errorf("statusLine = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSessionStartChecksTheFlowType: a --flow-type that none of the
// worker's agents has is refused with the ones they have, from the config
// or the HTTP API, before anything starts; with neither at hand, start
// says it could not check.
func TestSessionStartChecksTheFlowType(t *testing.T) {
	clearSessionEnv(t)
	const token = "0123456789abcdef0123"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"agents":[{"name":"orders","flow_type":"OrdersAgent"},{"name":"echo","flow_type":"EchoAgent"}]}`))
	}))
	defer api.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(cfg, []byte("plugins: {p: {command: /bin/true}}\nagents: [{name: orders, flow_type: OrdersAgent, runner: p}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir) // no configs/dev.yaml here
	_, stderr, code := runCLI(t, "session", "start", "--flow-type", "OrderAgent", "--config", cfg, "--address", "127.0.0.1:1")
	if want := `no agent of ` + cfg + ` has flow type "OrderAgent", so no worker would run the session (its flow types: OrdersAgent (agent orders))`; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("--config: exit %d, stderr %q, want %q", code, stderr, want)
	}
	_, stderr, code = runCLI(t, "session", "start", "--flow-type", "Echo", "--token", token, "--http-address", api.URL, "--address", "127.0.0.1:1")
	if want := `no agent of the worker's HTTP API at ` + api.URL + ` has flow type "Echo", so no worker would run the session (its flow types: EchoAgent (agent echo), OrdersAgent (agent orders))`; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("API: exit %d, stderr %q, want %q", code, stderr, want)
	}
	// A known type passes the check and fails only at the dial.
	_, stderr, code = runCLI(t, "session", "start", "--flow-type", "EchoAgent", "--token", token, "--http-address", api.URL, "--address", "127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "connect to Temporal at 127.0.0.1:1") {
		t.Errorf("known type: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, "session", "start", "--flow-type", "EchoAgent", "--address", "127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "note: cannot check --flow-type EchoAgent against the worker's agents") || !strings.Contains(stderr, "connect to Temporal at 127.0.0.1:1") {
		t.Errorf("no source: exit %d, stderr %q", code, stderr)
	}
}
