package runnerhost

import (
	"context"
	"maps"
	"slices"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// handle is the Runner that Host.Runner returns. Every call goes to the
// plugin's current process (see instance.acquire).
type handle struct {
	inst *instance
}

// unsupported is the error of an optional call the plugin lacks.
func (h *handle) unsupported(call string) error {
	return &callError{plugin: h.inst.spec.Name, call: call, sentinel: ErrUnsupported, err: ErrUnsupported}
}

// Info implements pluginapi.Runner.
func (h *handle) Info(ctx context.Context, req *pluginapi.InfoRequest) (*pluginapi.InfoResponse, error) {
	p, err := h.inst.acquireFor(ctx, "Info")
	if err != nil {
		return nil, err
	}
	resp, err := p.runner.Info(ctx, req)
	return resp, h.inst.wrap(ctx, p, "Info", err)
}

// Configure implements pluginapi.Runner like Host.Configure: the
// configuration is remembered for restarts, and ProtocolVersion is the
// negotiated one whatever req says. The response holds the tools the
// plugin reported (see Host.Tools).
func (h *handle) Configure(ctx context.Context, req *pluginapi.ConfigureRequest) (*pluginapi.ConfigureResponse, error) {
	if err := h.inst.configure(ctx, req.Agent, req.RunnerConfig); err != nil {
		return nil, err
	}
	h.inst.mu.Lock()
	tools := slices.Clone(h.inst.tools[req.Agent])
	choices := slices.Clone(h.inst.choices[req.Agent])
	policies := h.inst.policies[req.Agent]
	h.inst.mu.Unlock()
	return &pluginapi.ConfigureResponse{Tools: tools, SettingChoices: choices,
		ToolPolicies: maps.Clone(policies.tools), DefaultToolEffect: policies.defaultEffect}, nil
}

// BuildUserMessage implements pluginapi.Runner.
func (h *handle) BuildUserMessage(ctx context.Context, req *pluginapi.BuildUserMessageRequest) (*pluginapi.BuildUserMessageResponse, error) {
	const call = "BuildUserMessage"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	resp, err := p.runner.BuildUserMessage(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// RunModelStep implements pluginapi.Runner.
func (h *handle) RunModelStep(ctx context.Context, req *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	const call = "RunModelStep"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	resp, err := p.runner.RunModelStep(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// ExecuteDeferredToolCall implements pluginapi.Runner.
func (h *handle) ExecuteDeferredToolCall(ctx context.Context, req *pluginapi.ExecuteToolRequest) (*pluginapi.ExecuteToolResponse, error) {
	const call = "ExecuteDeferredToolCall"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	resp, err := p.runner.ExecuteDeferredToolCall(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// BuildUnfinishedTurnMessages implements pluginapi.UnfinishedTurnMessageBuilder.
func (h *handle) BuildUnfinishedTurnMessages(ctx context.Context, req *pluginapi.BuildUnfinishedTurnMessagesRequest) (*pluginapi.BuildUnfinishedTurnMessagesResponse, error) {
	const call = "BuildUnfinishedTurnMessages"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	if !p.caps.UnfinishedTurnMessages {
		return nil, h.unsupported(call)
	}
	resp, err := p.runner.BuildUnfinishedTurnMessages(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// PollToolTask implements pluginapi.ToolTaskPoller.
func (h *handle) PollToolTask(ctx context.Context, req *pluginapi.PollToolTaskRequest) (*pluginapi.ExecuteToolResponse, error) {
	const call = "PollToolTask"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	if !p.caps.ToolTaskPolling {
		return nil, h.unsupported(call)
	}
	resp, err := p.runner.PollToolTask(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// CancelToolTask implements pluginapi.ToolTaskCanceller.
func (h *handle) CancelToolTask(ctx context.Context, req *pluginapi.CancelToolTaskRequest) (*pluginapi.CancelToolTaskResponse, error) {
	const call = "CancelToolTask"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	if !p.caps.ToolTaskCancelling {
		return nil, h.unsupported(call)
	}
	resp, err := p.runner.CancelToolTask(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// EstimateInputTokens implements pluginapi.InputTokenEstimator.
func (h *handle) EstimateInputTokens(ctx context.Context, req *pluginapi.EstimateInputTokensRequest) (*pluginapi.EstimateInputTokensResponse, error) {
	const call = "EstimateInputTokens"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	if !p.caps.InputTokenEstimation {
		return nil, h.unsupported(call)
	}
	resp, err := p.runner.EstimateInputTokens(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// SelectCompactionCutoff implements pluginapi.Compactor.
func (h *handle) SelectCompactionCutoff(ctx context.Context, req *pluginapi.CompactionCutoffRequest) (*pluginapi.CompactionCutoffResponse, error) {
	const call = "SelectCompactionCutoff"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	if !p.caps.Compaction {
		return nil, h.unsupported(call)
	}
	resp, err := p.runner.SelectCompactionCutoff(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// SummarizeContext implements pluginapi.Compactor.
func (h *handle) SummarizeContext(ctx context.Context, req *pluginapi.SummarizeContextRequest) (*pluginapi.SummarizeContextResponse, error) {
	const call = "SummarizeContext"
	p, err := h.inst.acquireFor(ctx, call)
	if err != nil {
		return nil, err
	}
	if !p.caps.Compaction {
		return nil, h.unsupported(call)
	}
	resp, err := p.runner.SummarizeContext(ctx, req)
	return resp, h.inst.wrap(ctx, p, call, err)
}

// Interface guards
var (
	_ pluginapi.Runner                       = (*handle)(nil)
	_ pluginapi.UnfinishedTurnMessageBuilder = (*handle)(nil)
	_ pluginapi.ToolTaskPoller               = (*handle)(nil)
	_ pluginapi.ToolTaskCanceller            = (*handle)(nil)
	_ pluginapi.InputTokenEstimator          = (*handle)(nil)
	_ pluginapi.Compactor                    = (*handle)(nil)
)
