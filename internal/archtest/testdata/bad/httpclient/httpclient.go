package httpclient

import _ "github.com/dex-agents/dex-agent-worker/client"
