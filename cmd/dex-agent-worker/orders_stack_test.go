package main

import (
	"fmt"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
)

// ordersCLI is an engine and a worker running the orders demo agent, and
// the flags that point session commands at them.
type ordersCLI struct {
	t     *testing.T
	stack *agenttest.Stack
	// base are the connection flags every session command takes.
	base []string
}

// newOrdersCLI starts the orders demo agent "orders" (flow type
// OrdersAgent) with agentYAML added to it (lines indented four spaces, such
// as built_in_tools), and moreYAML after it (more agents, indented two).
func newOrdersCLI(t *testing.T, agentYAML, moreYAML string) *ordersCLI {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	stack := agenttest.NewStack(t, fmt.Sprintf(`
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
%s    tool_policies:
      lookup_order: {effect: read}
      refund_order: {effect: non_idempotent_write, requires_approval: true}
      request_return_label: {effect: idempotent_write}
%s`, plugin, agentYAML, moreYAML))
	stack.StartWorker()
	// --data-dir names the stack's message store (dev's <data dir>/messages.db).
	return &ordersCLI{t: t, stack: stack, base: []string{"--address", stack.Address(), "--config", stack.ConfigPath, "--data-dir", stack.Dir}}
}

// run runs `session ARGS...` with the connection flags.
func (o *ordersCLI) run(args ...string) (stdout, stderr string, code int) {
	o.t.Helper()
	return runCLI(o.t, append(append([]string{"session"}, args...), o.base...)...)
}

// session runs `session ARGS...` and returns its stdout; a non-zero exit
// fails the test.
func (o *ordersCLI) session(args ...string) string {
	o.t.Helper()
	stdout, stderr, code := o.run(args...)
	if code != 0 {
		o.t.Fatalf("session %v: exit %d\n%s", args, code, stderr)
	}
	return stdout
}
