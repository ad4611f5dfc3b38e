package client

import _ "github.com/dex-agents/dex-agent-worker/internal/httpapi"
