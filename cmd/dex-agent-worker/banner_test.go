package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

func TestSessionSuggestions(t *testing.T) {
	t.Parallel()
	demo := &config.Config{Agents: []config.Agent{{Name: "orders", FlowType: "OrdersAgent"}, {Name: "echo", FlowType: "EchoAgent"}}}
	var b strings.Builder
	printSessionSuggestions(&b, "dex", "", "127.0.0.1:7233", "configs/dev.yaml", demo)
	want := `  ID=$(dex session start --agent orders --message "hello")
  dex session snapshot $ID

  The orders demo: a refund waits for your approval; the snapshot prints the approve command.
  ID=$(dex session start --agent orders --message "refund order 7")
  dex session snapshot $ID

`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("the demo's suggestions (-want +got):\n%s", diff)
	}

	// Another config: no refund walkthrough, and the commands name the
	// config (absolute) and the frontend, so they work from anywhere.
	mine := &config.Config{Agents: []config.Agent{{Name: "counter", FlowType: "CounterAgent"}, {Name: "orders", FlowType: "MyOrders"}}}
	b.Reset()
	printSessionSuggestions(&b, "dex", " --address 127.0.0.1:17233", "127.0.0.1:17233", "my dir/dex.yaml", mine)
	abs, err := filepath.Abs("my dir/dex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want = `  ID=$(dex session start --address 127.0.0.1:17233 --config '` + abs + `' --agent counter --message "hello")
  dex session snapshot --address 127.0.0.1:17233 $ID

`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("another config's suggestions (-want +got):\n%s", diff)
	}
}
