// Package runnertest drives a runner through whole turns in a unit test,
// as the worker would, with no engine: it serves the runner over the real
// gRPC shims in process, configures it, builds each user message, makes
// the model calls, and handles the tool calls the runner defers by their
// policies: it asks the test about each approval and each question, runs
// the approved calls through the runner (or the test's own host tools), and
// hands the final records back until the turn completes.
//
//	s := runnertest.New(t, myRunner, runnertest.Options{Agent: "orders", RunnerConfig: `{"model": {"provider": "scripted"}}`})
//	s.Approve = func(c pluginapi.DeferredToolCall) (bool, string) { return c.ToolName != "delete_everything", "" }
//	turn := s.Send("refund order 7")
//	if turn.Text() != "Refunded $77.50." { ... }
//
// What it does not do is what the session does around a runner: retries,
// deadlines, the message store, events, durability. Test those with
// package agenttest of the worker's module, which runs a real engine.
package runnertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// Options configure a Session.
type Options struct {
	// Agent is the agent's name ("agent" when empty).
	Agent string
	// RunnerConfig is the agent's runner_config as JSON ("{}" when empty).
	RunnerConfig string
	// Policies are the operator's tool policies; a tool without one gets
	// the runner's policy, as in the worker.
	Policies pluginapi.PolicySet
	// HostTools are tools the worker would run (built-ins, MCP): the
	// runner is offered their definitions, and HostTool runs their calls.
	HostTools []pluginapi.ToolDefinition
	// MaxModelCalls bounds one turn's model calls (default 16).
	MaxModelCalls int
	// Timeout bounds each call to the runner (default 1 minute).
	Timeout time.Duration
}

// Session is one session of one agent, driven turn by turn.
type Session struct {
	// Approve decides a call whose policy requires approval: approve, or
	// reject with a message the model sees. Nil approves every call.
	Approve func(call pluginapi.DeferredToolCall) (approved bool, rejection string)
	// Answer answers a question a tool asks (input requested). Nil
	// declines every question.
	Answer func(call pluginapi.DeferredToolCall, q *pluginapi.ToolInputRequested) (answer string, ok bool)
	// HostTool runs a call of one of Options.HostTools and returns its
	// output, or an error the model sees.
	HostTool func(call pluginapi.DeferredToolCall) (string, error)

	t        testing.TB
	runner   pluginapi.Runner
	opts     Options
	id       string
	messages []pluginapi.Message
	turns    int
	events   *Events
}

// Turn is what one user message led to.
type Turn struct {
	ID string
	// Messages are the messages the turn stored, in order.
	Messages []pluginapi.Message
	// ToolCalls are the final records of the turn's tool calls.
	ToolCalls []pluginapi.ToolCall
	// ModelCalls counts the turn's model calls, and Usage adds theirs up.
	ModelCalls int
	Usage      pluginapi.Usage
}

// Text is the text of the turn's last assistant message.
func (t *Turn) Text() string {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		if t.Messages[i].Role == pluginapi.RoleAssistant {
			return t.Messages[i].Text
		}
	}
	return ""
}

// Call returns the record of the turn's first call of tool, and false if
// the turn made none.
func (t *Turn) Call(tool string) (pluginapi.ToolCall, bool) {
	for _, c := range t.ToolCalls {
		if c.ToolName == tool {
			return c, true
		}
	}
	return pluginapi.ToolCall{}, false
}

// New serves r in process, configures it for the agent and returns the
// session. It fails the test when Configure fails.
func New(t testing.TB, r pluginapi.Runner, opts Options) *Session {
	t.Helper()
	if opts.Agent == "" {
		opts.Agent = "agent"
	}
	if opts.RunnerConfig == "" {
		opts.RunnerConfig = "{}"
	}
	if opts.MaxModelCalls <= 0 {
		opts.MaxModelCalls = 16
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	if opts.Policies.DefaultEffect == "" {
		opts.Policies.DefaultEffect = pluginapi.EffectUnclassified
	}
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		pluginapi.PluginName: &pluginapi.RunnerPlugin{Runner: r},
	})
	t.Cleanup(func() {
		server.Stop()
		_ = client.Close()
	})
	raw, err := client.Dispense(pluginapi.PluginName)
	if err != nil {
		t.Fatalf("runnertest: dispense the runner: %v", err)
	}
	s := &Session{t: t, runner: raw.(pluginapi.Runner), opts: opts, id: fmt.Sprintf("runnertest-%s", strings.ReplaceAll(t.Name(), "/", "-")), events: &Events{}}
	ctx, cancel := s.context()
	defer cancel()
	if _, err := s.runner.Configure(ctx, &pluginapi.ConfigureRequest{Agent: opts.Agent, RunnerConfig: []byte(opts.RunnerConfig), ProtocolVersion: pluginapi.ProtocolVersion}); err != nil {
		t.Fatalf("runnertest: Configure: %v", err)
	}
	return s
}

func (s *Session) context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}

// Messages returns every message the session stored.
func (s *Session) Messages() []pluginapi.Message {
	return append([]pluginapi.Message(nil), s.messages...)
}

// Events returns the live events the runner wrote.
func (s *Session) Events() *Events { return s.events }

// Send runs one turn from a user message, to its end, and fails the test
// when the runner fails a call or breaks the contract.
func (s *Session) Send(text string) *Turn {
	s.t.Helper()
	turn, err := s.TrySend(text)
	if err != nil {
		s.t.Fatalf("runnertest: %v", err)
	}
	return turn
}

// TrySend is Send returning the error.
func (s *Session) TrySend(text string) (*Turn, error) {
	s.turns++
	turn := &Turn{ID: fmt.Sprintf("turn-%d", s.turns)}
	ctx, cancel := s.context()
	um, err := s.runner.BuildUserMessage(ctx, &pluginapi.BuildUserMessageRequest{Agent: s.opts.Agent, Text: text})
	cancel()
	if err != nil {
		return turn, fmt.Errorf("BuildUserMessage: %w", err)
	}
	s.store(turn, um.Message)
	var runState string
	for turn.ModelCalls < s.opts.MaxModelCalls {
		turn.ModelCalls++
		ctx, cancel := s.context()
		resp, err := s.runner.RunModelStep(ctx, &pluginapi.RunModelStepRequest{Turn: s.turnContext(turn, runState), Events: s.events})
		cancel()
		if err != nil {
			return turn, fmt.Errorf("RunModelStep %d of %s: %w", turn.ModelCalls, turn.ID, err)
		}
		if done := resp.TurnCompleted; done != nil {
			turn.Usage = turn.Usage.Add(done.Usage)
			for _, m := range done.NewMessages {
				s.store(turn, m)
			}
			return turn, nil
		}
		req := resp.ToolCallsRequested
		turn.Usage = turn.Usage.Add(req.Usage)
		for _, m := range req.NewMessages {
			s.store(turn, m)
		}
		runState = req.RunState
		for _, call := range req.ToolCalls {
			rec, err := s.settle(turn, call)
			if err != nil {
				return turn, err
			}
			turn.ToolCalls = append(turn.ToolCalls, rec)
		}
	}
	return turn, fmt.Errorf("%s did not complete within %d model calls", turn.ID, s.opts.MaxModelCalls)
}

func (s *Session) store(turn *Turn, m pluginapi.FrameworkMessage) {
	msg := pluginapi.Message{
		Sequence: int64(len(s.messages) + 1), Role: m.Role, Text: m.Text, Item: m.Item,
		ToolCallID: m.ToolCallID, ToolName: m.ToolName, TurnID: turn.ID, ToolStatus: m.ToolStatus,
	}
	s.messages = append(s.messages, msg)
	turn.Messages = append(turn.Messages, msg)
}

func (s *Session) turnContext(turn *Turn, runState string) pluginapi.TurnContext {
	return pluginapi.TurnContext{
		Agent: s.opts.Agent, SessionID: s.id, TurnID: turn.ID, Attempt: 1,
		Messages: append([]pluginapi.Message(nil), s.messages...), RunState: runState,
		ToolCalls: append([]pluginapi.ToolCall(nil), turn.ToolCalls...),
		Policies:  s.opts.Policies, HostTools: s.opts.HostTools, InteractionMode: "chat",
	}
}

// settle takes one deferred call to its final record: the operator's
// policy first (the worker's rule), then the approval, then the call and
// its questions and task.
func (s *Session) settle(turn *Turn, call pluginapi.DeferredToolCall) (pluginapi.ToolCall, error) {
	policy := call.Policy
	if p, ok := s.opts.Policies.Policies[call.ToolName]; ok {
		policy = p
	}
	rec := pluginapi.ToolCall{
		ToolCallID: call.ToolCallID, ToolName: call.ToolName, Arguments: call.Arguments,
		Effect: policy.Effect, RequiresApproval: policy.ApprovalRequired(),
		DeferralOrder: len(turn.ToolCalls), ToolSourceReference: call.ToolSourceReference,
	}
	if rec.RequiresApproval && s.Approve != nil {
		if ok, msg := s.Approve(call); !ok {
			rec.Status, rec.RejectionMessage = pluginapi.ToolCallRejected, msg
			return rec, nil
		}
	}
	rec.Status = pluginapi.ToolCallApproved
	if s.isHostTool(call.ToolName) {
		if s.HostTool == nil {
			return rec, fmt.Errorf("the runner called host tool %s, and the session has no HostTool", call.ToolName)
		}
		out, err := s.HostTool(call)
		if err != nil {
			rec.Status, rec.Error = pluginapi.ToolCallFailed, err.Error()
		} else {
			rec.Status, rec.Output = pluginapi.ToolCallSucceeded, out
		}
		return rec, nil
	}
	var answers []string
	for asked := 0; ; asked++ {
		if asked > 8 {
			return rec, fmt.Errorf("tool call %s asked more than 8 questions", call.ToolCallID)
		}
		ctx, cancel := s.context()
		resp, err := s.runner.ExecuteDeferredToolCall(ctx, &pluginapi.ExecuteToolRequest{
			Agent: s.opts.Agent, SessionID: s.id, TurnID: turn.ID, ToolCall: rec,
			IdempotencyKey: s.id + "/" + turn.ID + "/" + call.ToolCallID, Attempt: 1,
			InputAnswers: answers, SupportsToolTasks: true, Events: s.events,
		})
		cancel()
		var toolErr *pluginapi.ToolExecutionError
		var q *pluginapi.ToolInputRequested
		var task *pluginapi.ToolTaskStarted
		switch {
		case asErr(err, &toolErr):
			rec.Status, rec.Error = pluginapi.ToolCallFailed, toolErr.Message
			return rec, nil
		case asErr(err, &q):
			resp, err = &pluginapi.ExecuteToolResponse{InputRequested: q}, nil
		case asErr(err, &task):
			resp, err = &pluginapi.ExecuteToolResponse{TaskStarted: task}, nil
		}
		if err != nil {
			return rec, fmt.Errorf("ExecuteDeferredToolCall %s (%s): %w", call.ToolCallID, call.ToolName, err)
		}
		switch {
		case resp.Result != nil:
			rec.Status, rec.Output = pluginapi.ToolCallSucceeded, resp.Result.Output
			return rec, nil
		case resp.Error != nil:
			rec.Status, rec.Error = pluginapi.ToolCallFailed, resp.Error.Message
			return rec, nil
		case resp.InputRequested != nil:
			answer, ok := "", false
			if s.Answer != nil {
				answer, ok = s.Answer(call, resp.InputRequested)
			}
			if !ok {
				rec.Status, rec.RejectionMessage = pluginapi.ToolCallRejected, "The user declined to answer."
				return rec, nil
			}
			answers = append(answers, answer)
			rec.InputContinuation = resp.InputRequested.Continuation
		case resp.TaskStarted != nil:
			return s.pollTask(turn, rec, resp.TaskStarted)
		default:
			return rec, fmt.Errorf("ExecuteDeferredToolCall %s answered nothing", call.ToolCallID)
		}
	}
}

// pollTask polls a tool task until it ends, without waiting between polls.
func (s *Session) pollTask(turn *Turn, rec pluginapi.ToolCall, task *pluginapi.ToolTaskStarted) (pluginapi.ToolCall, error) {
	rec.TaskID, rec.TaskPollIntervalSeconds = task.TaskID, task.PollIntervalSeconds
	poller, ok := s.runner.(pluginapi.ToolTaskPoller)
	if !ok {
		return rec, fmt.Errorf("tool call %s started task %s, and the runner cannot poll", rec.ToolCallID, task.TaskID)
	}
	continuation := ""
	for polls := 0; polls < 100; polls++ {
		ctx, cancel := s.context()
		resp, err := poller.PollToolTask(ctx, &pluginapi.PollToolTaskRequest{
			Agent: s.opts.Agent, SessionID: s.id, TurnID: turn.ID, ToolCall: rec, TaskID: rec.TaskID,
			Continuation: continuation, Attempt: 1, Events: s.events,
		})
		cancel()
		if err != nil {
			return rec, fmt.Errorf("PollToolTask %s: %w", rec.TaskID, err)
		}
		switch {
		case resp.Result != nil:
			rec.Status, rec.Output = pluginapi.ToolCallSucceeded, resp.Result.Output
			return rec, nil
		case resp.Error != nil:
			rec.Status, rec.Error = pluginapi.ToolCallFailed, resp.Error.Message
			return rec, nil
		case resp.TaskPending != nil:
			continuation = resp.TaskPending.Continuation
		default:
			return rec, fmt.Errorf("PollToolTask %s answered %+v", rec.TaskID, resp)
		}
	}
	return rec, fmt.Errorf("task %s did not end within 100 polls", rec.TaskID)
}

func (s *Session) isHostTool(name string) bool {
	for _, d := range s.opts.HostTools {
		if d.Name == name {
			return true
		}
	}
	return false
}

// asErr is errors.As for the runner's typed outcomes.
func asErr[T error](err error, target *T) bool {
	if err == nil {
		return false
	}
	e, ok := err.(T)
	if ok {
		*target = e
	}
	return ok
}

// Events records the live events a runner wrote, in order.
type Events struct {
	mu     sync.Mutex
	events []Event
}

// Event is one live event: its type and payload (a JSON object).
type Event struct {
	Type    string
	Payload json.RawMessage
}

// All returns the events so far.
func (e *Events) All() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.events...)
}

// Text is every text delta so far, joined.
func (e *Events) Text() string {
	var b strings.Builder
	for _, ev := range e.All() {
		if ev.Type == pluginapi.EventTextDelta {
			var p struct{ Text string }
			_ = json.Unmarshal(ev.Payload, &p)
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func (e *Events) add(t string, payload any) {
	b, _ := json.Marshal(payload)
	e.mu.Lock()
	e.events = append(e.events, Event{Type: t, Payload: b})
	e.mu.Unlock()
}

// WriteTextDelta implements pluginapi.EventWriter.
func (e *Events) WriteTextDelta(text string) {
	e.add(pluginapi.EventTextDelta, map[string]string{"text": text})
}

// WriteReasoningDelta implements pluginapi.EventWriter.
func (e *Events) WriteReasoningDelta(text string) {
	e.add(pluginapi.EventReasoningDelta, map[string]string{"text": text})
}

// WriteEvent implements pluginapi.EventWriter.
func (e *Events) WriteEvent(eventType string, payload any) error {
	e.add(eventType, payload)
	return nil
}

// Heartbeat implements pluginapi.EventWriter.
func (e *Events) Heartbeat() {}

// SaveHeartbeatCheckpoint implements pluginapi.ToolEventWriter.
func (e *Events) SaveHeartbeatCheckpoint(string) {}
