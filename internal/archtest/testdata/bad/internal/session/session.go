package session

import (
	_ "net/http"

	_ "github.com/dex-agents/dex-agent-worker/internal/wireconv"
	_ "github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	_ "github.com/dex-agents/dex-agent-worker/wire"
)
