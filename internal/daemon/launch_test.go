package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/mcpsource"
	"github.com/dex-agents/dex-agent-worker/internal/runnerhost"
)

// TestLaunchPluginsWarnsAboutUnofferedToolPolicies starts the orders demo
// plugin, which reports its tools, with a policy for a misspelt tool.
func TestLaunchPluginsWarnsAboutUnofferedToolPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a plugin")
	}
	// agenttest.BuildBinary would import this package: build it here.
	plugin := filepath.Join(t.TempDir(), "dex-runner-orders")
	if out, err := exec.Command("go", "build", "-o", plugin, "github.com/dex-agents/dex-agent-worker/examples/orders").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg, err := config.LoadBytes(fmt.Appendf(nil, `
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: %s}
    tool_policies:
      lookup_order: {effect: read}
      refund_ordr: {effect: non_idempotent_write}
`, plugin, filepath.Join(t.TempDir(), "orders.json")), "")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d := &Daemon{log: logger, host: runnerhost.New(nil)}
	defer d.host.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := d.launchPlugins(ctx, cfg, nil); err != nil {
		t.Fatal(err)
	}
	got := logs.String()
	want := `level=WARN msg="tool_policies names a tool the runner does not offer; the policy never applies" agent=orders tool=refund_ordr runner=orders offered="[lookup_order refund_order request_return_label]"`
	if !strings.Contains(got, want) {
		t.Errorf("log lacks\n%s\nlog:\n%s", want, got)
	}
	if strings.Count(got, "\n") != 1 {
		t.Errorf("want exactly one warning, log:\n%s", got)
	}
}

// TestResourceToolNamesAgree: the config knows the resources and prompts
// tools' names (for tool_policies) without importing the MCP client.
func TestResourceToolNamesAgree(t *testing.T) {
	var names []string
	for _, tool := range mcpsource.ResourceTools([]string{"x"}) {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, config.MCPResourceToolNames) {
		t.Errorf("mcpsource offers %q, config names %q", names, config.MCPResourceToolNames)
	}
}
