package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
)

// TestPluginCheck runs `plugin check` on the Go runners of this
// repository, the orders demo and the e2e test runner (each through a
// model call that defers a tool call), and on a program that is no plugin.
func TestPluginCheck(t *testing.T) {
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
	for _, check := range []string{"handshake", "info", "configure", "capabilities", "build_user_message", "run_model_step", "tool_deferral", "events", "error_mapping", "alive"} {
		if !regexp.MustCompile(`(?m)^PASS ` + check + ` `).MatchString(out) {
			t.Errorf("orders: %s did not pass:\n%s", check, out)
		}
	}
	if !strings.Contains(out, "asked for 1 tool call(s)") || !strings.Contains(out, "lookup_order") || !strings.Contains(out, "plugin orders passes for agent orders") {
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

	_, stderr, code = runCLI(t, "plugin", "check", "--config", cfg, "--agent", "nobody")
	if code != 2 || !strings.Contains(stderr, `has no agent "nobody" (it has: orders, test, broken)`) {
		t.Errorf("unknown agent: exit %d, %s", code, stderr)
	}
}
