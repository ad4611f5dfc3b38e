package daemon

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/sessionflow"
)

// RegisterSessionWorkflows registers each agent's session workflow on r as
// a worker of cfg does, with events going nowhere: for replaying recorded
// histories against this build (replay-check). It returns the flow types
// registered.
func RegisterSessionWorkflows(r worker.WorkflowRegistry, cfg *config.Config) []string {
	var types []string
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		rt := runtimeFor(cfg, a, discardEvents{}, true)
		r.RegisterWorkflowWithOptions(sessionflow.Workflow(rt), workflow.RegisterOptions{Name: a.FlowType})
		types = append(types, a.FlowType)
	}
	return types
}

// discardEvents drops a replayed session's events.
type discardEvents struct{}

func (discardEvents) Publish(string, session.Event, string, uint64) {}
