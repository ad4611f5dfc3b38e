package config_test

import (
	"fmt"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

func ExampleLoadBytes() {
	_, err := config.LoadBytes([]byte(`
plugins:
  stepwise: {command: dex-runner-stepwise}
agents:
  - name: support
    flow_type: SupportAgent
    runner: stepwise
    tool_policy:
      refund: {effect: write}
  - name: support
    flow_type: RefundsAgent
    runner: step-wise
    tool_policies:
      refund: {effect: write}
`), "")
	fmt.Println(err)
	// Output:
	// line 8: agents[0].tool_policy: unknown key (did you mean "tool_policies"?)
	// line 10: agents[1].name: duplicate agent name "support" (also agents[0])
	// line 12: agents[1].runner: unknown plugin "step-wise" (did you mean "stepwise"?)
	// line 14: agents[1].tool_policies.refund.effect: unknown effect "write" (want read, idempotent_write, non_idempotent_write or unclassified)
}

func ExampleAgent_RunnerConfigJSON() {
	cfg, err := config.LoadBytes([]byte(`
plugins: {orders: {command: dex-runner-orders}}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: .dex/orders.json, limits: {max_refund: 100, currency: USD}}
`), "")
	if err != nil {
		fmt.Println(err)
		return
	}
	agent, _ := cfg.AgentByFlowType("OrdersAgent")
	b, _ := agent.RunnerConfigJSON()
	fmt.Println(string(b))
	// Output:
	// {"limits":{"currency":"USD","max_refund":100},"store_path":".dex/orders.json"}
}
