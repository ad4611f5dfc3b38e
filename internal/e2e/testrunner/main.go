// Command testrunner is the runner plugin of the integration tests: a
// stepwise agent whose tools and model stop at FileGates and count their
// calls in an InvocationLog, and whose scripted model reads its orders from
// the user message:
//
//	call:TOOL:NAME   request TOOL with {"name": NAME}; all calls of one
//	                 message are requested in one response, in parallel
//	ask:Q[:C1,C2]    call the built-in ask_user with question Q ("_" for
//	                 spaces) and, if given, choices
//	wait:SECONDS     call the built-in durable_wait
//	todo:A,B         call the built-in write_todos with pending tasks A, B
//	                 ("_" for spaces)
//	modelgate:NAME   stop the first model call of the turn at gate model-NAME
//	                 (a call whose context ends there logs model_cancelled)
//	slowstream       stream a text delta every 50 ms until the call's context
//	                 ends, then log model_stream_cancelled with the time
//	                 (Unix nanoseconds) and the message text
//	fail             fail every model call
//	permfail         fail every model call with a permanent error
//	failonce:NAME    fail the first model call with NAME permanently (it
//	                 leaves failonce-NAME in the state dir), answer later ones
//	leakfail         fail every model call permanently, with the value of
//	                 $DEX_TEST_SECRET in the error text
//
// The labeler's tool task logs each cancel (task_cancel), stopping at the
// gate taskcancel-NAME when armed.
//
// The tool leak fails with the value of $DEX_TEST_SECRET in its error text;
// the tool big returns as many "x" as its name says.
//
// Once the turn's tools ran, the model answers "done: " and each result.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest/probe"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/pluginapi/otelenv"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

type config struct {
	StateDir string `json:"state_dir"`
	// ExtraTool, when set, adds a read tool of that name (a name clash,
	// say).
	ExtraTool string `json:"extra_tool"`
}

type gateArgs struct {
	Name string `json:"name"`
}

func build(_ context.Context, agent string, raw json.RawMessage) (*stepwise.AgentDefinition, error) {
	var cfg config
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.StateDir == "" {
		return nil, fmt.Errorf("testrunner runner_config: state_dir is required (%v)", err)
	}
	log := &probe.InvocationLog{Path: filepath.Join(cfg.StateDir, "invocations.log")}
	// Tests kill this process by the PID it leaves here.
	if err := os.WriteFile(filepath.Join(cfg.StateDir, "plugin.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	gated := func(tool, result string, effect pluginapi.Effect) *stepwise.Tool {
		return stepwise.MustFunctionTool(tool, "A tool that stops at its gate when the test armed it.",
			func(ctx context.Context, tc stepwise.ToolCallContext, a gateArgs) (string, error) {
				if err := log.Record("tool", tool, a.Name+" "+tc.IdempotencyKey); err != nil {
					return "", err
				}
				if err := (probe.FileGate{Dir: cfg.StateDir, Name: "tool-" + a.Name}).WaitIfArmed(ctx); err != nil {
					return "", err
				}
				return result + " " + a.Name, nil
			}, stepwise.WithEffect(effect))
	}
	big := stepwise.MustFunctionTool("big", "Returns as many x as its name says.", func(ctx context.Context, tc stepwise.ToolCallContext, a gateArgs) (string, error) {
		n, err := strconv.Atoi(a.Name)
		if err != nil {
			return "", err
		}
		return strings.Repeat("x", n), nil
	}, stepwise.WithEffect(pluginapi.EffectRead))
	leak := stepwise.MustFunctionTool("leak", "Fails with a secret in its error, and in a line on stderr (which the worker logs).", func(ctx context.Context, tc stepwise.ToolCallContext, a gateArgs) (string, error) {
		fmt.Fprintln(os.Stderr, "leak: calling upstream with token "+os.Getenv("DEX_TEST_SECRET"))
		return "", &pluginapi.ToolExecutionError{Message: "upstream rejected token " + os.Getenv("DEX_TEST_SECRET")}
	}, stepwise.WithEffect(pluginapi.EffectRead))
	// asker asks which color before it takes any effect; with the answer
	// it reports the color and the continuation it got back.
	asker := stepwise.MustFunctionTool("asker", "Asks which color, then paints.", func(ctx context.Context, tc stepwise.ToolCallContext, a gateArgs) (string, error) {
		if err := log.Record("tool", "asker", a.Name+" "+strings.Join(tc.InputAnswers, ",")); err != nil {
			return "", err
		}
		if len(tc.InputAnswers) == 0 {
			return "", &pluginapi.ToolInputRequested{Question: "Which color for " + a.Name + "?", Choices: []string{"red", "blue"}, Continuation: "asked-" + a.Name}
		}
		return a.Name + " painted " + tc.InputAnswers[len(tc.InputAnswers)-1] + " (" + tc.InputContinuation + ")", nil
	}, stepwise.WithEffect(pluginapi.EffectRead))
	// labeler starts a tool task in a fake remote system (a JSON file per
	// task in the state dir). Its second poll asks which size, keyed by
	// the continuation "q1" so a retried poll never asks twice; two polls
	// after the answer the label is ready.
	type labelTask struct {
		Polls, AnsweredAt int
		Answer            string
	}
	taskFile := func(id string) string { return filepath.Join(cfg.StateDir, "task-"+id+".json") }
	loadTask := func(id string) (labelTask, error) {
		var st labelTask
		b, err := os.ReadFile(taskFile(id))
		if err != nil {
			return st, err
		}
		return st, json.Unmarshal(b, &st)
	}
	saveTask := func(id string, st labelTask) error {
		b, _ := json.Marshal(st)
		return os.WriteFile(taskFile(id), b, 0o644)
	}
	labeler := stepwise.MustFunctionTool("labeler", "Prints a label as a tool task.", func(ctx context.Context, tc stepwise.ToolCallContext, a gateArgs) (string, error) {
		id := "job-" + a.Name
		if err := log.Record("tool", "labeler", a.Name); err != nil {
			return "", err
		}
		if tc.Checkpoint == "" {
			if err := saveTask(id, labelTask{}); err != nil {
				return "", err
			}
			tc.Events.SaveHeartbeatCheckpoint(id)
		}
		return "", &pluginapi.ToolTaskStarted{TaskID: id, PollIntervalSeconds: 1}
	}, stepwise.WithEffect(pluginapi.EffectRead), stepwise.WithTaskPoll(func(ctx context.Context, p stepwise.TaskPoll) (*pluginapi.ExecuteToolResponse, error) {
		st, err := loadTask(p.TaskID)
		if err != nil {
			return nil, err
		}
		st.Polls++
		if p.PendingAnswer != nil && p.Continuation == "q1" && st.Answer == "" {
			st.Answer, st.AnsweredAt = p.PendingAnswer.Resolution+":"+p.PendingAnswer.Answer, st.Polls
		}
		if err := saveTask(p.TaskID, st); err != nil {
			return nil, err
		}
		if err := log.Record("poll", p.TaskID, strconv.Itoa(st.Polls)); err != nil {
			return nil, err
		}
		switch {
		case st.Answer == "" && st.Polls >= 2:
			return &pluginapi.ExecuteToolResponse{InputRequested: &pluginapi.ToolInputRequested{
				Question: "Label size for " + strings.TrimPrefix(p.TaskID, "job-") + "?", Choices: []string{"small", "large"}, Continuation: "q1"}}, nil
		case st.Answer == "" || st.Polls < st.AnsweredAt+2:
			return &pluginapi.ExecuteToolResponse{TaskPending: &pluginapi.ToolTaskPending{PollIntervalSeconds: 1}}, nil
		}
		return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: fmt.Sprintf("label %s %s after %d polls", p.TaskID, st.Answer, st.Polls)}}, nil
	}), stepwise.WithTaskCancel(func(ctx context.Context, c stepwise.TaskCancel) error {
		// Each call is logged; it stops at the gate taskcancel-NAME when the
		// test armed it.
		if err := log.Record("task_cancel", c.TaskID, c.ToolCallID); err != nil {
			return err
		}
		return (probe.FileGate{Dir: cfg.StateDir, Name: "taskcancel-" + strings.TrimPrefix(c.TaskID, "job-")}).WaitIfArmed(ctx)
	}))
	noop := stepwise.MustFunctionTool("noop", "Does nothing.", func(ctx context.Context, tc stepwise.ToolCallContext, a gateArgs) (string, error) {
		return "ok", nil
	}, stepwise.WithEffect(pluginapi.EffectRead))
	script := func(ctx context.Context, req *stepwise.ModelRequest) (stepwise.ScriptedReply, error) {
		// Every call's input size, for tests that bound it.
		if err := log.Record("input", agent, strconv.FormatInt(stepwise.EstimateTokens(req), 10)); err != nil {
			return stepwise.ScriptedReply{}, err
		}
		if stepwise.IsSummaryRequest(req) {
			if err := (probe.FileGate{Dir: cfg.StateDir, Name: "summary"}).WaitIfArmed(ctx); err != nil {
				return stepwise.ScriptedReply{}, err
			}
			if err := log.Record("summary", agent, strconv.Itoa(len(req.Items))); err != nil {
				return stepwise.ScriptedReply{}, err
			}
			return stepwise.ScriptedReply{Text: stepwise.ScriptedSummary(req)}, nil
		}
		texts := stepwise.UserTexts(req)
		text := ""
		if len(texts) > 0 {
			text = texts[len(texts)-1]
		}
		results := stepwise.ToolResults(req)
		detail := text
		if len(detail) > 1000 { // a log record is one short line
			detail = fmt.Sprintf("%s...(%d bytes)", detail[:200], len(detail))
		}
		if err := log.Record("model", agent, detail); err != nil {
			return stepwise.ScriptedReply{}, err
		}
		var calls []stepwise.ScriptedToolCall
		for _, tok := range strings.Fields(text) {
			switch {
			case tok == "fail":
				return stepwise.ScriptedReply{}, errors.New("scripted model failure")
			case tok == "items":
				// What the model sees: how many items, and the texts of the users'.
				return stepwise.ScriptedReply{Text: fmt.Sprintf("items=%d users=%s", len(req.Items), strings.Join(texts, "|"))}, nil
			case tok == "permfail":
				return stepwise.ScriptedReply{}, pluginapi.Permanent(errors.New("scripted permanent failure (HTTP 400)"))
			case strings.HasPrefix(tok, "failonce:"):
				mark := filepath.Join(cfg.StateDir, "failonce-"+strings.TrimPrefix(tok, "failonce:"))
				if f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
					f.Close()
					return stepwise.ScriptedReply{}, pluginapi.Permanent(errors.New("scripted failure of the first try"))
				}
			case tok == "leakfail":
				return stepwise.ScriptedReply{}, pluginapi.Permanent(errors.New("provider rejected key " + os.Getenv("DEX_TEST_SECRET")))
			case strings.HasPrefix(tok, "modelgate:") && len(results) == 0:
				if err := (probe.FileGate{Dir: cfg.StateDir, Name: "model-" + strings.TrimPrefix(tok, "modelgate:")}).WaitIfArmed(ctx); err != nil {
					if ctx.Err() != nil {
						// The call's context ended while it waited: cancel_turn
						// reached the runner.
						_ = log.Record("model_cancelled", agent, text)
					}
					return stepwise.ScriptedReply{}, err
				}
			case strings.HasPrefix(tok, "draftgate:") && len(results) == 0:
				// Each call writes another text (the model calls so far are in
				// it), so a retried call streams something else.
				return stepwise.ScriptedReply{Text: fmt.Sprintf("draft %d of the answer", log.Count("model", agent))}, nil
			case strings.HasPrefix(tok, "ask:"):
				parts := strings.SplitN(tok, ":", 3)
				args := map[string]any{"question": strings.ReplaceAll(parts[1], "_", " ")}
				if len(parts) == 3 {
					args["choices"] = strings.Split(parts[2], ",")
				}
				calls = append(calls, stepwise.ScriptedToolCall{Name: "ask_user", Arguments: args})
			case strings.HasPrefix(tok, "todo:"):
				var todos []map[string]string
				for _, c := range strings.Split(strings.TrimPrefix(tok, "todo:"), ",") {
					todos = append(todos, map[string]string{"content": strings.ReplaceAll(c, "_", " "), "status": "pending"})
				}
				calls = append(calls, stepwise.ScriptedToolCall{Name: "write_todos", Arguments: map[string]any{"todos": todos}})
			case strings.HasPrefix(tok, "wait:"):
				n, _ := strconv.Atoi(strings.TrimPrefix(tok, "wait:"))
				calls = append(calls, stepwise.ScriptedToolCall{Name: "durable_wait", Arguments: map[string]any{"duration_seconds": n, "reason": "scripted wait"}})
			case strings.HasPrefix(tok, "args:"):
				// args:TOOL:JSON calls TOOL with the JSON object (no spaces).
				parts := strings.SplitN(tok, ":", 3)
				if len(parts) == 3 {
					calls = append(calls, stepwise.ScriptedToolCall{Name: parts[1], Arguments: json.RawMessage(parts[2])})
				}
			case strings.HasPrefix(tok, "call:"):
				parts := strings.SplitN(tok, ":", 3)
				if len(parts) == 3 {
					calls = append(calls, stepwise.ScriptedToolCall{Name: parts[1], Arguments: gateArgs{Name: parts[2]}})
				}
			}
		}
		if len(results) > 0 || len(calls) == 0 {
			var parts []string
			for _, r := range results {
				parts = append(parts, r.ToolName+"="+r.Status+":"+r.Output)
			}
			if len(parts) == 0 {
				return stepwise.ScriptedReply{Text: "echo: " + text}, nil
			}
			done := "done: " + strings.Join(parts, "; ")
			// The plan note, when the session has a plan.
			for _, t := range stepwise.UserTexts(req) {
				if strings.HasPrefix(t, "[Dex] The current plan") {
					done += " [" + strings.SplitN(t, "\n", 2)[0] + "]"
				}
			}
			return stepwise.ScriptedReply{Text: done}, nil
		}
		return stepwise.ScriptedReply{ToolCalls: calls}, nil
	}
	def := &stepwise.AgentDefinition{
		Name:  agent,
		Model: slowStream{stepwise.NewScriptedModelClient(script), log, agent, cfg.StateDir},
		Tools: []*stepwise.Tool{
			// runner_read's effect is the runner's alone: no tool policy
			// of the test config names it.
			gated("runner_read", "read", pluginapi.EffectRead),
			gated("read_gate", "read", pluginapi.EffectRead),
			gated("idem_gate", "wrote", pluginapi.EffectIdempotentWrite),
			gated("write_gate", "wrote", pluginapi.EffectNonIdempotentWrite),
			gated("approve_write", "wrote", pluginapi.EffectNonIdempotentWrite),
			leak,
			big,
			noop,
			asker,
			labeler,
		},
	}
	if cfg.ExtraTool != "" {
		def.Tools = append(def.Tools, gated(cfg.ExtraTool, "extra", pluginapi.EffectRead))
	}
	return def, nil
}

// slowStream is the scripted model, except that the first call of a turn
// whose message has the token slowstream streams until its context ends.
type slowStream struct {
	*stepwise.ScriptedModelClient
	log      *probe.InvocationLog
	agent    string
	stateDir string
}

// gatedOutput waits at its gate after the first text delta.
type gatedOutput struct {
	stepwise.ModelOutput
	ctx    context.Context
	gate   probe.FileGate
	passed bool
}

func (o *gatedOutput) WriteTextDelta(text string) {
	o.ModelOutput.WriteTextDelta(text)
	if !o.passed {
		o.passed = true
		_ = o.gate.WaitIfArmed(o.ctx)
	}
}

func (m slowStream) CallModel(ctx context.Context, req *stepwise.ModelRequest, out stepwise.ModelOutput) (*stepwise.ModelResponse, error) {
	texts := stepwise.UserTexts(req)
	if len(texts) > 0 && len(stepwise.ToolResults(req)) == 0 {
		// streamgate:NAME and draftgate:NAME stream the reply's first words,
		// then stop at the gate model-NAME when the test armed it (a kill
		// mid-stream).
		for _, tok := range strings.Fields(texts[len(texts)-1]) {
			name, ok := strings.CutPrefix(tok, "streamgate:")
			if !ok {
				name, ok = strings.CutPrefix(tok, "draftgate:")
			}
			if ok {
				out = &gatedOutput{ModelOutput: out, ctx: ctx, gate: probe.FileGate{Dir: m.stateDir, Name: "model-" + name}}
			}
		}
	}
	if len(texts) == 0 || len(stepwise.ToolResults(req)) > 0 || !slices.Contains(strings.Fields(texts[len(texts)-1]), "slowstream") {
		return m.ScriptedModelClient.CallModel(ctx, req, out)
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		out.WriteTextDelta("streaming ")
		select {
		case <-ctx.Done():
			_ = m.log.Record("model_stream_cancelled", m.agent, strconv.FormatInt(time.Now().UnixNano(), 10)+" "+texts[len(texts)-1])
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func main() {
	pluginapi.Serve(pluginapi.ServeOptions{Runner: stepwise.NewRunner("testrunner", "test", build), TracerProvider: otelenv.Provider()})
}
