package pluginapi_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// serveInProcess serves r with pluginapi.RunnerPlugin over a local gRPC
// connection (go-plugin's plugin.TestPluginGRPCConn) and returns the Runner
// the host side dispenses: every call crosses the real gRPC shims. A
// runner's own tests can do the same.
func serveInProcess(r pluginapi.Runner) (pluginapi.Runner, func()) {
	client, server := plugin.TestPluginGRPCConn(exampleTB{}, false, map[string]plugin.Plugin{
		pluginapi.PluginName: &pluginapi.RunnerPlugin{Runner: r},
	})
	raw, err := client.Dispense(pluginapi.PluginName)
	if err != nil {
		panic(err)
	}
	return raw.(pluginapi.Runner), func() {
		// Stop the server first: client.Close asks the server to stop
		// itself, and go-plugin's GRPCServer.Stop is not safe to run twice
		// at once.
		server.Stop()
		_ = client.Close()
	}
}

// exampleTB lets examples, which have no *testing.T, call go-plugin's test
// helpers; those only call Fatal and Fatalf, on failure.
type exampleTB struct{ testing.TB }

func (exampleTB) Helper()                           {}
func (exampleTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// printEvents is a host-side ToolEventWriter that prints what arrives.
type printEvents struct{}

func (printEvents) WriteTextDelta(text string)      { fmt.Printf("text delta %q\n", text) }
func (printEvents) WriteReasoningDelta(text string) { fmt.Printf("reasoning delta %q\n", text) }
func (printEvents) Heartbeat()                      { fmt.Println("heartbeat") }
func (printEvents) SaveHeartbeatCheckpoint(text string) {
	fmt.Printf("heartbeat checkpoint %q\n", text)
}

func (printEvents) WriteEvent(eventType string, payload any) error {
	fmt.Printf("event %s %v\n", eventType, payload)
	return nil
}
