package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/runnerhost"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// modelCheckTimeout bounds the check's model call.
const modelCheckTimeout = 2 * time.Minute

// checkToolName is a tool no runner offers, for the error-mapping check.
const checkToolName = "dex_plugin_check_no_such_tool"

func newPluginCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "plugin", Short: "Work with runner plugins"}
	var cfgPath, agent, message string
	var noVectors, runReadTools bool
	check := &cobra.Command{
		Use:   "check --config FILE --agent NAME [--message TEXT]",
		Short: "Run the runner contract's checks on an agent's plugin; exit 1 if one fails",
		Long: "check starts the agent's plugin as the worker does and runs the runner contract's checks, printing\n" +
			"PASS, FAIL (with what to fix) or SKIP for each: the go-plugin handshake (AutoMTLS, the sha256),\n" +
			"Info, Configure with the agent's runner_config (the tools it offers against tool_policies), the\n" +
			"capabilities against the agent's config, BuildUserMessage, one model call (RunModelStep with\n" +
			"--message: a real call to the agent's model, which may cost money), the deferral of the tool\n" +
			"calls it asks for (IDs, names, JSON arguments, a run state; the check never runs them), the events\n" +
			"it wrote, the runner contract's test vectors (each vector's requests that any runner can answer,\n" +
			"with the contract's rules on the answers: one valid outcome, a cancelled call that ends, a\n" +
			"compaction cutoff within the transcript), and error mapping: a call of a tool the runner does not offer must come back as a tool\n" +
			"error, not as a result, a crash or a hang. The worker drops event writes after a call returned\n" +
			"whatever the runner does, so no check can fail there.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				fmt.Fprintf(g.stderr, "%s is not valid:\n%v\n", cfgPath, err)
				return exitError{code: 1}
			}
			i := slices.IndexFunc(cfg.Agents, func(a config.Agent) bool { return a.Name == agent })
			if i < 0 {
				var names []string
				for _, a := range cfg.Agents {
					names = append(names, a.Name)
				}
				fmt.Fprintf(g.stderr, "%s has no agent %q (it has: %s)\n", cfgPath, agent, strings.Join(names, ", "))
				return exitError{code: 2}
			}
			c := &pluginCheck{out: g.stdout, cfg: cfg, agent: &cfg.Agents[i], message: message, vectors: !noVectors, runReadTools: runReadTools}
			if c.run(cmd.Context(), validateLogger(g, cmd)) {
				fmt.Fprintf(g.stdout, "\nplugin %s passes for agent %s (%d checks passed, %d skipped)\n", c.agent.Runner, agent, c.passed, c.skipped)
				return nil
			}
			fmt.Fprintf(g.stdout, "\nplugin %s fails %d check(s) for agent %s\n", c.agent.Runner, c.failed, agent)
			return exitError{code: 1}
		},
	}
	check.Flags().StringVar(&cfgPath, "config", "", "config file (required)")
	check.Flags().StringVar(&agent, "agent", "", "the agent whose plugin to check (required)")
	check.Flags().StringVar(&message, "message", "Hello! What can you do? Use one of your tools if you have any.",
		"the user message of the checked model call; ask for a tool call to check the deferral")
	check.Flags().BoolVar(&noVectors, "no-vectors", false,
		"skip the contract's test vectors (they make up to four more model calls)")
	check.Flags().BoolVar(&runReadTools, "run-read-tools", false,
		"run the tool calls the model call deferred whose policy is read without approval, then the model call that takes their results")
	_ = check.MarkFlagRequired("config")
	_ = check.MarkFlagRequired("agent")
	cmd.AddCommand(check)
	return cmd
}

// pluginCheck runs the checks and prints their results.
type pluginCheck struct {
	out     io.Writer
	cfg     *config.Config
	agent   *config.Agent
	message string
	// vectors sends the fresh requests of the contract's test vectors.
	vectors bool
	// runReadTools runs the deferred read tools and the model call after.
	runReadTools bool

	passed, failed, skipped int
}

func (c *pluginCheck) pass(name, format string, args ...any) {
	c.passed++
	fmt.Fprintf(c.out, "PASS %-18s %s\n", name, fmt.Sprintf(format, args...))
}

func (c *pluginCheck) fail(name, fix, format string, args ...any) {
	c.failed++
	fmt.Fprintf(c.out, "FAIL %-18s %s\n", name, fmt.Sprintf(format, args...))
	if fix != "" {
		fmt.Fprintf(c.out, "     %-18s fix: %s\n", "", fix)
	}
}

func (c *pluginCheck) skip(name, format string, args ...any) {
	c.skipped++
	fmt.Fprintf(c.out, "SKIP %-18s %s\n", name, fmt.Sprintf(format, args...))
}

// run runs every check whose prerequisites passed; it reports whether
// none failed.
func (c *pluginCheck) run(ctx context.Context, logger *slog.Logger) bool {
	h := runnerhost.New(logger)
	defer h.Close()
	a := c.agent
	p := c.cfg.Plugins[a.Runner]
	lctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
	err := h.Launch(lctx, runnerhost.PluginSpec{Name: a.Runner, Command: p.Command, Args: p.Args, Dir: c.cfg.Dir(), SHA256: p.SHA256, Env: p.Env})
	cancel()
	if err != nil {
		c.fail("handshake", "build the plugin; call pluginapi.Serve (or the documented go-plugin handshake) first and print nothing to stdout before it; check plugins."+a.Runner+".command and sha256", "%v", err)
		return false
	}
	c.pass("handshake", "%s started; go-plugin handshake over gRPC with AutoMTLS%s", p.Command, map[bool]string{true: ", sha256 matched", false: ""}[p.SHA256 != ""])

	info, caps, _ := h.Info(a.Runner)
	if info.Name == "" {
		c.fail("info", "return the runner's name (and version) from Info", "Info returned no name")
	} else {
		c.pass("info", "name %q, version %q, runner contract v%d", info.Name, info.Version, h.ContractVersion(a.Runner))
	}

	raw, err := a.RunnerConfigJSON()
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
		err = h.Configure(cctx, a.Runner, a.Name, raw)
		cancel()
	}
	if err != nil {
		c.fail("configure", "fix the agent's runner_config, or the plugin's Configure", "%v", err)
		return false
	}
	offered := h.Tools(a.Runner, a.Name)
	c.pass("configure", "runner_config accepted; tools offered: %s", listOrNone(offered))
	if unused := a.UnofferedToolPolicies(offered); len(unused) > 0 {
		c.fail("tool_policies", "remove the policies, or offer the tools from Configure", "policies for tools the runner does not offer: %s", strings.Join(unused, ", "))
	}

	capsJSON, _ := json.Marshal(caps)
	if a.Compaction != nil && !caps.Compaction {
		c.fail("capabilities", "implement pluginapi.Compactor, or remove the agent's compaction", "%s; the agent sets compaction but the runner cannot compact", capsJSON)
	} else {
		c.pass("capabilities", "%s", capsJSON)
	}

	r, err := h.Runner(a.Runner)
	if err != nil {
		c.fail("runner", "", "%v", err)
		return false
	}
	c.checkTurn(ctx, r, offered)
	if c.vectors {
		c.checkVectors(ctx, r, caps)
	}
	c.checkErrorMapping(ctx, h, r)
	return c.failed == 0
}

// checkTurn builds the user message, makes one model call and checks the
// outcome and its deferred tool calls.
func (c *pluginCheck) checkTurn(ctx context.Context, r pluginapi.Runner, offered []string) {
	a := c.agent
	bctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
	um, err := r.BuildUserMessage(bctx, &pluginapi.BuildUserMessageRequest{Agent: a.Name, Text: c.message})
	cancel()
	if err != nil {
		c.fail("build_user_message", "return the user message as a FrameworkMessage with role user", "%v", err)
		c.skip("run_model_step", "needs the user message")
		return
	}
	c.pass("build_user_message", "role %s, %d bytes of framework item", um.Message.Role, len(um.Message.Item))

	w := &checkEvents{}
	turn := pluginapi.TurnContext{
		Agent: a.Name, SessionID: "plugin-check-" + randomHex(6), TurnID: "turn-1", Attempt: 1,
		Messages: []pluginapi.Message{{Sequence: 1, Role: um.Message.Role, Text: um.Message.Text, Item: um.Message.Item, TurnID: "turn-1"}},
		Policies: daemon.PolicySet(a),
	}
	mctx, cancel := context.WithTimeout(ctx, modelCheckTimeout)
	start := time.Now()
	resp, err := r.RunModelStep(mctx, &pluginapi.RunModelStepRequest{Turn: turn, Events: w})
	cancel()
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		fix := "answer with exactly one outcome; map provider errors to retryable (or pluginapi.Permanent) errors"
		if errors.Is(err, context.DeadlineExceeded) {
			fix = "the model call took over " + modelCheckTimeout.String() + ": check the provider's endpoint and key, and that RunModelStep returns"
		}
		c.fail("run_model_step", fix, "after %s: %v", took, err)
		return
	}
	switch {
	case resp.TurnCompleted != nil:
		tc := resp.TurnCompleted
		c.pass("run_model_step", "turn completed in %s: %d message(s), usage %d in / %d out in %d model call(s)%s",
			took, len(tc.NewMessages), tc.Usage.InputTokens, tc.Usage.OutputTokens, tc.Usage.ModelCalls, metadataOf(tc.Metadata))
		c.skip("tool_deferral", "the model answered without a tool call; pass a --message that makes it call one")
	case resp.ToolCallsRequested != nil:
		req := resp.ToolCallsRequested
		var names []string
		for _, tc := range req.ToolCalls {
			names = append(names, tc.ToolName)
		}
		c.pass("run_model_step", "asked for %d tool call(s) in %s: %s%s", len(req.ToolCalls), took, strings.Join(names, ", "), metadataOf(req.Metadata))
		c.checkDeferral(req, offered)
		if c.runReadTools {
			c.checkReadTools(ctx, r, turn, req)
		} else {
			c.skip("read_tools", "pass --run-read-tools to run the deferred read tools and the model call after them")
		}
	}
	if w.invalid > 0 {
		c.fail("events", "write standard events with their fields, and custom ones with an adapter prefix (pluginapi.CheckEvent)", "%d of %d event(s) refused: %s", w.invalid, w.count, w.firstErr)
	} else {
		c.pass("events", "%d event(s) written during the call, every one valid", w.count)
	}
}

// checkDeferral checks the tool calls a model call deferred to the session.
func (c *pluginCheck) checkDeferral(req *pluginapi.ToolCallsRequested, offered []string) {
	seen := map[string]bool{}
	var problems []string
	for i, tc := range req.ToolCalls {
		switch {
		case tc.ToolCallID == "":
			problems = append(problems, fmt.Sprintf("call %d has no tool_call_id", i))
		case seen[tc.ToolCallID]:
			problems = append(problems, fmt.Sprintf("tool_call_id %q is used twice", tc.ToolCallID))
		}
		seen[tc.ToolCallID] = true
		if len(offered) > 0 && !slices.Contains(offered, tc.ToolName) {
			problems = append(problems, fmt.Sprintf("call %s names tool %q, which Configure did not offer", tc.ToolCallID, tc.ToolName))
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil || args == nil {
			problems = append(problems, fmt.Sprintf("call %s has arguments that are not a JSON object: %.80q", tc.ToolCallID, tc.Arguments))
		}
	}
	if req.RunState == "" {
		problems = append(problems, "no run state: the next model call cannot resume the turn")
	}
	if len(problems) > 0 {
		c.fail("tool_deferral", "defer every call with a unique ID, an offered tool and JSON-object arguments, and return the run state that resumes the turn", "%s", strings.Join(problems, "; "))
		return
	}
	c.pass("tool_deferral", "%d call(s) deferred with unique IDs, offered tools and JSON arguments, and a %d-byte run state; none was run", len(req.ToolCalls), len(req.RunState))
}

// checkErrorMapping calls a tool the runner does not offer: the answer
// must be a tool error (the model sees it) or a permanent error, and the
// plugin must stay up.
func (c *pluginCheck) checkErrorMapping(ctx context.Context, h *runnerhost.Host, r pluginapi.Runner) {
	a := c.agent
	tctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
	resp, err := r.ExecuteDeferredToolCall(tctx, &pluginapi.ExecuteToolRequest{
		Agent: a.Name, SessionID: "plugin-check", TurnID: "turn-1", Attempt: 1, IdempotencyKey: "plugin-check/turn-1/unknown",
		ToolCall: pluginapi.ToolCall{ToolCallID: "unknown", ToolName: checkToolName, Arguments: "{}", Effect: pluginapi.EffectRead, Status: pluginapi.ToolCallApproved},
		Events:   &checkEvents{},
	})
	cancel()
	var toolErr *pluginapi.ToolExecutionError
	switch {
	case errors.As(err, &toolErr):
		c.pass("error_mapping", "an unknown tool is a tool error the model sees: %q", toolErr.Message)
	case err == nil && resp == nil:
		c.fail("error_mapping", "answer with exactly one outcome", "the runner answered nothing")
	case errors.Is(err, context.DeadlineExceeded):
		c.fail("error_mapping", "answer a call of an unknown tool at once, with a ToolExecutionError", "no answer within %s", pluginCheckTimeout)
	case err != nil && errors.Is(err, runnerhost.ErrPluginShutdown):
		c.fail("error_mapping", "return an error for an unknown tool instead of crashing", "the plugin went away: %v", err)
	case err != nil:
		c.pass("error_mapping", "an unknown tool fails the call: %v", err)
	case resp != nil && resp.Error != nil:
		c.pass("error_mapping", "an unknown tool is a tool error the model sees: %q", resp.Error.Message)
	case resp != nil && resp.Result != nil:
		c.fail("error_mapping", "answer a call of a tool you do not offer with a ToolExecutionError, never a result", "the runner returned a result for tool %s", checkToolName)
	default:
		c.fail("error_mapping", "answer a call of an unknown tool with a ToolExecutionError", "the runner answered %+v", resp)
	}
	pctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
	defer cancel()
	if err := h.Ping(pctx, a.Runner); err != nil {
		c.fail("alive", "keep serving after a failed call", "the plugin does not answer its health check: %v", err)
		return
	}
	c.pass("alive", "the plugin answers its health check after the checks")
}

func metadataOf(md *pluginapi.ModelCallMetadata) string {
	if md == nil {
		return "; no ModelCallMetadata (the chat span is named chat, without the model)"
	}
	return fmt.Sprintf("; model %q from %q", cmp.Or(md.ResponseModel, md.RequestModel), md.ProviderName)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "(none reported)"
	}
	return strings.Join(s, ", ")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// checkEvents is the checked call's event writer: it counts the events
// and checks each as the worker would.
type checkEvents struct {
	mu              sync.Mutex
	count, invalid  int
	firstErr        string
	checkpointBytes int
}

func (w *checkEvents) note(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.count++
	if err != nil {
		w.invalid++
		if w.firstErr == "" {
			w.firstErr = err.Error()
		}
	}
}

func (w *checkEvents) WriteTextDelta(string)      { w.note(nil) }
func (w *checkEvents) WriteReasoningDelta(string) { w.note(nil) }
func (w *checkEvents) Heartbeat()                 {}
func (w *checkEvents) SaveHeartbeatCheckpoint(s string) {
	w.mu.Lock()
	w.checkpointBytes = len(s)
	w.mu.Unlock()
}

func (w *checkEvents) WriteEvent(eventType string, payload any) error {
	b, err := json.Marshal(payload)
	if err == nil {
		err = pluginapi.CheckEvent(eventType, b)
	}
	w.note(err)
	return err
}

// checkReadTools runs the deferred calls whose policy (the agent's
// tool_policies first, as the worker applies them) is a read that needs no
// approval, rejects the others without running them, and makes the model
// call that takes the records: the turn must go on with one valid outcome.
func (c *pluginCheck) checkReadTools(ctx context.Context, r pluginapi.Runner, turn pluginapi.TurnContext, req *pluginapi.ToolCallsRequested) {
	a := c.agent
	policies := daemon.PolicySet(a)
	var ran, rejected []string
	var records []pluginapi.ToolCall
	for i, call := range req.ToolCalls {
		policy := call.Policy
		if p, ok := policies.Policies[call.ToolName]; ok {
			policy = p
		}
		rec := pluginapi.ToolCall{
			ToolCallID: call.ToolCallID, ToolName: call.ToolName, Arguments: call.Arguments, Effect: policy.Effect,
			RequiresApproval: policy.ApprovalRequired(), DeferralOrder: i, ToolSourceReference: call.ToolSourceReference,
		}
		if policy.Effect != pluginapi.EffectRead || policy.ApprovalRequired() {
			rec.Status, rec.RejectionMessage = pluginapi.ToolCallRejected, "plugin check runs only reads that need no approval"
			rejected = append(rejected, call.ToolName)
			records = append(records, rec)
			continue
		}
		rec.Status = pluginapi.ToolCallApproved
		tctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
		resp, err := r.ExecuteDeferredToolCall(tctx, &pluginapi.ExecuteToolRequest{
			Agent: a.Name, SessionID: turn.SessionID, TurnID: turn.TurnID, ToolCall: rec, Attempt: 1,
			IdempotencyKey: turn.SessionID + "/" + turn.TurnID + "/" + call.ToolCallID, Events: &checkEvents{},
		})
		cancel()
		var toolErr *pluginapi.ToolExecutionError
		switch {
		case errors.As(err, &toolErr):
			rec.Status, rec.Error = pluginapi.ToolCallFailed, toolErr.Message
		case errors.Is(err, context.DeadlineExceeded):
			c.fail("read_tools", "return from ExecuteDeferredToolCall: a read tool must not hang", "%s (%s) did not answer within %s", call.ToolName, call.ToolCallID, pluginCheckTimeout)
			return
		case err != nil:
			c.fail("read_tools", "answer a tool failure the model should see with a ToolExecutionError; fail the call only when it must be retried", "%s (%s) failed the call: %v", call.ToolName, call.ToolCallID, err)
			return
		case resp.Result != nil:
			rec.Status, rec.Output = pluginapi.ToolCallSucceeded, resp.Result.Output
		case resp.Error != nil:
			rec.Status, rec.Error = pluginapi.ToolCallFailed, resp.Error.Message
		default:
			c.fail("read_tools", "answer a read with a result or an error; a question or a task needs a person or a poll, which plugin check does not do", "%s (%s) answered %+v", call.ToolName, call.ToolCallID, resp)
			return
		}
		ran = append(ran, fmt.Sprintf("%s: %s", call.ToolName, rec.Status))
		records = append(records, rec)
	}
	if len(ran) == 0 {
		c.skip("read_tools", "no deferred call is a read without approval (%s by policy)", strings.Join(rejected, ", "))
		return
	}
	c.pass("read_tools", "ran %s%s", strings.Join(ran, ", "), map[bool]string{true: "; rejected without running: " + strings.Join(rejected, ", "), false: ""}[len(rejected) > 0])

	// The model call that takes the records, as the session makes it.
	next := turn
	next.Messages = append([]pluginapi.Message(nil), turn.Messages...)
	for _, m := range req.NewMessages {
		next.Messages = append(next.Messages, pluginapi.Message{Sequence: int64(len(next.Messages) + 1), Role: m.Role, Text: m.Text, Item: m.Item,
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, TurnID: turn.TurnID, ToolStatus: m.ToolStatus})
	}
	next.RunState, next.ToolCalls = req.RunState, records
	w := &checkEvents{}
	mctx, cancel := context.WithTimeout(ctx, modelCheckTimeout)
	start := time.Now()
	resp, err := r.RunModelStep(mctx, &pluginapi.RunModelStepRequest{Turn: next, Events: w})
	cancel()
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case err != nil:
		c.fail("follow_up", "resume the turn from RunState and the final records in TurnContext.ToolCalls (each record's Output, Error or RejectionMessage is what the model sees)", "after %s: %v", took, err)
	case w.invalid > 0:
		c.fail("follow_up", "write standard events with their fields, and custom ones with an adapter prefix (pluginapi.CheckEvent)", "%d of %d event(s) refused: %s", w.invalid, w.count, w.firstErr)
	case resp.TurnCompleted != nil:
		c.pass("follow_up", "the model call after the tools completed the turn in %s: %d message(s)", took, len(resp.TurnCompleted.NewMessages))
	default:
		c.pass("follow_up", "the model call after the tools asked for %d more tool call(s) in %s", len(resp.ToolCallsRequested.ToolCalls), took)
	}
}
