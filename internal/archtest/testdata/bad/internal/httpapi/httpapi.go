package httpapi

import _ "github.com/dex-agents/dex-agent-worker/internal/sessionflow"
