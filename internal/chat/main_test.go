package chat

import (
	"os"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
)

func TestMain(m *testing.M) {
	agenttest.RunWorkerIfChild() // the worker child of the end-to-end tests
	os.Exit(m.Run())
}
