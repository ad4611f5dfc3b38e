package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer/aimock"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// BenchmarkAdapterTurn measures the same turn on the Go Stepwise runner and
// on each Python framework adapter: "look up order 7" to the orders agent
// on its scripted model, which looks the order up (a read tool Step) and
// answers. That is BuildUserMessage, RunModel, CallTool, RunModel, each a
// call to the runner plugin. The ratio of an adapter's ns/op to
// runner=stepwise's is its cost per turn. The AI SDK runner has no
// scripted model: it is measured against aimock's Responses API, beside
// Stepwise on the same wire (runner=ai-sdk-responses against
// runner=stepwise-responses). The Claude Agent SDK runs the read inside its
// harness: BuildUserMessage and one RunModel that starts the harness,
// which makes both model calls.
func BenchmarkAdapterTurn(b *testing.B) {
	sdk, err := filepath.Abs(pySDKDir())
	if err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(sdk, ".venv", "bin", "python"), "-c", "import dex_runner.openai_agents, dex_runner.pydantic_ai, dex_runner.langgraph, dex_runner.google_adk, dex_runner.claude_agent_sdk").CombinedOutput(); err != nil {
		b.Fatalf("the Python SDK's virtualenv (make test-peers): %v\n%s", err, out)
	}
	orders := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/examples/orders")
	runners := []struct{ name, plugin, runnerConfig string }{
		{"stepwise", "{command: " + orders + "}", `store_path: "{{DIR}}/orders.json"`},
	}
	for _, ex := range pyExamples {
		plugin := fmt.Sprintf("{command: python, venv: %s, args: [%s]}", filepath.Join(sdk, ".venv"), filepath.Join(ex.dir(), "main.py"))
		if ex.node {
			plugin = fmt.Sprintf("{command: node, args: [%s]}", filepath.Join(ex.dir(), "dist", "main.js"))
		}
		runners = append(runners, struct{ name, plugin, runnerConfig string }{
			strings.TrimPrefix(ex.name, "orders-"), plugin, ex.storage + "\n      model: {provider: scripted}",
		})
	}
	// The AI SDK runner (examples/runner-ts) has no scripted model: it and
	// Stepwise make the same turn's calls to aimock's Responses API.
	if node, main := tsRunner(b); node != "" {
		mock := aimock.Start(b, filepath.Join("testdata", "aimock-bench"))
		// The worker of timedTurns runs in this process: its plugins get
		// the key from this environment.
		b.Setenv(benchKeyEnv, "sk-bench-0123456789")
		model := fmt.Sprintf(`model: {provider: openai, name: gpt-bench, api_base: "%s/v1", api_key_env: %s}`, mock.URL, benchKeyEnv)
		runners = append(runners,
			struct{ name, plugin, runnerConfig string }{"stepwise-responses", "{command: " + orders + ", env: [" + benchKeyEnv + "]}", `store_path: "{{DIR}}/orders.json"` + "\n      " + model},
			struct{ name, plugin, runnerConfig string }{"ai-sdk-responses", fmt.Sprintf("{command: %s, args: [%s], env: [%s]}", node, main, benchKeyEnv),
				`store_path: "{{DIR}}/orders.json"` + "\n      " + fmt.Sprintf(`model: {base_url: "%s/v1", name: gpt-bench, api_key_env: %s, api: responses}`, mock.URL, benchKeyEnv)},
		)
	}
	for _, r := range runners {
		b.Run("runner="+r.name, func(b *testing.B) {
			s := agenttest.NewStack(b, fmt.Sprintf(`
plugins:
  orders: %s
agents:
  - name: orders
    flow_type: OrdersBench
    runner: orders
    runner_config:
      %s
    tool_policies:
      lookup_order: {effect: read}
`, r.plugin, r.runnerConfig))
			benchOrdersTurn(b, s)
		})
	}
}

// benchKeyEnv holds the API key the runners that call aimock send.
const benchKeyEnv = "DEX_BENCH_MODEL_KEY"

func benchOrdersTurn(b *testing.B, s *agenttest.Stack) {
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		b.Fatal(err)
	}
	id, d := timedTurns(b, s, cfg, client.StartSessionOptions{FlowType: "OrdersBench"}, "look up order 7")
	defer d.Stop()
	ctx := context.Background()
	snap, err := s.Sessions.GetAgentSnapshot(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	if got := lastText(snap); !strings.Contains(got, "rder 7") || snap.State.LastTurnError != "" {
		b.Fatalf("last answer = %q (error %q)", got, snap.State.LastTurnError)
	}
	if c := snap.Usage.ModelCalls; c != int64(2*(b.N+1)) {
		b.Fatalf("%d model calls for %d turns, want 2 per turn", c, b.N+1)
	}
	reportHistoryPerTurn(b, s, id, wire.UpdateSendUserMessage)
}
