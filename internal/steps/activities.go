package steps

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/wireconv"
	"github.com/dex-agents/dex-agent-worker/wire"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/internal/approvalrules"
	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/mcpsource"
	"github.com/dex-agents/dex-agent-worker/internal/metrics"
	"github.com/dex-agents/dex-agent-worker/internal/notify"
	"github.com/dex-agents/dex-agent-worker/internal/runnerhost"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/spend"
	"github.com/dex-agents/dex-agent-worker/internal/tracing"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// Runners finds the runner that serves an agent.
type Runners interface {
	Runner(agent string) (pluginapi.Runner, pluginapi.Capabilities, error)
}

// ToolLister is what Runners may also implement: the names of the tools
// an agent's runner offers (its ConfigureResponse.Tools), nil when the
// runner did not say. RunModel uses them to fail the calls of names no
// source offers and to refuse a runner tool named as a built-in.
type ToolLister interface {
	Tools(agent string) []string
}

// MCPTools are the MCP tools the worker runs itself for its agents'
// sessions (see internal/mcpsource): RunModel offers an agent's tools to
// its runner, and a tool Step calls the one a call's record routes to.
type MCPTools interface {
	// Tools lists the MCP tools of agent's servers, from the listing
	// cache; a server that cannot be listed is left out. It fails only
	// when ctx ends while a first listing runs.
	Tools(ctx context.Context, agent string) ([]mcpsource.Tool, error)
	// Call runs one call of agent's on the tool ref names, with the
	// user's answer when the server asked a question; a server the agent
	// no longer has is a call that is not sent.
	Call(ctx context.Context, agent, ref string, arguments json.RawMessage, idempotencyKey string, progress func(mcpsource.Progress), answer *mcpsource.Answer) mcpsource.Outcome
	// PollTask reads once the task a call of agent's on ref started.
	PollTask(ctx context.Context, agent, ref, taskID string) mcpsource.TaskPoll
	// CancelTask sends the task's cancellation.
	CancelTask(ctx context.Context, agent, ref, taskID string) error
	// AnswerTask hands the resolution of the task's question over, while
	// the task still asks it.
	AnswerTask(ctx context.Context, agent, ref, taskID, question, resolution, answer string) (sent bool, poll mcpsource.TaskPoll)
}

// Hooks let tests stop a Step at an exact point. Production code leaves them nil.
type Hooks struct {
	// BeforeToolStart runs in a tool Step before it records that the tool
	// started, so a test can kill the worker at a point where the tool never ran.
	BeforeToolStart func(ctx context.Context, in session.ToolInput)
	// BeforeMailSend runs in a SendNotification Step once a mail to
	// channel is composed, before the SMTP server is reached.
	BeforeMailSend func(ctx context.Context, channel string)
	// AfterStoreWork runs in a Step that stores messages after it did the
	// session's store work (chunks cut and written, chunks deleted) and
	// before its own, so a test can kill the worker between a chunk's
	// write and the workflow's commit of it. done is what that store work
	// reports (DeletedBefore set once retention deleted, by this attempt
	// or one before it).
	AfterStoreWork func(ctx context.Context, sessionID string, w *session.StoreWork, done *session.StoreResult)
}

// ToolServer answers tool calls instead of running them: eval run serves
// the calls of a recorded session from its record. Production workers have
// none.
type ToolServer interface {
	// Serve returns the call's outcome and true, or false to run the call
	// as usual. arguments are the call's whole arguments.
	Serve(ctx context.Context, in session.ToolInput, arguments string) (session.ToolOutcome, bool)
}

// ModelCache keeps runners' answers to model calls by the turn they were
// asked with, so that a call asked again gets the same answer without
// calling the model: eval run's --model-cache. Production workers have
// none.
type ModelCache interface {
	// Get returns the answer kept for key.
	Get(key string) (*pluginapi.RunModelStepResponse, bool)
	// Put keeps an answer.
	Put(key string, resp *pluginapi.RunModelStepResponse)
}

// ModelCacheKey is the key of a model call: the turn the runner is asked
// with, but for what differs between sessions that replay the same
// conversation (the session's ID, the Step's attempt).
func ModelCacheKey(turn pluginapi.TurnContext) (string, error) {
	turn.SessionID, turn.Attempt = "", 0
	b, err := json.Marshal(turn)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Activities are the session's Steps that call out: the model, the tools and
// the runner's message builders. Register them with Register.
type Activities struct {
	Runners Runners
	// Store is the message store of the sessions that keep their messages
	// there (with a read cache); nil when the worker has none.
	Store  transcript.Store
	Events events.Sink
	Logger *slog.Logger
	// Redact removes secrets from the runner's error texts before they
	// reach the session's history, its events or the model; nil keeps
	// them unchanged.
	Redact func(string) string
	Hooks  Hooks
	// Tools, when set, may answer a tool call in place of the tool.
	Tools ToolServer
	// Models, when set, answers model calls it has answers for.
	Models ModelCache
	// SpendPolicy returns the spend limits and prices of an agent's
	// session started by an API token ("" for none); nil checks nothing.
	SpendPolicy func(agent, token string) *spend.Policy
	// Limiter checks and charges the model calls under a spend policy.
	Limiter *spend.Limiter
	// MCP runs the MCP tools of the agents that have servers; nil offers
	// none.
	MCP MCPTools
	// Metrics count model tokens and tool results; nil counts nothing.
	Metrics *metrics.Metrics
	// Tracer writes the chat and execute_tool spans (nil: none).
	Tracer *tracing.Tracer
	// Liveness gives an agent's bounds on what a model call streams
	// (run_model_limit's first_chunk_timeout, chunk_gap_timeout,
	// call_timeout); nil or zero bounds: none.
	Liveness func(agent string) ModelLiveness
	// ApprovalRules gives an agent's compiled approval rules (nil: none).
	ApprovalRules func(agent string) *approvalrules.Set
	// ModelCalls ends a cancelled turn's model call at once (nil: the
	// call learns of the cancel through its heartbeat).
	ModelCalls *ModelCalls
	// Notify sends the notifications of interrupts (nil: none are
	// configured, and a SendNotification Step fails at once).
	Notify *notify.Sender

	running atomic.Int64
	// sent remembers the transcripts this worker's plugins were sent.
	sent sentTranscripts
}

// Running reports how many Steps are running in this process.
func (a *Activities) Running() int { return int(a.running.Load()) }

// begin counts a running Step until the returned func is called.
func (a *Activities) begin() (end func()) {
	a.running.Add(1)
	return func() { a.running.Add(-1) }
}

func (a *Activities) redact(s string) string {
	if a.Redact == nil {
		return s
	}
	return a.Redact(s)
}

// finish turns a Step's error into the application error the engine
// stores in the session's history (where last_turn_error, events and the
// model take it from): secrets removed, the failed attempt in its details
// (StepFailure), and the type and retry rule of an application error kept.
// An error of a cancelled attempt is left to the engine, which reports the
// cancellation.
func (a *Activities) finish(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	msg, typ, nonRetryable, delay := err.Error(), "", false, time.Duration(0)
	if app, ok := err.(*temporal.ApplicationError); ok {
		// This package builds its application errors without a cause, so
		// the message is the whole text.
		msg, typ, nonRetryable, delay = app.Message(), app.Type(), app.NonRetryable(), app.NextRetryDelay()
	}
	return temporal.NewApplicationErrorWithOptions(a.redact(msg), typ, temporal.ApplicationErrorOptions{
		NonRetryable:   nonRetryable,
		NextRetryDelay: delay,
		Details:        []any{session.StepFailure{Attempt: int(activity.GetInfo(ctx).Attempt)}},
	})
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger
}

// stepLogger is the logger of a Step's own lines: each carries the
// session, the turn (when the Step knows it), the Step type, its execution
// ID (the events' step_execution_id) and the attempt.
func (a *Activities) stepLogger(ctx context.Context, turnID string) *slog.Logger {
	l := a.logger()
	if ctx == nil || !activity.IsActivity(ctx) {
		return l
	}
	info := activity.GetInfo(ctx)
	l = l.With("session_id", info.WorkflowExecution.ID, "step", info.ActivityType.Name,
		"step_execution_id", info.WorkflowExecution.RunID+"/"+info.ActivityID, "attempt", info.Attempt)
	if turnID != "" {
		l = l.With("turn_id", turnID)
	}
	return l
}

// MaxHeartbeatInterval is the longest time between two heartbeats of a
// running Step (the spec's 20 seconds).
const MaxHeartbeatInterval = 20 * time.Second

// heartbeatInterval is how often a running Step heartbeats in the
// background: a third of its heartbeat timeout, at most every 20 seconds,
// so two heartbeats can be lost before the engine gives up on the worker.
func heartbeatInterval(ctx context.Context) time.Duration {
	timeout := activity.GetInfo(ctx).HeartbeatTimeout
	if timeout <= 0 || timeout/3 > MaxHeartbeatInterval {
		return MaxHeartbeatInterval
	}
	return timeout / 3
}

// ModelHeartbeatInterval is how often a model call or compaction Step
// heartbeats: a cancel_turn reaches a running Step only through a
// heartbeat's answer, so it stops the runner's call within about this long
// (the worker's heartbeat throttle is set to match).
const ModelHeartbeatInterval = time.Second

// shield returns a context that ignores the Step's cancellation but keeps
// its deadline: a tool that started runs to its end when the turn is
// steered or cancelled.
func shield(ctx context.Context) (context.Context, context.CancelFunc) {
	c := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(c, d)
	}
	return context.WithCancel(c)
}

// BuildUserMessage asks the runner for the turn's user message.
func (a *Activities) BuildUserMessage(ctx context.Context, in session.BuildUserMessageInput) (session.BuildUserMessageOutput, error) {
	defer a.begin()()
	out, err := a.buildUserMessage(ctx, in)
	out.Attempt = int(activity.GetInfo(ctx).Attempt)
	return out, a.finish(ctx, err)
}

func (a *Activities) buildUserMessage(ctx context.Context, in session.BuildUserMessageInput) (session.BuildUserMessageOutput, error) {
	r, _, err := a.Runners.Runner(in.Agent)
	if err != nil {
		return session.BuildUserMessageOutput{}, err
	}
	var stored *session.StoreResult
	text := in.Text
	if in.Store != nil {
		if stored, err = a.doStoreWork(ctx, in.SessionID, in.Store); err != nil {
			return session.BuildUserMessageOutput{}, err
		}
		if in.TextRef != "" {
			if text, err = a.blob(ctx, in.SessionID, in.TextRef); err != nil {
				return session.BuildUserMessageOutput{}, err
			}
		}
	}
	resp, err := r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: in.Agent, Text: text})
	if err != nil {
		return session.BuildUserMessageOutput{}, err
	}
	if resp == nil {
		return session.BuildUserMessageOutput{}, errors.New("build_user_message returned no message")
	}
	if in.Store == nil {
		return session.BuildUserMessageOutput{Message: resp.Message}, nil
	}
	if stored.Messages, err = a.storeMessages(ctx, in.SessionID, in.TurnID, in.Store, activity.GetInfo(ctx).Attempt, []pluginapi.FrameworkMessage{resp.Message}); err != nil {
		return session.BuildUserMessageOutput{}, err
	}
	return session.BuildUserMessageOutput{Stored: stored}, nil
}

// RunModel makes one model call through the agent's runner.
func (a *Activities) RunModel(ctx context.Context, in session.TurnInput) (session.ModelOutcome, error) {
	defer a.begin()()
	start := time.Now()
	ctx = tracing.WithSession(ctx, in.SessionID)
	var out session.ModelOutcome
	err := a.modelCall(ctx, in.SessionID, in.TurnID, func(call context.Context) (err error) {
		out, err = a.runModel(call, in)
		return err
	})
	out.Attempt = int(activity.GetInfo(ctx).Attempt)
	a.traceChat(ctx, in.TurnID, start, out, err)
	return out, a.finish(ctx, err)
}

func (a *Activities) runModel(ctx context.Context, in session.TurnInput) (session.ModelOutcome, error) {
	r, caps, err := a.Runners.Runner(in.Agent)
	if err != nil {
		return session.ModelOutcome{}, err
	}
	info := activity.GetInfo(ctx)
	w := a.writer(ctx, in.SessionID, in.TurnID, nil)
	w.streams = in.Streams
	w.model = session.StepHeartbeat{Attempt: int(info.Attempt)}
	defer w.close()
	w.recovering(wire.TurnRecoveringPayload{Step: info.ActivityType.Name})
	stop := a.heartbeatLoop(ctx, w)
	defer stop()
	var stored *session.StoreResult
	if in.Store != nil {
		// The store work first: a failure here costs no model call.
		if stored, err = a.doStoreWork(ctx, in.SessionID, in.Store); err != nil {
			return session.ModelOutcome{}, err
		}
		if in.RunState, in.ToolCalls, err = a.resolveTurn(ctx, in); err != nil {
			return session.ModelOutcome{}, err
		}
		if in.Compaction != nil {
			through, err := a.compactionCutoff(ctx, r, caps, in, int(info.Attempt))
			if err != nil {
				return session.ModelOutcome{}, err
			}
			if through > 0 {
				// No model call: the turn summarizes first.
				return session.ModelOutcome{Stored: stored, CompactThrough: through}, nil
			}
		}
	}
	if tr := in.Transcript; tr != nil && tr.From > 1 && in.Summary == nil {
		// Retention deleted the oldest messages, and no compaction summary
		// stands in for them: the model sees the conversation from the
		// middle.
		a.stepLogger(ctx, in.TurnID).Warn("the model input starts after messages retention deleted, with no summary of them; set a compaction policy on the agent",
			"agent", in.Agent, "first_sequence", tr.From)
	}
	policy, call := a.spendCall(ctx, in, false)
	if refused, err := a.checkSpend(ctx, policy, call); err != nil {
		return session.ModelOutcome{}, err
	} else if refused != nil {
		return session.ModelOutcome{Stored: stored, Spend: refused}, nil
	}
	builtIns := in.HostTools
	offered, err := a.offerMCPTools(ctx, &in)
	if err != nil {
		return session.ModelOutcome{}, err
	}
	own := a.ownTools(in.Agent)
	if err := checkToolNames(builtIns, own, offered); err != nil {
		return session.ModelOutcome{}, err
	}
	resp, err := a.callModel(ctx, r, caps, in, int(info.Attempt), w)
	if err != nil {
		return session.ModelOutcome{}, stepError("run_model_step", err)
	}
	if err := checkModelResponse(resp); err != nil {
		return session.ModelOutcome{}, err
	}
	out := session.ModelOutcome{
		TurnCompleted:      resp.TurnCompleted,
		ToolCallsRequested: resp.ToolCallsRequested,
		UnfinishedCapable:  caps.UnfinishedTurnMessages,
		HostCalls:          hostCalls(resp.ToolCallsRequested, offered),
		UnknownCalls:       unknownCalls(resp.ToolCallsRequested, own, in.HostTools),
	}
	out.RuleDecisions = a.ruleDecisions(ctx, in, resp.ToolCallsRequested, out.HostCalls)
	if tc := resp.TurnCompleted; tc != nil {
		out.Spend = a.chargeSpend(ctx, policy, call, tc.Usage, tc.Metadata)
		a.countUsage(in.Agent, tc.Usage, tc.Metadata)
	} else if req := resp.ToolCallsRequested; req != nil {
		out.Spend = a.chargeSpend(ctx, policy, call, req.Usage, req.Metadata)
		a.countUsage(in.Agent, req.Usage, req.Metadata)
	}
	if in.Store == nil {
		return out, nil
	}
	// With the store, the outcome's messages and long texts are stored, and
	// the workflow gets previews and references.
	if tc := out.TurnCompleted; tc != nil {
		c := *tc
		if stored.Messages, err = a.storeMessages(ctx, in.SessionID, in.TurnID, in.Store, info.Attempt, c.NewMessages); err != nil {
			return session.ModelOutcome{}, err
		}
		c.NewMessages = nil
		out.TurnCompleted = &c
	}
	if req := out.ToolCallsRequested; req != nil {
		c := *req
		if stored.Messages, err = a.storeMessages(ctx, in.SessionID, in.TurnID, in.Store, info.Attempt, c.NewMessages); err != nil {
			return session.ModelOutcome{}, err
		}
		c.NewMessages = nil
		if c.RunState, out.RunStateRef, err = a.keepLarge(ctx, in.SessionID, c.RunState); err != nil {
			return session.ModelOutcome{}, err
		}
		c.ToolCalls = append([]pluginapi.DeferredToolCall(nil), c.ToolCalls...)
		for i := range c.ToolCalls {
			var ref string
			if c.ToolCalls[i].Arguments, ref, err = a.keepLarge(ctx, in.SessionID, c.ToolCalls[i].Arguments); err != nil {
				return session.ModelOutcome{}, err
			}
			if ref != "" {
				out.Refs = append(out.Refs, session.RecordRefs{ToolCallID: c.ToolCalls[i].ToolCallID, ArgumentsRef: ref})
			}
		}
		out.ToolCallsRequested = &c
	}
	out.Stored = stored
	return out, nil
}

// offerMCPTools puts the agent's MCP tools before the turn's host tools
// (the built-ins), as the reference offers a source's tools after the
// function tools and before the built-ins, and returns them by name. A
// listing waits at most the MCP source's listing wait (10 s): a server that
// takes longer offers nothing to this call.
func (a *Activities) offerMCPTools(ctx context.Context, in *session.TurnInput) (map[string]mcpsource.Tool, error) {
	if a.MCP == nil || in.Mode == wire.InteractionPlanning {
		return nil, nil
	}
	tools, err := a.MCP.Tools(ctx, in.Agent)
	if err != nil || len(tools) == 0 {
		return nil, err
	}
	offered := make(map[string]mcpsource.Tool, len(tools))
	host := make([]pluginapi.ToolDefinition, 0, len(tools)+len(in.HostTools))
	for _, t := range tools {
		host = append(host, t.Definition())
		offered[t.Name] = t
	}
	in.HostTools = append(host, in.HostTools...)
	return offered, nil
}

// ownTools are the names of the tools agent's runner offers, nil when it
// did not say.
func (a *Activities) ownTools(agent string) []string {
	if l, ok := a.Runners.(ToolLister); ok {
		return l.Tools(agent)
	}
	return nil
}

// checkToolNames fails the model call, before any request, when two
// sources offer one name (builtIns are the session's enabled built-ins), with the reference's texts: a runner tool or an
// MCP tool named as an enabled built-in, or an MCP tool named as a runner
// tool. The failure is permanent: the same names clash on every attempt.
func checkToolNames(builtIns []pluginapi.ToolDefinition, own []string, mcp map[string]mcpsource.Tool) error {
	builtIn := map[string]bool{}
	for _, d := range builtIns {
		builtIn[d.Name] = true
	}
	var problem string
	for _, name := range slices.Sorted(maps.Keys(mcp)) {
		switch {
		case builtIn[name]:
			problem = fmt.Sprintf("tool %s uses the name of an enabled built-in tool", name)
		case slices.Contains(own, name):
			problem = fmt.Sprintf("tool %s of a tool source uses the name of a function tool", name)
		}
		if problem != "" {
			break
		}
	}
	if problem == "" {
		for _, name := range own {
			if builtIn[name] {
				problem = fmt.Sprintf("tool %s uses the name of an enabled built-in tool", name)
				break
			}
		}
	}
	if problem == "" {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(problem, wire.ToolNameConflictErrorType, nil)
}

// unknownCalls are the IDs of the calls of req whose name no source
// offered: not the runner's tools (when it listed them) and not the
// turn's host tools. Nil when the runner did not list its tools.
func unknownCalls(req *pluginapi.ToolCallsRequested, own []string, host []pluginapi.ToolDefinition) []string {
	if req == nil || len(own) == 0 {
		return nil
	}
	var out []string
	for _, c := range req.ToolCalls {
		if !slices.Contains(own, c.ToolName) && !slices.ContainsFunc(host, func(d pluginapi.ToolDefinition) bool { return d.Name == c.ToolName }) {
			out = append(out, c.ToolCallID)
		}
	}
	return out
}

// ruleDecisions runs the agent's approval rules on the calls of req, with
// each call's effect as the session will authorize it.
func (a *Activities) ruleDecisions(ctx context.Context, in session.TurnInput, req *pluginapi.ToolCallsRequested, host []session.HostCall) []session.RuleDecision {
	if req == nil || a.ApprovalRules == nil {
		return nil
	}
	rules := a.ApprovalRules(in.Agent)
	if rules.Empty() {
		return nil
	}
	token := in.Spend.APIToken
	var out []session.RuleDecision
	for _, c := range req.ToolCalls {
		annotated, isHost := pluginapi.Effect(""), false
		for _, h := range host {
			if h.ToolCallID == c.ToolCallID {
				annotated, isHost = h.Effect, true
			}
		}
		policy := in.Authorize(c.ToolName, isHost, annotated, c.Policy)
		o := rules.Decide(approvalrules.Input{Tool: c.ToolName, Arguments: c.Arguments, Effect: string(policy.Effect), Settings: in.Settings, Token: token})
		if o.Enforced == nil && o.Shadow == nil {
			continue
		}
		d := session.RuleDecision{ToolCallID: c.ToolCallID}
		if e := o.Enforced; e != nil {
			d.Rule, d.Decision, d.Reason = e.Rule, e.Decision, e.Reason
		}
		if sh := o.Shadow; sh != nil {
			d.ShadowRule, d.ShadowDecision = sh.Rule, sh.Decision
		}
		a.stepLogger(ctx, in.TurnID).Info("approval rule decided", "tool", c.ToolName, "tool_call_id", c.ToolCallID,
			"rule", d.Rule, "decision", d.Decision, "shadow_rule", d.ShadowRule, "shadow_decision", d.ShadowDecision)
		out = append(out, d)
	}
	return out
}

// hostCalls are the worker's decisions about the calls of req that name an
// offered MCP tool: its source and the effect of its annotations.
func hostCalls(req *pluginapi.ToolCallsRequested, offered map[string]mcpsource.Tool) []session.HostCall {
	if req == nil || len(offered) == 0 {
		return nil
	}
	var out []session.HostCall
	for _, c := range req.ToolCalls {
		if t, ok := offered[c.ToolName]; ok {
			out = append(out, session.HostCall{ToolCallID: c.ToolCallID, Source: t.Ref, Effect: t.Effect})
		}
	}
	return out
}

// stepError wraps a runner failure; a permanent one fails the Step without
// its remaining attempts, and one that says when to retry sets the next
// attempt's delay (NextRetryDelay) in place of the retry policy's backoff.
func stepError(call string, err error) error {
	var (
		perm  *pluginapi.PermanentError
		retry *pluginapi.RetryAfterError
	)
	switch {
	case errors.As(err, &perm) || errors.Is(err, runnerhost.ErrMessageTooLarge):
		// A message past the gRPC limit would be as large on every retry.
		return temporal.NewNonRetryableApplicationError(call+": "+err.Error(), wire.PermanentRunnerErrorType, nil)
	case errors.As(err, &retry):
		return temporal.NewApplicationErrorWithOptions(call+": "+err.Error(), wire.RetryAfterRunnerErrorType,
			temporal.ApplicationErrorOptions{NextRetryDelay: retry.Delay})
	}
	return fmt.Errorf("%s: %w", call, err)
}

func checkModelResponse(resp *pluginapi.RunModelStepResponse) error {
	switch {
	case resp == nil:
		return errors.New("runner returned a malformed outcome: no response")
	case resp.TurnCompleted != nil && resp.ToolCallsRequested != nil:
		return errors.New("runner returned a malformed outcome: both turn_completed and tool_calls_requested are set")
	case resp.TurnCompleted == nil && resp.ToolCallsRequested == nil:
		return errors.New("runner returned a malformed outcome: neither turn_completed nor tool_calls_requested is set")
	}
	for i, m := range outcomeMessages(resp) {
		if m.Role != pluginapi.RoleUser && m.Role != pluginapi.RoleAssistant && m.Role != pluginapi.RoleTool {
			return fmt.Errorf("runner returned a malformed outcome: new_messages[%d] has unknown role %q", i, m.Role)
		}
		if m.Item != "" && !json.Valid([]byte(m.Item)) {
			return fmt.Errorf("runner returned a malformed outcome: new_messages[%d].framework_item is not valid JSON", i)
		}
	}
	return nil
}

func outcomeMessages(resp *pluginapi.RunModelStepResponse) []pluginapi.FrameworkMessage {
	if resp.TurnCompleted != nil {
		return resp.TurnCompleted.NewMessages
	}
	return resp.ToolCallsRequested.NewMessages
}

// callModel hands the runner the turn with the session's transcript.
func (a *Activities) callModel(ctx context.Context, r pluginapi.Runner, caps pluginapi.Capabilities, in session.TurnInput, attempt int, w pluginapi.EventWriter) (*pluginapi.RunModelStepResponse, error) {
	var resp *pluginapi.RunModelStepResponse
	var lim ModelLiveness
	if a.Liveness != nil {
		lim = a.Liveness(in.Agent)
	}
	err := a.withTranscript(ctx, caps, in, attempt, func(turn pluginapi.TurnContext) error {
		var key string
		if a.Models != nil {
			var err error
			if key, err = ModelCacheKey(turn); err != nil {
				return err
			}
			if cached, ok := a.Models.Get(key); ok {
				resp = cached
				return nil
			}
		}
		callCtx, events, stop := watchModelCall(ctx, lim, w)
		defer stop()
		var err error
		resp, err = r.RunModelStep(callCtx, &pluginapi.RunModelStepRequest{Turn: turn, Events: events})
		if err == nil && a.Models != nil && checkModelResponse(resp) == nil {
			a.Models.Put(key, resp)
		}
		if cause := context.Cause(callCtx); err != nil && ctx.Err() == nil && errors.Is(cause, ErrModelCallStalled) {
			// Retryable: the next attempt makes the call again.
			return cause
		}
		return err
	})
	return resp, err
}

// withTranscript calls call with the turn and the session's transcript. A
// session in the store has its transcript read here; when the plugin keeps
// transcripts (capability TranscriptCache) and was sent this session's
// before, only the messages it was not sent are read and sent, and the
// whole transcript again if it lost them.
func (a *Activities) withTranscript(ctx context.Context, caps pluginapi.Capabilities, in session.TurnInput, attempt int, call func(pluginapi.TurnContext) error) error {
	if in.Store == nil {
		return call(turnContext(in, attempt))
	}
	summary, err := a.summary(ctx, in.SessionID, in.Summary)
	if err != nil {
		return err
	}
	tr := in.Transcript
	// With a model cache, every call carries the whole transcript: its key
	// must not depend on what the plugin kept.
	if caps.TranscriptCache && a.Models == nil {
		if from, through, ok := a.sent.get(in.SessionID); ok && from <= tr.From && tr.From <= through && through <= tr.Last {
			newer, err := a.loadTranscript(ctx, in.SessionID, &session.Transcript{From: through + 1, WindowFirst: max(tr.WindowFirst, through+1), Last: tr.Last})
			if err != nil {
				return err
			}
			in.Messages = newer
			turn := turnContext(in, attempt)
			turn.ContextSummary = summary
			turn.CachedFrom, turn.CachedThrough = tr.From, through
			err = call(turn)
			if !errors.Is(err, pluginapi.ErrTranscriptNotCached) {
				if err == nil {
					a.sent.set(in.SessionID, tr.From, tr.Last)
				}
				return err
			}
			a.sent.forget(in.SessionID)
		}
	}
	if in.Messages, err = a.loadTranscript(ctx, in.SessionID, tr); err != nil {
		return err
	}
	turn := turnContext(in, attempt)
	turn.ContextSummary = summary
	err = call(turn)
	if err == nil && caps.TranscriptCache && tr.Last >= tr.From {
		a.sent.set(in.SessionID, tr.From, tr.Last)
	}
	return err
}

// summary resolves a session's context summary for the runner.
func (a *Activities) summary(ctx context.Context, sessionID string, s *session.Summary) (*pluginapi.ContextSummary, error) {
	if s == nil {
		return nil, nil
	}
	text := s.Text
	if s.TextRef != "" {
		var err error
		if text, err = a.blob(ctx, sessionID, s.TextRef); err != nil {
			return nil, err
		}
	}
	return &pluginapi.ContextSummary{
		Generation: s.Generation, FirstSequence: s.FirstSequence, LastSequence: s.LastSequence, Text: text,
		CreatedAt: time.UnixMilli(s.CreatedAtMs).UTC().Format(time.RFC3339),
	}, nil
}

func turnContext(in session.TurnInput, attempt int) pluginapi.TurnContext {
	return pluginapi.TurnContext{
		Agent:     in.Agent,
		SessionID: in.SessionID,
		TurnID:    in.TurnID,
		Attempt:   attempt,
		Messages:  in.Messages,
		RunState:  in.RunState,
		ToolCalls: wireconv.RunnerToolCalls(in.ToolCalls),
		Policies:  in.Policies,
		HostTools: in.HostTools,
		Plan:      wireconv.RunnerPlan(in.Plan),

		InteractionMode: in.Mode,

		SessionSettings: settingsJSON(in.Settings),
	}
}

// settingsJSON is a turn's settings for the runner, nil when there are none.
func settingsJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// CallTool runs one read or idempotent_write call; the engine retries it.
func (a *Activities) CallTool(ctx context.Context, in session.ToolInput) (session.ToolOutcome, error) {
	return a.callTool(ctx, in)
}

// CallSingleAttemptTool runs one non_idempotent_write or unclassified call,
// in one attempt.
func (a *Activities) CallSingleAttemptTool(ctx context.Context, in session.ToolInput) (session.ToolOutcome, error) {
	return a.callTool(ctx, in)
}

func (a *Activities) callTool(ctx context.Context, in session.ToolInput) (session.ToolOutcome, error) {
	defer a.begin()()
	ctx, endSpan := a.startToolSpan(tracing.WithSession(ctx, in.SessionID), in.TurnID, in.ToolCall)
	out, err := a.runTool(ctx, in)
	if out.Error != nil {
		msg := a.redact(*out.Error)
		out.Error = &msg
	}
	out.Attempt = int(activity.GetInfo(ctx).Attempt)
	endSpan(out, err)
	a.Metrics.ToolStep(in.Agent, string(in.ToolCall.Effect), toolResult(out, err))
	return out, a.finish(ctx, err)
}

// toolResult names what a tool Step attempt returned, for the metrics.
func toolResult(out session.ToolOutcome, err error) string {
	switch {
	case err != nil:
		return "error"
	case out.InputRequested != nil:
		return "input_requested"
	case out.Error != nil:
		return "failed"
	case out.TaskStarted != nil:
		return "task_started"
	}
	return "succeeded"
}

// countUsage counts a model call's tokens by the model its metadata names.
func (a *Activities) countUsage(agent string, u pluginapi.Usage, md *pluginapi.ModelCallMetadata) {
	if a.Metrics == nil {
		return
	}
	var provider, model string
	if md != nil {
		provider, model = md.ProviderName, md.ResponseModel
		if model == "" {
			model = md.RequestModel
		}
	}
	a.Metrics.ModelUsage(agent, provider, model, metrics.Tokens{
		Input: u.InputTokens, Output: u.OutputTokens, CachedInput: u.CachedInputTokens, Reasoning: u.ReasoningTokens, Calls: u.ModelCalls,
	})
}

func (a *Activities) runTool(ctx context.Context, in session.ToolInput) (session.ToolOutcome, error) {
	info := activity.GetInfo(ctx)
	var hb session.StepHeartbeat
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &hb)
	}
	hb.Attempt = int(info.Attempt)
	// notStarted fails the attempt without running the tool. When an earlier
	// attempt reached the tool, the failure is an ordinary one.
	notStarted := func(err error) error {
		if hb.Started {
			return err
		}
		if ctx.Err() != nil {
			// A turn control cancelled the Step: no attempt follows.
			return temporal.NewNonRetryableApplicationError("the turn was stopped before the tool started: "+err.Error(), wire.ToolNotStartedErrorType, nil)
		}
		return temporal.NewApplicationError(err.Error(), wire.ToolNotStartedErrorType)
	}
	var r pluginapi.Runner
	var caps pluginapi.Capabilities
	if in.HostSource == "" {
		var err error
		if r, caps, err = a.Runners.Runner(in.Agent); err != nil {
			return session.ToolOutcome{}, notStarted(err)
		}
	} else if a.MCP == nil {
		return session.ToolOutcome{}, notStarted(errors.New("this worker runs no MCP tools (no mcp_servers in its config)"))
	}
	if a.Hooks.BeforeToolStart != nil {
		a.Hooks.BeforeToolStart(ctx, in)
	}
	w := a.writer(ctx, in.SessionID, in.TurnID, &hb)
	w.streams = in.Streams
	defer w.close()
	w.recovering(wire.TurnRecoveringPayload{Step: info.ActivityType.Name, ToolCallID: in.ToolCall.ToolCallID, ToolName: in.ToolCall.ToolName,
		PreviousAttemptReachedTool: hb.Started})
	stop := a.heartbeatLoop(ctx, w)
	defer stop()
	// A plugin that died while idle fails the next call before it reaches
	// the tool; find that out before the started marker, so such a call is
	// recorded as not run instead of outcome unknown.
	if r != nil {
		if err := preflight(ctx, r); err != nil {
			return session.ToolOutcome{}, notStarted(err)
		}
	}
	var err error
	call := in.ToolCall
	if in.ArgumentsRef != "" {
		if call.Arguments, err = a.blob(ctx, in.SessionID, in.ArgumentsRef); err != nil {
			return session.ToolOutcome{}, notStarted(err)
		}
	}
	if a.Tools != nil {
		if out, ok := a.Tools.Serve(ctx, in, call.Arguments); ok {
			return a.keepOutcome(ctx, in, out)
		}
	}
	// Record the started marker durably before the tool runs. Its answer
	// says whether the turn was steered or cancelled first: then the tool
	// does not run.
	if err := w.markStarted(ctx, info.TaskToken); err != nil {
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) && hb.Started {
			// An earlier attempt started the tool: it may have taken effect.
			return session.ToolOutcome{}, temporal.NewNonRetryableApplicationError(
				"the turn was stopped after an earlier attempt had started the tool", "ToolStopped", nil)
		}
		if errors.As(err, &canceled) {
			return session.ToolOutcome{}, temporal.NewNonRetryableApplicationError(
				"the turn was stopped before the tool started", wire.ToolNotStartedErrorType, nil)
		}
		return session.ToolOutcome{}, notStarted(fmt.Errorf("record the started marker: %w", err))
	}
	w.publish(wire.EventToolCallStarted, wire.ToolCallStartedPayload{ToolCallID: in.ToolCall.ToolCallID, ToolName: in.ToolCall.ToolName})
	// From here the tool runs to its end, whatever the turn's control.
	toolCtx, cancelTool := shield(ctx)
	defer cancelTool()
	if in.HostSource != "" {
		return a.callMCP(toolCtx, in, call, w)
	}
	resp, err := r.ExecuteDeferredToolCall(toolCtx, &pluginapi.ExecuteToolRequest{
		Agent:               in.Agent,
		SessionID:           in.SessionID,
		TurnID:              in.TurnID,
		ToolCall:            wireconv.RunnerToolCall(call),
		IdempotencyKey:      in.IdempotencyKey,
		Attempt:             int(info.Attempt),
		HeartbeatCheckpoint: w.checkpoint(),
		InputAnswers:        call.InputAnswers,
		SupportsToolTasks:   caps.ToolTaskPolling,
		Events:              w,
	})
	var toolErr *pluginapi.ToolExecutionError
	if errors.As(err, &toolErr) {
		msg := toolErr.Message
		return a.keepOutcome(toolCtx, in, session.ToolOutcome{Error: &msg})
	}
	if err != nil {
		return session.ToolOutcome{}, stepError("execute_deferred_tool_call", err)
	}
	out, err := toolOutcome(in, resp, caps.ToolTaskPolling)
	if err != nil {
		return out, err
	}
	return a.keepOutcome(toolCtx, in, out)
}

// callMCP runs a call the session routed to an MCP server and maps its
// outcome as the spec's table does.
func (a *Activities) callMCP(ctx context.Context, in session.ToolInput, call wire.ToolCall, w *writer) (session.ToolOutcome, error) {
	progress := func(p mcpsource.Progress) {
		payload := wire.MCPToolProgressPayload{ToolCallID: call.ToolCallID, ToolName: call.ToolName, Progress: p.Progress}
		if p.Total != 0 {
			payload.Total = &p.Total
		}
		if p.Message != "" {
			msg := a.redact(p.Message)
			payload.Message = &msg
		}
		w.publish(wire.EventMCPToolProgress, payload)
	}
	var answer *mcpsource.Answer
	if n := len(call.InputAnswers); n > 0 && call.InputContinuation != "" {
		// The server asked, the user answered: the call's next request
		// carries the answer.
		answer = &mcpsource.Answer{Continuation: call.InputContinuation, Answer: call.InputAnswers[n-1]}
	}
	out := a.MCP.Call(ctx, in.Agent, in.HostSource, json.RawMessage(call.Arguments), in.IdempotencyKey, progress, answer)
	switch out.Kind {
	case mcpsource.TaskStarted:
		// A Streamable HTTP server's task: the session polls it on
		// durable timers, and no Step holds a connection meanwhile.
		w.publish(wire.EventMCPTaskStatus, taskStatusPayload(call, out.Task))
		wait := mcpsource.NextPollInterval(out.Task.PollInterval, 0)
		return session.ToolOutcome{TaskStarted: &session.TaskStart{
			TaskID: out.Task.ID, PollIntervalSeconds: int(wait / time.Second),
		}}, nil
	case mcpsource.InputRequested:
		// An elicitation, before the tool took any effect: the session
		// asks the user, durably, and runs the call again with the answer.
		q := out.Input
		return session.ToolOutcome{InputRequested: &session.InputRequest{
			Question: q.Question, Choices: q.Choices, AllowsFreeText: q.AllowsFreeText, Continuation: q.Continuation,
		}}, nil
	case mcpsource.Succeeded, mcpsource.ToolFailed:
		return a.keepOutcome(ctx, in, endedOutcome(out))
	case mcpsource.NotSent:
		// The tool provably did not run: failed, never sent again.
		text := "the MCP tool call was not sent: " + errText(out.Err)
		return a.keepOutcome(ctx, in, session.ToolOutcome{Error: &text})
	default:
		return session.ToolOutcome{}, temporal.NewApplicationError(a.redact(errText(out.Err)), wire.MCPInterruptedErrorType)
	}
}

// mcpTaskState is the continuation of an MCP task's pending poll: what
// the last poll saw, so the next writes mcp.task_status only on a change.
type mcpTaskState struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// Answered is the request key of the question whose answer the last
	// tasks/update sent, at SentAtMs (Unix milliseconds).
	Answered string `json:"answered,omitempty"`
	SentAtMs int64  `json:"sent_at_ms,omitempty"`
}

// answerSettle is how long after a tasks/update the task may still list
// the answered request (it has not taken the answer in yet): polls run a
// second apart and read it as working. Past it, the request is asked again.
const answerSettle = 10 * time.Second

// pollMCPTask polls the MCP task of a call the session routed to a
// server, once, handing over the resolution of its last question first.
func (a *Activities) pollMCPTask(ctx context.Context, in session.PollInput, attempt int, w *writer) (session.ToolOutcome, error) {
	call := in.ToolCall
	var last mcpTaskState
	_ = json.Unmarshal([]byte(call.InputContinuation), &last)
	var p mcpsource.TaskPoll
	switch pa := call.TaskAnswerPending; {
	case pa != nil && attempt == 1:
		// Only the first attempt sends, after a heartbeat: a retry cannot
		// tell whether it did, so it asks the user again instead, and an
		// answer never reaches a later question.
		w.Heartbeat()
		var sent bool
		sent, p = a.MCP.AnswerTask(ctx, in.Agent, in.HostSource, call.TaskID, call.InputContinuation, pa.Resolution, pa.Answer)
		if sent {
			state, _ := json.Marshal(mcpTaskState{Status: mcpsource.TaskInputRequired, Answered: mcpsource.QuestionKey(call.InputContinuation), SentAtMs: time.Now().UnixMilli()})
			return session.ToolOutcome{TaskPending: &session.TaskPending{PollIntervalSeconds: 1, Continuation: string(state)}}, nil
		}
	default:
		p = a.MCP.PollTask(ctx, in.Agent, in.HostSource, call.TaskID)
	}
	if p.Task != nil && (last.Status != p.Task.Status || last.Message != p.Task.StatusMessage) {
		w.publish(wire.EventMCPTaskStatus, taskStatusPayload(call, p.Task))
	}
	if q := p.Input; q != nil && p.Outcome == nil {
		if mcpsource.QuestionKey(q.Continuation) == last.Answered && time.Since(time.UnixMilli(last.SentAtMs)) < answerSettle {
			// The task has not taken the answer in yet.
			state, _ := json.Marshal(last)
			return session.ToolOutcome{TaskPending: &session.TaskPending{PollIntervalSeconds: 1, Continuation: string(state)}}, nil
		}
		return session.ToolOutcome{InputRequested: &session.InputRequest{
			Question: q.Question, Choices: q.Choices, AllowsFreeText: q.AllowsFreeText, Continuation: q.Continuation,
		}}, nil
	}
	if p.Outcome == nil {
		state, _ := json.Marshal(mcpTaskState{Status: p.Task.Status, Message: p.Task.StatusMessage})
		prev := time.Duration(call.TaskPollIntervalSeconds) * time.Second
		wait := mcpsource.NextPollInterval(p.Task.PollInterval, prev)
		return session.ToolOutcome{TaskPending: &session.TaskPending{PollIntervalSeconds: int(wait / time.Second), Continuation: string(state)}}, nil
	}
	switch out := *p.Outcome; out.Kind {
	case mcpsource.Succeeded, mcpsource.ToolFailed:
		return a.keepOutcome(ctx, session.ToolInput{SessionID: in.SessionID, StoreOutput: in.StoreOutput}, endedOutcome(out))
	default:
		// The task could not be read: the engine polls again; after the
		// poll's attempts the effect class decides (failed for a read,
		// outcome_unknown otherwise). A poll never calls the tool again.
		return session.ToolOutcome{}, temporal.NewApplicationError(a.redact(errText(out.Err)), wire.MCPInterruptedErrorType)
	}
}

// endedOutcome is the tool outcome of an MCP call that ended: its result,
// or the tool error the model sees.
func endedOutcome(out mcpsource.Outcome) session.ToolOutcome {
	text := out.Text
	if out.Kind == mcpsource.Succeeded {
		return session.ToolOutcome{Output: &text}
	}
	return session.ToolOutcome{Error: &text}
}

// taskStatusPayload is the payload of mcp.task_status.
func taskStatusPayload(call wire.ToolCall, t *mcpsource.Task) wire.MCPTaskStatusPayload {
	return wire.MCPTaskStatusPayload{ToolCallID: call.ToolCallID, ToolName: call.ToolName, TaskID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage}
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// PollToolTask polls one tool task once (the session waited the task's
// interval on a durable timer before it). The engine retries a failed
// poll; a poll must only read the task, or deliver an answer idempotently.
func (a *Activities) PollToolTask(ctx context.Context, in session.PollInput) (session.ToolOutcome, error) {
	defer a.begin()()
	ctx, endSpan := a.startToolSpan(tracing.WithSession(ctx, in.SessionID), in.TurnID, in.ToolCall)
	out, err := a.pollTask(ctx, in)
	if out.Error != nil {
		msg := a.redact(*out.Error)
		out.Error = &msg
	}
	out.Attempt = int(activity.GetInfo(ctx).Attempt)
	endSpan(out, err)
	return out, a.finish(ctx, err)
}

func (a *Activities) pollTask(ctx context.Context, in session.PollInput) (session.ToolOutcome, error) {
	info := activity.GetInfo(ctx)
	if in.HostSource != "" {
		if a.MCP == nil {
			return session.ToolOutcome{}, errors.New("this worker runs no MCP tools (no mcp_servers in its config)")
		}
		hb := session.StepHeartbeat{Attempt: int(info.Attempt), Started: true}
		w := a.writer(ctx, in.SessionID, in.TurnID, &hb)
		defer w.close()
		stop := a.heartbeatLoop(ctx, w)
		defer stop()
		return a.pollMCPTask(ctx, in, int(info.Attempt), w)
	}
	r, caps, err := a.Runners.Runner(in.Agent)
	if err != nil {
		return session.ToolOutcome{}, err
	}
	poller, ok := r.(pluginapi.ToolTaskPoller)
	if !ok || !caps.ToolTaskPolling {
		return session.ToolOutcome{}, temporal.NewNonRetryableApplicationError(
			"MISSING_TOOL_TASK_POLLER: the runner of agent "+in.Agent+" does not poll tool tasks", "MissingToolTaskPoller", nil)
	}
	hb := session.StepHeartbeat{Attempt: int(info.Attempt), Started: true}
	w := a.writer(ctx, in.SessionID, in.TurnID, &hb)
	defer w.close()
	stop := a.heartbeatLoop(ctx, w)
	defer stop()
	resp, err := poller.PollToolTask(ctx, &pluginapi.PollToolTaskRequest{
		Agent: in.Agent, SessionID: in.SessionID, TurnID: in.TurnID,
		ToolCall: wireconv.RunnerToolCall(in.ToolCall), TaskID: in.ToolCall.TaskID, Continuation: in.ToolCall.InputContinuation,
		PendingAnswer: wireconv.QuestionAnswer(in.ToolCall.TaskAnswerPending), Attempt: int(info.Attempt), Events: w,
	})
	var toolErr *pluginapi.ToolExecutionError
	if errors.As(err, &toolErr) {
		msg := toolErr.Message
		return a.keepOutcome(ctx, session.ToolInput{SessionID: in.SessionID, StoreOutput: in.StoreOutput}, session.ToolOutcome{Error: &msg})
	}
	if err != nil {
		return session.ToolOutcome{}, stepError("poll_tool_task", err)
	}
	out, err := pollOutcome(resp)
	if err != nil {
		return out, err
	}
	return a.keepOutcome(ctx, session.ToolInput{SessionID: in.SessionID, StoreOutput: in.StoreOutput}, out)
}

// pollOutcome converts a poll's response: a result, an error, a question,
// or a request to poll again.
func pollOutcome(resp *pluginapi.ExecuteToolResponse) (session.ToolOutcome, error) {
	if resp != nil && resp.TaskPending != nil && resp.Result == nil && resp.Error == nil && resp.InputRequested == nil && resp.TaskStarted == nil {
		p := resp.TaskPending
		return session.ToolOutcome{TaskPending: &session.TaskPending{PollIntervalSeconds: p.PollIntervalSeconds, Continuation: p.Continuation}}, nil
	}
	if resp != nil && resp.TaskStarted != nil {
		return session.ToolOutcome{}, errors.New("runner returned a malformed poll outcome: task_started is only valid for the tool call")
	}
	return toolOutcome(session.ToolInput{}, resp, true)
}

// maxToolErrorBytes bounds a tool error the workflow keeps, with the store.
const maxToolErrorBytes = 2 * session.PreviewBytes

// keepOutcome stores a long output and returns its preview and reference,
// and cuts a long error, when the session keeps its messages in the store.
func (a *Activities) keepOutcome(ctx context.Context, in session.ToolInput, out session.ToolOutcome) (session.ToolOutcome, error) {
	if !in.StoreOutput {
		return out, nil
	}
	if out.Output != nil {
		p, ref, err := a.keepLarge(ctx, in.SessionID, *out.Output)
		if err != nil {
			return session.ToolOutcome{}, err
		}
		out.Output, out.OutputRef = &p, ref
	}
	if out.Error != nil && len(*out.Error) > maxToolErrorBytes {
		cut := previewText((*out.Error)[:maxToolErrorBytes]) + " ... (the error was cut)"
		out.Error = &cut
	}
	return out, nil
}

func toolOutcome(in session.ToolInput, resp *pluginapi.ExecuteToolResponse, polls bool) (session.ToolOutcome, error) {
	if resp == nil {
		return session.ToolOutcome{}, errors.New("runner returned a malformed tool outcome: no response")
	}
	set := 0
	for _, b := range []bool{resp.Result != nil, resp.Error != nil, resp.InputRequested != nil, resp.TaskStarted != nil, resp.TaskPending != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return session.ToolOutcome{}, fmt.Errorf("runner returned a malformed tool outcome: %d outcomes set, want exactly one", set)
	}
	switch {
	case resp.Result != nil:
		out := resp.Result.Output
		return session.ToolOutcome{Output: &out}, nil
	case resp.Error != nil:
		msg := resp.Error.Message
		return session.ToolOutcome{Error: &msg}, nil
	case resp.InputRequested != nil:
		// The tool asked before it took any effect; the session raises the
		// question (or fails the call for a malformed one).
		q := resp.InputRequested
		return session.ToolOutcome{InputRequested: &session.InputRequest{
			Question: q.Question, Choices: q.Choices, AllowsFreeText: q.AllowsFreeText, Continuation: q.Continuation,
		}}, nil
	case resp.TaskStarted != nil && polls:
		t := resp.TaskStarted
		return session.ToolOutcome{TaskStarted: &session.TaskStart{TaskID: t.TaskID, PollIntervalSeconds: t.PollIntervalSeconds}}, nil
	case resp.TaskStarted != nil:
		// The remote work started and nothing polls it: the effect class
		// decides (failed for a read, outcome_unknown otherwise).
		return session.ToolOutcome{}, temporal.NewNonRetryableApplicationError(
			"MISSING_TOOL_TASK_POLLER: tool "+in.ToolCall.ToolName+" started task "+resp.TaskStarted.TaskID+", but this worker does not poll tool tasks",
			"MissingToolTaskPoller", nil)
	default:
		return session.ToolOutcome{}, errors.New("runner returned a malformed tool outcome: task_pending is only valid for polls")
	}
}

// RecordTurnFailure builds the messages a failed turn leaves: the runner's
// unfinished-turn messages, then the turn-failure note.
func (a *Activities) RecordTurnFailure(ctx context.Context, in session.TurnFailureInput) (session.TurnFailureOutput, error) {
	defer a.begin()()
	out, err := a.recordTurnFailure(ctx, in)
	out.Attempt = int(activity.GetInfo(ctx).Attempt)
	return out, a.finish(ctx, err)
}

func (a *Activities) recordTurnFailure(ctx context.Context, in session.TurnFailureInput) (session.TurnFailureOutput, error) {
	var out session.TurnFailureOutput
	r, caps, err := a.Runners.Runner(in.Turn.Agent)
	if err != nil {
		return out, err
	}
	var stored *session.StoreResult
	if w := in.Turn.Store; w != nil {
		if stored, err = a.doStoreWork(ctx, in.Turn.SessionID, w); err != nil {
			return out, err
		}
		// A user message that could not be built is kept as plain text.
		if in.UserText != "" || in.UserTextRef != "" {
			text := in.UserText
			if in.UserTextRef != "" {
				if text, err = a.blob(ctx, in.Turn.SessionID, in.UserTextRef); err != nil {
					return out, err
				}
			}
			out.Messages = append(out.Messages, pluginapi.FrameworkMessage{Role: pluginapi.RoleUser, Text: text})
		}
		if caps.UnfinishedTurnMessages {
			if in.Turn.Messages, err = a.loadTranscript(ctx, in.Turn.SessionID, in.Turn.Transcript); err != nil {
				return out, err
			}
			if in.Turn.RunState, in.Turn.ToolCalls, err = a.resolveTurn(ctx, in.Turn); err != nil {
				return out, err
			}
		}
	}
	unfinished := false // the runner built the unfinished-turn messages
	if b, ok := r.(pluginapi.UnfinishedTurnMessageBuilder); ok && caps.UnfinishedTurnMessages {
		var msgs []pluginapi.FrameworkMessage
		resp, err := b.BuildUnfinishedTurnMessages(ctx, &pluginapi.BuildUnfinishedTurnMessagesRequest{Turn: turnContext(in.Turn, 1)})
		if err == nil && resp != nil {
			msgs = resp.Messages
		}
		if err == nil {
			for _, m := range msgs {
				if m.Role == "" {
					err = errors.New("a message has no role")
					break
				}
			}
		}
		if err != nil {
			a.stepLogger(ctx, in.Turn.TurnID).Warn("build_unfinished_turn_messages failed; storing only the note",
				"error", a.redact(fmt.Sprint(err)))
		} else {
			out.Messages = append(out.Messages, msgs...)
			unfinished = true
		}
	}
	if in.Note != "" && !(in.NoteOnlyWithoutUnfinished && unfinished) {
		resp, err := r.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: in.Turn.Agent, Text: in.Note})
		if err != nil || resp == nil || resp.Message.Role != pluginapi.RoleUser {
			a.stepLogger(ctx, in.Turn.TurnID).Warn("build_user_message failed for the turn-failure note; storing it as plain text",
				"error", a.redact(fmt.Sprint(err)))
			out.Messages = append(out.Messages, pluginapi.FrameworkMessage{Role: pluginapi.RoleUser, Text: in.Note})
		} else {
			out.Messages = append(out.Messages, resp.Message)
		}
	}
	if w := in.Turn.Store; w != nil {
		if stored.Messages, err = a.storeMessages(ctx, in.Turn.SessionID, in.Turn.TurnID, w, activity.GetInfo(ctx).Attempt, out.Messages); err != nil {
			return session.TurnFailureOutput{}, err
		}
		return session.TurnFailureOutput{Stored: stored}, nil
	}
	return out, nil
}

// preflight checks that the runner answers, giving a plugin that died while
// idle a moment to be relaunched.
func preflight(ctx context.Context, r pluginapi.Runner) error {
	var err error
	for i := 0; i < 4; i++ {
		if _, err = r.Info(ctx, &pluginapi.InfoRequest{}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i+1) * 250 * time.Millisecond):
		}
	}
	return fmt.Errorf("the runner does not answer: %w", err)
}

// heartbeatLoop heartbeats every interval until stop is called.
func (a *Activities) heartbeatLoop(ctx context.Context, w *writer) (stop func()) {
	if w.hb != nil {
		// A tool that started runs to its end when the turn is stopped,
		// and keeps heartbeating while it runs.
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		iv := heartbeatInterval(ctx)
		if w.hb == nil {
			iv = min(iv, ModelHeartbeatInterval)
		}
		t := time.NewTicker(iv)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.Heartbeat()
			}
		}
	}()
	return func() { cancel(); <-done }
}

// writer is the EventWriter of one Step attempt.
type writer struct {
	ctx     context.Context
	a       *Activities
	session string
	turn    string
	stepID  string
	attempt int
	// origin names this writer for de-duplication, and count is the
	// index of its last event (events.Event).
	origin string
	count  uint64
	// streams are the sessions above a sub-agent, whose streams get the
	// events too.
	streams []string
	mu      sync.Mutex
	closed  bool
	hb      *session.StepHeartbeat // nil for model steps
	model   session.StepHeartbeat  // the heartbeat detail of a model step
}

func (a *Activities) writer(ctx context.Context, sessionID, turnID string, hb *session.StepHeartbeat) *writer {
	info := activity.GetInfo(ctx)
	if hb != nil {
		// Tool Steps heartbeat through a cancel (see heartbeatLoop).
		ctx = context.WithoutCancel(ctx)
	}
	return &writer{
		ctx: ctx, a: a, session: sessionID, turn: turnID,
		stepID:  info.WorkflowExecution.RunID + "/" + info.ActivityID,
		attempt: int(info.Attempt),
		origin:  fmt.Sprintf("step:%s/%s#%d#%s", info.WorkflowExecution.RunID, info.ActivityID, info.Attempt, writerNonce()),
		hb:      hb,
	}
}

// writerNonce tells apart two writers of one Step attempt.
func writerNonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

func (w *writer) publish(typ string, payload any) {
	b, err := json.Marshal(payload)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.a.Events == nil {
		return
	}
	w.count++
	e := events.Event{
		SessionID: w.session, Type: typ, TurnID: w.turn, StepExecutionID: w.stepID, Attempt: w.attempt, Payload: b,
		Origin: w.origin, Index: w.count,
	}
	w.a.Events.Publish(e)
	for _, up := range w.streams {
		e.Stream = up
		w.a.Events.Publish(e)
	}
}

// recovering writes turn_recovering when the Step runs an attempt after
// its first.
func (w *writer) recovering(p wire.TurnRecoveringPayload) {
	if w.attempt > 1 {
		p.Attempt = w.attempt
		w.publish(wire.EventTurnRecovering, p)
	}
}

func (w *writer) WriteTextDelta(text string) {
	if text != "" {
		w.publish(wire.EventTextDelta, wire.TextPayload{Text: text})
	}
}

func (w *writer) WriteReasoningDelta(text string) {
	if text != "" {
		w.publish(wire.EventReasoningDelta, wire.TextPayload{Text: text})
	}
}

// WriteEvent writes a runner's event: a standard type runners may write,
// with its fields, or a custom type with an adapter prefix
// (pluginapi.CheckEvent). Anything else is refused, and dropped when it
// came over the wire.
func (w *writer) WriteEvent(eventType string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("event payload: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("event payload must be a JSON object")
	}
	if err := pluginapi.CheckEvent(eventType, b); err != nil {
		w.a.stepLogger(w.ctx, w.turn).Debug("dropped a runner event", "type", eventType, "reason", err)
		return err
	}
	w.publish(eventType, json.RawMessage(b))
	return nil
}

func (w *writer) Heartbeat() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.hb != nil {
		activity.RecordHeartbeat(w.ctx, *w.hb)
		return
	}
	activity.RecordHeartbeat(w.ctx, w.model)
}

// markStarted records the started marker with a synchronous heartbeat; the
// background heartbeats carry it from then on.
func (w *writer) markStarted(ctx context.Context, taskToken []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	hb := *w.hb
	hb.Started = true
	if err := activity.GetClient(ctx).RecordActivityHeartbeat(ctx, taskToken, hb); err != nil {
		return err
	}
	w.hb.Started = true
	return nil
}

func (w *writer) SaveHeartbeatCheckpoint(text string) {
	w.mu.Lock()
	if w.closed || w.hb == nil {
		w.mu.Unlock()
		return
	}
	w.hb.Checkpoint = text
	hb := *w.hb
	w.mu.Unlock()
	activity.RecordHeartbeat(w.ctx, hb)
}

func (w *writer) checkpoint() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hb == nil {
		return ""
	}
	return w.hb.Checkpoint
}

// Interface guards
var (
	_ pluginapi.ToolEventWriter = (*writer)(nil)
)
