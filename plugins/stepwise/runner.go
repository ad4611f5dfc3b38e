package stepwise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// BuildFunc builds an agent's definition from its runner_config (JSON, or
// "null" when the config has none). It runs once per agent when the worker
// starts; an error stops the worker start with its message.
type BuildFunc func(ctx context.Context, agent string, runnerConfig json.RawMessage) (*AgentDefinition, error)

// Runner runs Stepwise agents: every RunModelStep makes exactly one model
// call through the agent's ModelClient, and every tool call is deferred to
// its own session Step. It stores items as they appear, so its run state
// holds only the turn's model call count and the calls awaiting results.
type Runner struct {
	name, version string
	build         BuildFunc

	mu     sync.RWMutex
	agents map[string]*compiled
	// memo keeps decoded items between a session's model calls.
	memo *itemMemo
}

// NewRunner returns a Runner named name that builds agents with build.
// Serve it from a plugin's main with pluginapi.Serve.
func NewRunner(name, version string, build BuildFunc) *Runner {
	return &Runner{name: name, version: version, build: build, agents: map[string]*compiled{}, memo: newItemMemo(itemMemoBytes)}
}

// Info implements pluginapi.Runner.
func (r *Runner) Info(context.Context, *pluginapi.InfoRequest) (*pluginapi.InfoResponse, error) {
	return &pluginapi.InfoResponse{Name: r.name, Version: r.version}, nil
}

// Configure implements pluginapi.Runner: it builds and checks the agent's
// definition, and reports the names of its tools.
func (r *Runner) Configure(ctx context.Context, req *pluginapi.ConfigureRequest) (*pluginapi.ConfigureResponse, error) {
	cfg := json.RawMessage(req.RunnerConfig)
	if len(cfg) == 0 {
		cfg = json.RawMessage("null")
	}
	def, err := r.build(ctx, req.Agent, cfg)
	if err != nil {
		return nil, err
	}
	c, err := compile(def)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.agents[req.Agent] = c
	r.mu.Unlock()
	tools := make([]string, 0, len(def.Tools))
	for _, t := range def.Tools {
		tools = append(tools, t.def.Name)
	}
	return &pluginapi.ConfigureResponse{Tools: tools, SettingChoices: def.SettingChoices,
		ToolPolicies: c.ownPolicies(), DefaultToolEffect: def.DefaultToolEffect}, nil
}

func (r *Runner) agent(name string) (*compiled, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.agents[name]
	if !ok {
		return nil, fmt.Errorf("agent %q is not configured in this runner", name)
	}
	return c, nil
}

// BuildUserMessage implements pluginapi.Runner.
func (r *Runner) BuildUserMessage(_ context.Context, req *pluginapi.BuildUserMessageRequest) (*pluginapi.BuildUserMessageResponse, error) {
	// The text is the whole item: none is stored (see itemOf).
	return &pluginapi.BuildUserMessageResponse{Message: pluginapi.FrameworkMessage{Role: pluginapi.RoleUser, Text: req.Text}}, nil
}

// runState is the Stepwise framework run state.
type runState struct {
	ModelCalls int `json:"model_calls"`
	// Pending are the tool call IDs of the last model response, whose
	// results the next model call stores.
	Pending []string `json:"pending"`
}

func parseRunState(s string) (runState, error) {
	var st runState
	if s == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return st, fmt.Errorf("stepwise run state: %w", err)
	}
	return st, nil
}

// RunModelStep implements pluginapi.Runner.
func (r *Runner) RunModelStep(ctx context.Context, req *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	turn := &req.Turn
	c, err := r.agent(turn.Agent)
	if err != nil {
		return nil, err
	}
	st, err := parseRunState(turn.RunState)
	if err != nil {
		return nil, err
	}
	decoded, err := r.memo.decode(turn.SessionID, turn.Messages)
	if err != nil {
		return nil, err
	}
	items := withSummary(turn, decoded)
	var newMessages []pluginapi.FrameworkMessage
	for _, id := range st.Pending {
		msg, item := toolResultMessage(turn, id)
		newMessages = append(newMessages, msg)
		items = append(items, item)
	}
	// One pass pairs every call with its result, the pending ones just
	// added included.
	items = withPlan(turn, RepairItems(items))
	instructions, err := c.renderInstructions(InstructionContext{
		Agent: turn.Agent, SessionID: turn.SessionID, TurnID: turn.TurnID, Attempt: turn.Attempt,
		ModelCalls: st.ModelCalls, MessageCount: len(turn.Messages), SessionSettings: settingsMap(turn.SessionSettings),
	})
	if err != nil {
		return nil, err
	}
	limitReached := st.ModelCalls >= c.maxCalls
	m, err := c.def.model(turn.SessionSettings)
	if err != nil {
		// As the reference: RunModel's retries, then the turn's
		// last_turn_error.
		return nil, fmt.Errorf("resolve_model: %w", err)
	}
	mreq := &ModelRequest{Model: m.Name, Instructions: instructions, Items: items, Settings: m.Settings}
	if !limitReached {
		mreq.Tools = offeredTools(c, turn)
		if c.forcePlan(turn, st) {
			mreq.Settings.ToolChoice = "required"
		}
	}
	resp, err := m.Client.CallModel(ctx, mreq, req.Events)
	if err != nil {
		return nil, err
	}
	out, err := outputMessage(resp.Output)
	if err != nil {
		return nil, err
	}
	newMessages = append(newMessages, out)
	st.ModelCalls++
	calls := resp.Output.ToolCalls
	if len(calls) == 0 {
		return &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{NewMessages: newMessages, Usage: resp.Usage, Metadata: resp.Metadata}}, nil
	}
	if limitReached {
		text := fmt.Sprintf(pluginapi.ModelCallLimitToolResultFormat, c.maxCalls)
		for _, call := range calls {
			msg, _ := resultMessage(call.ID, call.Name, string(pluginapi.ToolCallFailed), text)
			newMessages = append(newMessages, msg)
		}
		return &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{NewMessages: newMessages, Usage: resp.Usage, Metadata: resp.Metadata}}, nil
	}
	next := runState{ModelCalls: st.ModelCalls}
	deferred := make([]pluginapi.DeferredToolCall, 0, len(calls))
	for _, call := range calls {
		next.Pending = append(next.Pending, call.ID)
		deferred = append(deferred, pluginapi.DeferredToolCall{
			ToolCallID: call.ID, ToolName: call.Name, Arguments: call.Arguments, Policy: c.policy(turn, call.Name),
		})
	}
	rs, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	return &pluginapi.RunModelStepResponse{ToolCallsRequested: &pluginapi.ToolCallsRequested{
		RunState: string(rs), ToolCalls: deferred, NewMessages: newMessages, Usage: resp.Usage, Metadata: resp.Metadata,
	}}, nil
}

// BuildUnfinishedTurnMessages implements pluginapi.UnfinishedTurnMessageBuilder:
// the results of the last model response's tool calls, which no later model
// call stored.
func (r *Runner) BuildUnfinishedTurnMessages(_ context.Context, req *pluginapi.BuildUnfinishedTurnMessagesRequest) (*pluginapi.BuildUnfinishedTurnMessagesResponse, error) {
	turn := &req.Turn
	st, err := parseRunState(turn.RunState)
	if err != nil {
		return nil, err
	}
	var out []pluginapi.FrameworkMessage
	for _, id := range st.Pending {
		if rec, ok := turn.ToolCall(id); !ok || !rec.Status.Final() {
			continue
		}
		msg, _ := toolResultMessage(turn, id)
		out = append(out, msg)
	}
	return &pluginapi.BuildUnfinishedTurnMessagesResponse{Messages: out}, nil
}

// EstimateInputTokens implements pluginapi.InputTokenEstimator.
func (r *Runner) EstimateInputTokens(_ context.Context, in *pluginapi.EstimateInputTokensRequest) (*pluginapi.EstimateInputTokensResponse, error) {
	turn := &in.Turn
	c, err := r.agent(turn.Agent)
	if err != nil {
		return nil, err
	}
	decoded, err := r.memo.decode(turn.SessionID, turn.Messages)
	if err != nil {
		return nil, err
	}
	items := withPlan(turn, withSummary(turn, RepairItems(decoded)))
	m, err := c.def.model(turn.SessionSettings)
	if err != nil {
		return nil, err
	}
	req := &ModelRequest{Model: m.Name, Instructions: c.def.Instructions, Items: items, Settings: m.Settings, Tools: offeredTools(c, turn)}
	return &pluginapi.EstimateInputTokensResponse{InputTokens: m.Client.EstimateInputTokens(req)}, nil
}

// ExecuteDeferredToolCall implements pluginapi.Runner.
func (r *Runner) ExecuteDeferredToolCall(ctx context.Context, req *pluginapi.ExecuteToolRequest) (*pluginapi.ExecuteToolResponse, error) {
	c, err := r.agent(req.Agent)
	if err != nil {
		return nil, err
	}
	t, ok := c.tools[req.ToolCall.ToolName]
	if !ok {
		return &pluginapi.ExecuteToolResponse{Error: &pluginapi.ToolExecutionError{Message: "unknown tool " + req.ToolCall.ToolName}}, nil
	}
	out, err := t.call(ctx, ToolCallContext{
		IdempotencyKey: req.IdempotencyKey,
		Attempt:        req.Attempt,
		SessionID:      req.SessionID,
		TurnID:         req.TurnID,
		ToolCallID:     req.ToolCall.ToolCallID,
		Checkpoint:     req.HeartbeatCheckpoint,
		InputAnswers:   req.InputAnswers,
		Events:         req.Events,

		InputContinuation: req.ToolCall.InputContinuation,
		SupportsToolTasks: req.SupportsToolTasks && t.poll != nil,
	}, json.RawMessage(req.ToolCall.Arguments))
	var asked *pluginapi.ToolInputRequested
	if errors.As(err, &asked) {
		return &pluginapi.ExecuteToolResponse{InputRequested: asked}, nil
	}
	var started *pluginapi.ToolTaskStarted
	if errors.As(err, &started) {
		if t.poll == nil || !req.SupportsToolTasks {
			// The work started and nothing will poll it: a retry would
			// start it again, so the Step is not retried and the call's
			// effect decides (failed for a read, outcome_unknown
			// otherwise), as the reference does.
			return nil, pluginapi.Permanent(fmt.Errorf("MISSING_TOOL_TASK_POLLER: tool %s started task %s, but it has no poll function (stepwise.WithTaskPoll)", t.def.Name, started.TaskID))
		}
		return &pluginapi.ExecuteToolResponse{TaskStarted: started}, nil
	}
	if err != nil {
		return nil, err
	}
	return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: out}}, nil
}

// PollToolTask implements pluginapi.ToolTaskPoller: it calls the poll
// function of the tool that started the task.
func (r *Runner) PollToolTask(ctx context.Context, req *pluginapi.PollToolTaskRequest) (*pluginapi.ExecuteToolResponse, error) {
	c, err := r.agent(req.Agent)
	if err != nil {
		return nil, err
	}
	t, ok := c.tools[req.ToolCall.ToolName]
	if !ok || t.poll == nil {
		return nil, fmt.Errorf("tool %s has no poll function for task %s", req.ToolCall.ToolName, req.TaskID)
	}
	return t.poll(ctx, TaskPoll{
		SessionID: req.SessionID, TurnID: req.TurnID, ToolCallID: req.ToolCall.ToolCallID, TaskID: req.TaskID,
		Continuation: req.Continuation, PendingAnswer: req.PendingAnswer, Attempt: req.Attempt, Events: req.Events,
	})
}

// CancelToolTask implements pluginapi.ToolTaskCanceller: it calls the
// cancel function of the tool that started the task, if it has one.
func (r *Runner) CancelToolTask(ctx context.Context, req *pluginapi.CancelToolTaskRequest) (*pluginapi.CancelToolTaskResponse, error) {
	c, err := r.agent(req.Agent)
	if err != nil {
		return nil, err
	}
	t, ok := c.tools[req.ToolCall.ToolName]
	if !ok || t.cancel == nil {
		return &pluginapi.CancelToolTaskResponse{}, nil // nothing to stop: the task is abandoned
	}
	if err := t.cancel(ctx, TaskCancel{SessionID: req.SessionID, ToolCallID: req.ToolCall.ToolCallID, TaskID: req.TaskID}); err != nil {
		return nil, err
	}
	return &pluginapi.CancelToolTaskResponse{}, nil
}

// Interface guards
var (
	_ pluginapi.ToolTaskCanceller            = (*Runner)(nil)
	_ pluginapi.Runner                       = (*Runner)(nil)
	_ pluginapi.UnfinishedTurnMessageBuilder = (*Runner)(nil)
	_ pluginapi.InputTokenEstimator          = (*Runner)(nil)
	_ pluginapi.ToolTaskPoller               = (*Runner)(nil)
)

// forcePlan reports whether this model call forces write_todos: a planning
// turn's first call, while no draft exists, with PlanningToolChoice
// "required".
func (c *compiled) forcePlan(turn *pluginapi.TurnContext, st runState) bool {
	return c.def.PlanningToolChoice == PlanningToolChoiceRequired && turn.InteractionMode == "planning" &&
		st.ModelCalls == 0 && (turn.Plan == nil || turn.Plan.Status != "draft")
}

// offeredTools are the tools a model call offers: the agent's own, then the
// tools the session runs itself (built-ins, in turn.HostTools), whose
// names are reserved: an own tool of the same name is left out. A planning
// turn offers only write_todos.
func offeredTools(c *compiled, turn *pluginapi.TurnContext) []pluginapi.ToolDefinition {
	var out []pluginapi.ToolDefinition
	if turn.InteractionMode == "planning" {
		for _, h := range turn.HostTools {
			if h.Name == "write_todos" {
				out = append(out, h)
			}
		}
		return out
	}
	for _, t := range c.def.Tools {
		if !slices.ContainsFunc(turn.HostTools, func(h pluginapi.ToolDefinition) bool { return h.Name == t.def.Name }) {
			out = append(out, t.def)
		}
	}
	return append(out, turn.HostTools...)
}
