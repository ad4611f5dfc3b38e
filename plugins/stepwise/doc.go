// Package stepwise is the built-in agent loop: agents defined in Dex terms,
// without a framework. A Runner implements the runner contract
// (pluginapi.Runner): every RunModelStep makes exactly one model call through
// a ModelClient, and every tool call is deferred to its own session Step, so
// approvals, retries by effect class and idempotency keys work as for any
// runner.
//
// A plugin binary builds its agents from their runner_config and serves them:
//
//	func main() {
//		pluginapi.Serve(stepwise.NewRunner("orders", "1.0.0", buildAgent))
//	}
//
//	func buildAgent(ctx context.Context, agent string, cfg json.RawMessage) (*stepwise.AgentDefinition, error) {
//		lookup := stepwise.MustFunctionTool("lookup_order", "Look up an order by its ID.",
//			func(ctx context.Context, tc stepwise.ToolCallContext, args struct {
//				OrderID string `json:"order_id" description:"The order's ID."`
//			}) (Order, error) {
//				return store.Get(args.OrderID)
//			}, stepwise.WithEffect(pluginapi.EffectRead))
//		return &stepwise.AgentDefinition{
//			Name:         agent,
//			Instructions: "You help customers with their orders.",
//			Model:        model,
//			Tools:        []*stepwise.Tool{lookup},
//		}, nil
//	}
//
// ScriptedModelClient answers from a deterministic function of the request,
// so agents run without a model key in demos and tests.
package stepwise
