package wire

import _ "github.com/dex-agents/dex-agent-worker/pluginapi/contract"
