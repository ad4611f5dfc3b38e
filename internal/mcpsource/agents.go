package mcpsource

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Agents gives each agent the tools of the servers its config names, over
// one Source, so agents that share a server share its listing cache.
type Agents struct {
	Source *Source
	// Servers maps an agent to its servers' names, in the config's order
	// (which decides the duplicate names dropped).
	Servers map[string][]string
	// ResourceTools names the agents that also get the resources and
	// prompts tools over their servers.
	ResourceTools map[string]bool
}

// Tools lists agent's tools as [Source.ToolsOf] does; an agent without
// servers has none.
func (a *Agents) Tools(ctx context.Context, agent string) ([]Tool, error) {
	names := a.Servers[agent]
	if len(names) == 0 || a.Source == nil {
		return nil, nil
	}
	tools, err := a.Source.ToolsOf(ctx, names)
	if err != nil {
		return nil, err
	}
	if a.ResourceTools[agent] {
		// After the servers' tools; a server's tool of the same name
		// (which cannot be "<server>__...") is never offered twice.
		for _, rt := range ResourceTools(names) {
			if !slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == rt.Name }) {
				tools = append(tools, rt)
			}
		}
	}
	return tools, nil
}

// Call runs a call of agent's as [Source.CallWithAnswer] does. A server the agent
// does not have (any more: its config changed since the call was
// recorded) is a call that is not sent.
func (a *Agents) Call(ctx context.Context, agent, ref string, arguments json.RawMessage, idempotencyKey string, progress func(Progress), answer *Answer) Outcome {
	server, mcpName, ok := ParseRef(ref)
	if !ok {
		return Outcome{Kind: NotSent, Err: fmt.Errorf("mcp: %q is not an MCP tool reference", ref)}
	}
	if server == resourceToolsServer {
		if a.Source == nil || !a.ResourceTools[agent] {
			return Outcome{Kind: NotSent, Err: fmt.Errorf("mcp: agent %s does not have the resources and prompts tools", agent)}
		}
		return a.Source.CallResourceTool(ctx, mcpName, arguments, a.Servers[agent])
	}
	if err := a.check(agent, ref); err != nil {
		return Outcome{Kind: NotSent, Err: err}
	}
	return a.Source.CallWithAnswer(ctx, ref, arguments, idempotencyKey, progress, answer)
}

// PollTask polls a task of agent's as [Source.PollTask] does; a server the
// agent no longer has cannot be read.
func (a *Agents) PollTask(ctx context.Context, agent, ref, taskID string) TaskPoll {
	if err := a.check(agent, ref); err != nil {
		return TaskPoll{Outcome: &Outcome{Kind: OutcomeUnknown, Err: err}}
	}
	return a.Source.PollTask(ctx, ref, taskID)
}

// CancelTask cancels a task of agent's as [Source.CancelTask] does.
func (a *Agents) CancelTask(ctx context.Context, agent, ref, taskID string) error {
	if err := a.check(agent, ref); err != nil {
		return err
	}
	return a.Source.CancelTask(ctx, ref, taskID)
}

func (a *Agents) check(agent, ref string) error {
	server, _, ok := ParseRef(ref)
	if !ok {
		return fmt.Errorf("mcp: %q is not an MCP tool reference", ref)
	}
	if a.Source == nil || !slices.Contains(a.Servers[agent], server) {
		return fmt.Errorf("mcp: server %q is not configured for agent %s", server, agent)
	}
	return nil
}

// AnswerTask answers a task's question as [Source.AnswerTask] does.
func (a *Agents) AnswerTask(ctx context.Context, agent, ref, taskID, question, resolution, answer string) (bool, TaskPoll) {
	if err := a.check(agent, ref); err != nil {
		return false, TaskPoll{Outcome: &Outcome{Kind: OutcomeUnknown, Err: err}}
	}
	return a.Source.AnswerTask(ctx, ref, taskID, question, resolution, answer)
}
