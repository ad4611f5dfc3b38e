// Package wireconv turns the runner contract's values into the session
// records of package wire. The two vocabularies differ on purpose: a runner
// sees what the runner contract names, clients see the session's records.
// The field lists are checked against each other by this package's tests,
// so a field added to one side fails until it is mapped.
package wireconv

import (
	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Message returns a stored message as clients see it.
func Message(m contract.Message, truncated bool) wire.Message {
	return wire.Message{
		Sequence:      m.Sequence,
		Role:          wire.Role(m.Role),
		Text:          m.Text,
		Item:          m.Item,
		ToolCallID:    m.ToolCallID,
		ToolName:      m.ToolName,
		TurnID:        m.TurnID,
		ToolStatus:    wire.ToolCallStatus(m.ToolStatus),
		TextTruncated: truncated,
	}
}

// Messages returns stored messages as clients see them, none truncated.
func Messages(ms []contract.Message) []wire.Message {
	out := make([]wire.Message, len(ms))
	for i, m := range ms {
		out[i] = Message(m, false)
	}
	return out
}

// Usage returns a runner's usage count as a session record.
func Usage(u contract.Usage) wire.Usage {
	return wire.Usage{
		InputTokens:       u.InputTokens,
		OutputTokens:      u.OutputTokens,
		CachedInputTokens: u.CachedInputTokens,
		ReasoningTokens:   u.ReasoningTokens,
		TotalTokens:       u.TotalTokens,
		ModelCalls:        u.ModelCalls,
	}
}

// RunnerToolCall returns the part of a session's tool call record that a
// runner sees.
func RunnerToolCall(c wire.ToolCall) contract.ToolCall {
	return contract.ToolCall{
		ToolCallID:              c.ToolCallID,
		ToolName:                c.ToolName,
		Arguments:               c.Arguments,
		Effect:                  contract.Effect(c.Effect),
		RequiresApproval:        c.RequiresApproval,
		Status:                  contract.ToolCallStatus(c.Status),
		DeferralOrder:           c.DeferralOrder,
		Output:                  c.Output,
		Error:                   c.Error,
		RejectionMessage:        c.RejectionMessage,
		ToolSourceReference:     c.ToolSourceReference,
		CancellationReason:      c.CancellationReason,
		InputContinuation:       c.InputContinuation,
		TaskID:                  c.TaskID,
		TaskPollIntervalSeconds: c.TaskPollIntervalSeconds,
	}
}

// RunnerToolCalls returns RunnerToolCall of each record.
func RunnerToolCalls(cs []wire.ToolCall) []contract.ToolCall {
	if cs == nil {
		return nil
	}
	out := make([]contract.ToolCall, len(cs))
	for i, c := range cs {
		out[i] = RunnerToolCall(c)
	}
	return out
}

// RunnerPlan returns a session's plan as a runner sees it.
func RunnerPlan(p *wire.Plan) *contract.Plan {
	if p == nil {
		return nil
	}
	out := &contract.Plan{Revision: p.Revision, Status: p.Status, Tasks: make([]contract.PlanTask, len(p.Tasks))}
	for i, t := range p.Tasks {
		out.Tasks[i] = contract.PlanTask{Content: t.Content, Status: t.Status}
	}
	return out
}

// QuestionAnswer returns a resolution of a question as a runner sees it.
func QuestionAnswer(a *wire.QuestionAnswer) *contract.QuestionAnswer {
	if a == nil {
		return nil
	}
	return &contract.QuestionAnswer{Resolution: a.Resolution, Answer: a.Answer}
}
