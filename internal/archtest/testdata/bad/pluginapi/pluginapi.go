package pluginapi

import _ "github.com/dex-agents/dex-agent-worker/internal/tracing"
