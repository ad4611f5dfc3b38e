package wireconv

// The core may import wireconv, but not what wireconv imports here.
import _ "github.com/dex-agents/dex-agent-worker/internal/steps"
