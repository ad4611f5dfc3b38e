package main

import (
	_ "github.com/dex-agents/dex-agent-worker/internal/config"
	_ "github.com/dex-agents/dex-agent-worker/pluginapi"
)

func main() {}
