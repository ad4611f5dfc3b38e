package sessionflow

import _ "github.com/dex-agents/dex-agent-worker/internal/session"
