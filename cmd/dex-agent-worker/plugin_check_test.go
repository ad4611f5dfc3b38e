package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer/aimock"
)

// TestPluginCheck runs `plugin check` on the Go runners of this
// repository, the orders demo and the e2e test runner (each through a
// model call that defers a tool call), and on a program that is no plugin.
func TestPluginCheck(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and starts plugins")
	}
	dir := t.TempDir()
	orders := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	testrunner := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	notAPlugin := filepath.Join(dir, "not-a-plugin")
	if err := os.WriteFile(notAPlugin, []byte("#!/bin/sh\necho hello from a script\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
plugins:
  orders: {command: %s}
  testrunner: {command: %s}
  broken: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: %s}
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
  - name: test
    flow_type: TestAgent
    runner: testrunner
    runner_config: {state_dir: %s}
    tool_policies:
      read_gate: {effect: read}
      not_offered: {effect: read}
  - name: broken
    flow_type: BrokenAgent
    runner: broken
`, orders, testrunner, notAPlugin, filepath.Join(dir, "orders.json"), dir)), 0o644); err != nil {
		t.Fatal(err)
	}

	out, stderr, code := runCLI(t, "plugin", "check", "--config", cfg, "--agent", "orders", "--message", "refund order 7")
	if code != 0 {
		t.Fatalf("orders: exit %d\n%s%s", code, out, stderr)
	}
	wantPassed(t, "orders", out, allChecks...)
	for _, line := range []string{"PASS vector plain_answer", "PASS vector compaction", "PASS vector cancelled_call", "SKIP vector tool_task", "SKIP read_tools"} {
		if !strings.Contains(out, line) {
			t.Errorf("orders: no %q line:\n%s", line, out)
		}
	}
	if !strings.Contains(out, "runner contract v1") || !strings.Contains(out, "asked for 1 tool call(s)") || !strings.Contains(out, "lookup_order") || !strings.Contains(out, "plugin orders passes for agent orders") {
		t.Errorf("orders report:\n%s", out)
	}

	// The test runner defers its call too; a policy for a tool it does not
	// offer fails, with the fix.
	out, _, code = runCLI(t, "plugin", "check", "--config", cfg, "--agent", "test", "--message", "call:read_gate:x")
	if code != 1 || !regexp.MustCompile(`(?m)^PASS tool_deferral .*1 call`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^FAIL tool_policies .*not_offered\n .*fix: remove the policies`).MatchString(out) ||
		!strings.Contains(out, "plugin testrunner fails 1 check(s) for agent test") {
		t.Errorf("test runner: exit %d\n%s", code, out)
	}

	// A program that is no plugin fails the handshake, and nothing after it
	// runs.
	out, _, code = runCLI(t, "plugin", "check", "--config", cfg, "--agent", "broken")
	if code != 1 || !regexp.MustCompile(`(?m)^FAIL handshake .*\n .*fix: build the plugin; call pluginapi.Serve`).MatchString(out) || strings.Contains(out, "PASS") {
		t.Errorf("not a plugin: exit %d\n%s", code, out)
	}

	// --run-read-tools runs the read the model deferred (lookup_order) and
	// the model call after it; the refund that follows is a write, which
	// it never runs.
	out, stderr, code = runCLI(t, "plugin", "check", "--config", cfg, "--agent", "orders", "--no-vectors", "--run-read-tools", "--message", "refund order 7")
	if code != 0 || !regexp.MustCompile(`(?m)^PASS read_tools +ran lookup_order: succeeded$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^PASS follow_up +the model call after the tools asked for 1 more tool call`).MatchString(out) {
		t.Errorf("--run-read-tools: exit %d\n%s%s", code, out, stderr)
	}
	_, stderr, code = runCLI(t, "plugin", "check", "--config", cfg, "--agent", "nobody")
	if code != 2 || !strings.Contains(stderr, `has no agent "nobody" (it has: orders, test, broken)`) {
		t.Errorf("unknown agent: exit %d, %s", code, stderr)
	}
}

// TestPluginCheckTSRunner runs `plugin check` on the TypeScript runner of
// examples/runner-ts, a plugin that speaks the go-plugin handshake without
// go-plugin (node dist/main.js); its model call goes to aimock, which asks
// for a lookup_order call.
func TestPluginCheckTSRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plugins")
	}
	const install = "bash examples/runner-ts/install.sh (make test-peers)"
	node, err := exec.LookPath("node")
	if err != nil {
		testpeer.Missing(t, "node (for the TypeScript runner)", install)
	}
	tsDir, err := filepath.Abs(filepath.Join("..", "..", "examples", "runner-ts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"node_modules/@dex-agents/runner/dist/src/index.js", "dist/main.js"} {
		if _, err := os.Stat(filepath.Join(tsDir, p)); err != nil {
			testpeer.Missing(t, "the TypeScript runner's "+p, install)
		}
	}
	mock := aimock.Start(t, filepath.Join(tsDir, "testdata", "aimock"))
	t.Setenv("DEX_TS_CHECK_KEY", "sk-ts-check")
	cfg := tsCheckConfig(t, node, filepath.Join(tsDir, "dist", "main.js"), mock.URL)

	out, stderr, code := runCLI(t, "plugin", "check", "--config", cfg, "--agent", "orders", "--message", "[ts-check] look up order 3")
	if code != 0 {
		t.Fatalf("ts: exit %d\n%s%s", code, out, stderr)
	}
	wantPassed(t, "ts", out, allChecks...)
	if !strings.Contains(out, `name "dex-runner-ts"`) || !strings.Contains(out, "tools offered: lookup_order, refund_order") ||
		!strings.Contains(out, `"unfinished_turn_messages":true`) || !strings.Contains(out, "asked for 1 tool call(s)") ||
		!strings.Contains(out, `model "gpt-ts-check" from "openai"`) || !strings.Contains(out, "unknown tool dex_plugin_check_no_such_tool") ||
		!strings.Contains(out, "plugin ts passes for agent orders") {
		t.Errorf("ts report:\n%s", out)
	}
	for _, line := range []string{"PASS vector plain_answer", "PASS vector tool_calls_deferred", "PASS vector cancelled_call", "PASS vector malformed_outcome", "SKIP vector tool_task", "SKIP vector question"} {
		if !strings.Contains(out, line) {
			t.Errorf("ts: no %q line:\n%s", line, out)
		}
	}
	// The check made its model call and the vectors' four (plain_answer,
	// tool_calls_deferred, cancelled_call, malformed_outcome; the runner
	// cannot compact), through the plugin, with the key the config
	// granted.
	reqs := mock.Requests("/v1/chat/completions")
	if len(reqs) != 5 {
		t.Fatalf("aimock got %d requests: %v", len(reqs), reqs)
	}
	for _, r := range reqs {
		if r.Header.Get("Authorization") != "Bearer sk-ts-check" {
			t.Errorf("a model request without the granted key: %v", r)
		}
	}
	var body struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || body.Model != "gpt-ts-check" {
		t.Errorf("model request: %v %s", err, reqs[0].Body)
	}
}

// TestRunnerGuideTypeScriptCopy runs the copy steps of the TypeScript half
// of docs/runner-in-15-minutes.md as written, in a directory beside a
// checkout of the worker: a copy of examples/runner-ts, pointed at the SDK
// of the checkout, built on its own. Then plugin check passes on the copy.
func TestRunnerGuideTypeScriptCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("installs npm packages")
	}
	const install = "bash examples/runner-ts/install.sh (make test-peers)"
	node, err := exec.LookPath("node")
	if err != nil {
		testpeer.Missing(t, "node (for the TypeScript runner)", install)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		testpeer.Missing(t, "npm (for the TypeScript runner)", install)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(repo, "docs", "runner-in-15-minutes.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(guide), "## The same in TypeScript")
	if !ok {
		t.Fatal("the guide has no TypeScript section")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the TypeScript section has no sh block")
	}
	steps, _, _ := strings.Cut(block, "```")
	if !strings.Contains(steps, "cp -r dex-agent-worker/examples/runner-ts my-runner") || !strings.Contains(steps, "bash install.sh") {
		t.Fatalf("the copy steps changed; update this test:\n%s", steps)
	}
	dir := t.TempDir()
	if err := os.Symlink(repo, filepath.Join(dir, "dex-agent-worker")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", steps)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the guide's steps failed: %v\n%s\n%s", err, steps, out)
	}
	copyDir := filepath.Join(dir, "my-runner")
	link, err := filepath.EvalSymlinks(filepath.Join(copyDir, "node_modules", "@dex-agents", "runner"))
	if sdk, _ := filepath.EvalSymlinks(filepath.Join(repo, "sdk", "typescript")); err != nil || link != sdk {
		t.Fatalf("the copy's @dex-agents/runner is %s (%v), want the checkout's SDK %s", link, err, sdk)
	}

	mock := aimock.Start(t, filepath.Join(repo, "examples", "runner-ts", "testdata", "aimock"))
	t.Setenv("DEX_TS_CHECK_KEY", "sk-ts-check")
	cfg := tsCheckConfig(t, node, filepath.Join(copyDir, "dist", "main.js"), mock.URL)
	report, stderr, code := runCLI(t, "plugin", "check", "--config", cfg, "--agent", "orders", "--no-vectors", "--message", "[ts-check] look up order 3")
	if code != 0 || !strings.Contains(report, "plugin ts passes for agent orders") || !strings.Contains(report, "runner contract v1") {
		t.Fatalf("plugin check on the copy: exit %d\n%s%s", code, report, stderr)
	}
}

// tsCheckConfig writes a worker config whose orders agent runs the
// TypeScript runner at mainJS against aimock at mockURL.
func tsCheckConfig(t *testing.T, node, mainJS, mockURL string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
plugins:
  ts:
    command: %s
    args: [%s]
    env: [DEX_TS_CHECK_KEY]
agents:
  - name: orders
    flow_type: OrdersTS
    runner: ts
    runner_config:
      store_path: %s
      model: {base_url: "%s/v1", name: gpt-ts-check, api_key_env: DEX_TS_CHECK_KEY}
    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
`, node, mainJS, filepath.Join(dir, "orders.json"), mockURL)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestPluginCheckPythonRunner runs `plugin check` on the Python SDK's echo
// runner (sdk/python/tests/echo_runner.py, served by dex_runner over the
// go-plugin handshake), run as `command: python` from the SDK's virtualenv
// (plugins.py.venv).
func TestPluginCheckPythonRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plugins")
	}
	cfg := pythonEchoConfig(t, pythonSDK(t, "dex_runner"), t.TempDir(), "{greeting: hi}")
	out, stderr, code := runCLI(t, "plugin", "check", "--config", cfg, "--agent", "echo", "--message", "hello from Go")
	if code != 0 {
		t.Fatalf("py: exit %d\n%s%s", code, out, stderr)
	}
	wantPassed(t, "py", out, "handshake", "info", "configure", "capabilities", "build_user_message", "run_model_step", "events", "error_mapping", "alive")
	if !strings.Contains(out, `name "echo"`) || !strings.Contains(out, "runner contract v1") || !strings.Contains(out, "plugin py passes for agent echo") {
		t.Errorf("py report:\n%s", out)
	}
	t.Logf("%s", out)
}

// TestPluginCheckOpenAIAgentsRunner runs `plugin check` on the orders agent
// written with the OpenAI Agents SDK (examples/orders-openai-agents) on the
// Python SDK's adapter; its model calls go to aimock's Responses API,
// which asks for a lookup_order call.
func TestPluginCheckOpenAIAgentsRunner(t *testing.T) {
	checkPythonExample(t, "dex_runner.openai_agents", "orders-openai-agents", "store_path: %s/orders.json", "oa", "/v1", "look up order 3")
}

// TestPluginCheckPydanticAIRunner: plugin check passes the Pydantic AI
// example (examples/orders-pydantic-ai) against aimock's Chat Completions
// API, which asks for a lookup_order call.
func TestPluginCheckPydanticAIRunner(t *testing.T) {
	checkPythonExample(t, "dex_runner.pydantic_ai", "orders-pydantic-ai", "db_path: %s/orders.db", "pa", "/v1", "look up order 3")
}

// TestPluginCheckLangGraphRunner: plugin check passes the LangGraph example
// (examples/orders-langgraph) against aimock's Chat Completions API.
func TestPluginCheckLangGraphRunner(t *testing.T) {
	checkPythonExample(t, "dex_runner.langgraph", "orders-langgraph", "ledger_path: %s/refunds.json", "lg", "/v1", "look up order 3")
}

// TestPluginCheckGoogleADKRunner: plugin check passes the Google ADK example
// (examples/orders-google-adk) against aimock's Gemini API.
func TestPluginCheckGoogleADKRunner(t *testing.T) {
	checkPythonExample(t, "dex_runner.google_adk", "orders-google-adk", "refunds_path: %s/refunds.jsonl", "ga", "", "look up order 3")
}

// TestPluginCheckOpenAIAgentsTSRunner: plugin check passes the OpenAI
// Agents SDK for JavaScript example (examples/orders-openai-agents-ts)
// against aimock's Responses API.
func TestPluginCheckOpenAIAgentsTSRunner(t *testing.T) {
	checkPythonExample(t, "", "orders-openai-agents-ts", "ledger_path: %s/refunds.json", "ot", "/v1", "look up order 3")
}

// TestPluginCheckClaudeAgentSDKRunner: plugin check passes the Claude Agent
// SDK example (examples/orders-claude-agent-sdk) against aimock's Anthropic
// Messages API. Its reads run inside the harness, so the check asks for a
// refund: the call the adapter defers.
func TestPluginCheckClaudeAgentSDKRunner(t *testing.T) {
	checkPythonExample(t, "dex_runner.claude_agent_sdk", "orders-claude-agent-sdk", "ledger_path: %s/refunds.json", "cl", "", "refund order 3")
}

// checkPythonExample runs plugin check on a Python example with its aimock
// fixtures and the message "[<prefix>-check] <message>"; storage is
// the runner_config line that holds the example's data (%s is a temporary
// directory); apiBase follows aimock's URL in the model's base_url. With
// no Python module, the example is a TypeScript one, run with node.
func checkPythonExample(t *testing.T, module, name, storage, prefix, apiBase, message string) {
	if testing.Short() {
		t.Skip("starts plugins")
	}
	example, err := filepath.Abs(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	plugin := fmt.Sprintf("{command: node, args: [%s]}", filepath.Join(example, "dist", "main.js"))
	if module != "" {
		plugin = fmt.Sprintf("{command: python, venv: %s, args: [%s]}", filepath.Join(pythonSDK(t, module), ".venv"), filepath.Join(example, "main.py"))
	} else if _, err := os.Stat(filepath.Join(example, "dist", "main.js")); err != nil {
		testpeer.Missing(t, "the build of examples/"+name, "bash examples/"+name+"/install.sh (make test-peers)")
	}
	mock := aimock.Start(t, filepath.Join(example, "testdata", "aimock"))
	t.Setenv("DEX_PY_CHECK_KEY", "sk-py-check")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
plugins:
  %[1]s: %[2]s
agents:
  - name: orders
    flow_type: OrdersCheck
    runner: %[1]s
    runner_config:
      %[3]s
      model: {base_url: "%[4]s%[5]s", name: gpt-check, api_key_env: DEX_PY_CHECK_KEY}
    tool_policies:
      refund_order: {effect: non_idempotent_write, requires_approval: true}
`, prefix, strings.Replace(plugin, "}", ", env: [DEX_PY_CHECK_KEY]}", 1), fmt.Sprintf(storage, dir), mock.URL, apiBase)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCLI(t, "plugin", "check", "--config", cfg, "--agent", "orders", "--message", "["+prefix+"-check] "+message)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", prefix, code, out, stderr)
	}
	wantPassed(t, prefix, out, allChecks...)
	if !strings.Contains(out, `name "`+name+`"`) || !strings.Contains(out, "tools offered: lookup_order, refund_order") ||
		!strings.Contains(out, "asked for 1 tool call(s)") || !strings.Contains(out, "plugin "+prefix+" passes for agent orders") {
		t.Errorf("%s report:\n%s", prefix, out)
	}
	t.Logf("%s", out)
}

// allChecks are the checks every runner must pass when its model asks for a
// tool call.
var allChecks = []string{"handshake", "info", "configure", "capabilities", "build_user_message", "run_model_step", "tool_deferral", "events", "error_mapping", "alive"}

// wantPassed fails the test for each check that plugin check's report out
// does not show as PASS.
func wantPassed(t *testing.T, label, out string, checks ...string) {
	t.Helper()
	for _, check := range checks {
		if !regexp.MustCompile(`(?m)^PASS ` + check + ` `).MatchString(out) {
			t.Errorf("%s: %s did not pass:\n%s", label, check, out)
		}
	}
}

// pythonEchoConfig writes dir/dex.yaml: plugin py, the Python SDK's echo
// runner run as `command: python` from the SDK's virtualenv (venv), and
// agent echo (flow type EchoAgent) on it with runnerConfig.
func pythonEchoConfig(t *testing.T, sdk, dir, runnerConfig string) string {
	t.Helper()
	cfg := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
plugins:
  py:
    command: python
    venv: %s
    args: [%s]
agents:
  - name: echo
    flow_type: EchoAgent
    runner: py
    runner_config: %s
`, filepath.Join(sdk, ".venv"), filepath.Join(sdk, "tests", "echo_runner.py"), runnerConfig)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// pythonSDK is sdk/python's absolute path, once its virtualenv (make
// test-peers) imports modules; a missing one is a missing peer.
func pythonSDK(t *testing.T, modules ...string) string {
	t.Helper()
	sdk, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	code := "import " + strings.Join(append([]string{"sys"}, modules...), ", ")
	if out, err := exec.Command(filepath.Join(sdk, ".venv", "bin", "python"), "-c", code).CombinedOutput(); err != nil {
		testpeer.Missing(t, "the Python runner SDK's virtualenv with "+strings.Join(modules, ", ")+" ("+strings.TrimSpace(string(out))+")",
			"bash sdk/python/install.sh (make test-peers)")
	}
	return sdk
}
