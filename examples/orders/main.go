// Command dex-runner-orders is the orders demo agent: a runner plugin built
// on the stepwise library the way a user builds theirs. Its tools,
// lookup_order (read) and refund_order (non_idempotent_write, approval
// required), work on a JSON file of orders named by runner_config.store_path;
// a scripted model drives them, so it needs no model key. With
// runner_config.model set (see Config.Model), a real model drives the same
// tools instead: OpenAI, Anthropic, or any OpenAI-compatible server.
package main

import (
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/pluginapi/otelenv"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// version is set by the build.
var version = "dev"

func main() {
	pluginapi.Serve(pluginapi.ServeOptions{Runner: stepwise.NewRunner("orders", version, buildAgent), TracerProvider: otelenv.Provider()})
}
