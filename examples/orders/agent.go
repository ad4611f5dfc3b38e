package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise/model"
)

// Config is the orders agent's runner_config.
type Config struct {
	// StorePath is the JSON file of orders; it is created with demo orders.
	StorePath string `json:"store_path"`
	// Instructions override the default instructions. The demo's scripted
	// model follows one: "without looking orders up" refunds at once.
	Instructions string `json:"instructions,omitempty"`
	// MaxModelCallsPerTurn overrides the limit of model calls per turn.
	MaxModelCallsPerTurn int `json:"max_model_calls_per_turn,omitempty"`
	// Model, when set, is the model that drives the agent instead of the
	// demo script, with the same tools:
	//
	//	model: {provider: openai, name: gpt-5-mini, api_key_env: OPENAI_API_KEY}
	//
	// Providers: openai, openai-chat, openai-compatible (with api_base),
	// anthropic, and scripted (the demo script). See
	// plugins/stepwise/model.Config for api_base, request_options and
	// settings. The key comes from the variable api_key_env names, which the
	// worker config must list under plugins.<name>.env.
	Model *model.Config `json:"model,omitempty"`
}

const defaultInstructions = "You help customers of {{.Agent}} with their orders: look orders up, refund them, and request return labels when asked. " +
	"Look an order up before you refund it. Refund the whole remaining amount unless the customer names one (amount_cents is in cents). " +
	"When the customer does not say which order, ask with ask_user if you have it. " +
	"After a refund, tell the customer what was refunded. " +
	"When you are offered delegate_to_returns, hand return labels to the returns agent with it: give it the order in the task. " +
	"To refund several orders, keep a plan with write_todos when you have it: one task per order, marked in_progress while you work on it and completed when it is done."

// demoModelName is the model name of the demo script.
const demoModelName = "orders-demo-script"

type lookupArgs struct {
	OrderID string `json:"order_id" description:"The order's ID, such as \"7\"."`
}

type labelArgs struct {
	OrderID string `json:"order_id" description:"The order's ID."`
}

type refundArgs struct {
	OrderID     string `json:"order_id" description:"The order's ID."`
	AmountCents int64  `json:"amount_cents,omitempty" description:"Cents to refund; the whole remaining amount when omitted."`
}

func buildAgent(ctx context.Context, agent string, raw json.RawMessage) (*stepwise.AgentDefinition, error) {
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("orders runner_config: %w", err)
	}
	store, err := OpenStore(cfg.StorePath)
	if err != nil {
		return nil, fmt.Errorf("orders runner_config: %w", err)
	}
	lookup, err := stepwise.FunctionTool("lookup_order", "Look up an order by its ID.",
		func(ctx context.Context, tc stepwise.ToolCallContext, a lookupArgs) (Order, error) {
			o, err := store.Get(a.OrderID)
			if errors.Is(err, ErrNoOrder) {
				return Order{}, &pluginapi.ToolExecutionError{Message: err.Error()}
			}
			return o, err
		}, stepwise.WithEffect(pluginapi.EffectRead))
	if err != nil {
		return nil, err
	}
	refund, err := stepwise.FunctionTool("refund_order", "Refund an order, in whole or in part.",
		func(ctx context.Context, tc stepwise.ToolCallContext, a refundArgs) (string, error) {
			o, r, err := store.Refund(a.OrderID, a.AmountCents, tc.IdempotencyKey)
			if err != nil {
				return "", &pluginapi.ToolExecutionError{Message: err.Error()}
			}
			return fmt.Sprintf("Refunded %s of order %s (%s); order status: %s.", dollars(r.AmountCents), o.ID, o.Item, o.Status), nil
		}, stepwise.WithEffect(pluginapi.EffectNonIdempotentWrite), stepwise.RequiresApproval(true))
	if err != nil {
		return nil, err
	}
	// request_return_label is a tool task: the carrier prints the label
	// after a few polls, and no Step waits while it does.
	label, err := stepwise.FunctionTool("request_return_label", "Request a return label for an order; it is ready after the carrier prints it.",
		func(ctx context.Context, tc stepwise.ToolCallContext, a labelArgs) (string, error) {
			if !tc.SupportsToolTasks {
				return "", &pluginapi.ToolExecutionError{Message: "return labels need a worker that polls tool tasks"}
			}
			if tc.Checkpoint != "" { // an earlier attempt requested it
				return "", &pluginapi.ToolTaskStarted{TaskID: tc.Checkpoint, PollIntervalSeconds: 1}
			}
			l, err := store.RequestLabel(a.OrderID, tc.IdempotencyKey)
			if errors.Is(err, ErrNoOrder) {
				return "", &pluginapi.ToolExecutionError{Message: err.Error()}
			}
			if err != nil {
				return "", err
			}
			if tc.Events != nil {
				tc.Events.SaveHeartbeatCheckpoint(l.ID)
			}
			return "", &pluginapi.ToolTaskStarted{TaskID: l.ID, PollIntervalSeconds: 1}
		}, stepwise.WithEffect(pluginapi.EffectIdempotentWrite),
		stepwise.WithTaskPoll(func(ctx context.Context, p stepwise.TaskPoll) (*pluginapi.ExecuteToolResponse, error) {
			l, err := store.PollLabel(p.TaskID)
			if err != nil {
				return nil, err
			}
			if l.Status != "ready" {
				return &pluginapi.ExecuteToolResponse{TaskPending: &pluginapi.ToolTaskPending{PollIntervalSeconds: 1}}, nil
			}
			return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: fmt.Sprintf("Return label %s for order %s is ready.", l.Code, l.OrderID)}}, nil
		}),
		// Stop (cancel_turn) while the carrier prints: the label is
		// cancelled, so it is never printed for nothing.
		stepwise.WithTaskCancel(func(ctx context.Context, c stepwise.TaskCancel) error {
			_, err := store.CancelLabel(c.TaskID)
			return err
		}))
	if err != nil {
		return nil, err
	}
	instructions := cfg.Instructions
	if instructions == "" {
		instructions = defaultInstructions
	}
	def := &stepwise.AgentDefinition{
		Name:                 agent,
		Instructions:         instructions,
		Model:                stepwise.NewScriptedModelClient(demoScript(store)),
		ModelName:            demoModelName,
		Tools:                []*stepwise.Tool{lookup, refund, label},
		MaxModelCallsPerTurn: cfg.MaxModelCallsPerTurn,
	}
	if m := cfg.Model; m != nil && m.Provider != model.ProviderScripted {
		client, err := model.New(*m, os.Getenv)
		if err != nil {
			return nil, fmt.Errorf("orders runner_config: %w", err)
		}
		def.Model, def.ModelName, def.ModelSettings = client, m.Name, m.Settings
	}
	return def, nil
}

var (
	refundRe = regexp.MustCompile(`(?i)\brefund\s+order\s+#?(\w+)`)
	returnRe = regexp.MustCompile(`(?i)\breturn\s+(?:label\s+for\s+)?order\s+#?(\w+)`)
	// "delegate the return of order 5" hands the return to the returns
	// sub-agent, when the session offers it (configs/dev.yaml does).
	delegateRe = regexp.MustCompile(`(?i)\bdelegate\s+(?:the\s+)?return\s+(?:of\s+)?order\s+#?(\w+)`)
	lookupRe   = regexp.MustCompile(`(?i)\b(?:look\s*up|find|show|check)\s+order\s+#?(\w+)`)
	// With configs/mcp.yaml, the memory MCP server's tools are offered:
	// "note order 7 is a gift" stores a note, "what do you remember"
	// reads every note back.
	noteRe   = regexp.MustCompile(`(?i)\bnote\s+(?:that\s+)?order\s+#?(\w+)\s+(.+)$`)
	recallRe = regexp.MustCompile(`(?i)\bwhat\s+do\s+you\s+remember\b`)
)

// skipLookupRe is the one instruction the demo model follows: with
// instructions that say to refund "without looking orders up" (say, in an
// eval of a changed prompt), it refunds at once, the whole amount left.
var skipLookupRe = regexp.MustCompile(`(?i)\bwithout\s+looking\s+(?:the\s+)?orders?\s+up\b`)

var (
	refundAnyRe = regexp.MustCompile(`(?i)\brefund\b`)
	answerRe    = regexp.MustCompile(`(?i)\border\s+#?(\w+)`)
)

// whichOrder is the question the demo asks when a refund names no order.
const whichOrder = "Which order should I refund?"

// demoScript is the demo model: a deterministic function of the request.
// "refund order <n>" looks the order up, asks to refund it, then reports.
// "refund" without an order asks which one (with ask_user, when the
// session offers it), with the orders that have money left as choices.
// "refund orders 3 and 7" works by a plan (see planScript).
func demoScript(store *Store) func(context.Context, *stepwise.ModelRequest) (stepwise.ScriptedReply, error) {
	return func(ctx context.Context, req *stepwise.ModelRequest) (stepwise.ScriptedReply, error) {
		texts := stepwise.UserTexts(req)
		if len(texts) == 0 {
			return stepwise.ScriptedReply{Text: "Hello! How can I help with your orders?"}, nil
		}
		text := texts[len(texts)-1]
		results := stepwise.ToolResults(req)
		if reply, ok := planScript(req, texts, results); ok {
			return reply, nil
		}
		if m := refundRe.FindStringSubmatch(text); m != nil {
			if skipLookupRe.MatchString(req.Instructions) {
				return refundUnlookedScript(m[1], results), nil
			}
			return refundScript(m[1], results), nil
		}
		if m := delegateRe.FindStringSubmatch(text); m != nil {
			return delegateScript(req, m[1], results), nil
		}
		if m := returnRe.FindStringSubmatch(text); m != nil {
			return returnScript(m[1], results), nil
		}
		if m := lookupRe.FindStringSubmatch(text); m != nil {
			if len(results) == 0 {
				return call("lookup_order", lookupArgs{OrderID: m[1]}), nil
			}
			return stepwise.ScriptedReply{Text: describeLookup(m[1], results[0])}, nil
		}
		if refundAnyRe.MatchString(text) {
			return askWhichOrder(store, req, results)
		}
		if m := noteRe.FindStringSubmatch(text); m != nil {
			return memoryScript(req, results, memoryCreate, map[string]any{"entities": []map[string]any{
				{"name": "order " + m[1], "entityType": "order", "observations": []string{strings.TrimSpace(m[2])}},
			}}), nil
		}
		if recallRe.MatchString(text) {
			return memoryScript(req, results, memoryRead, map[string]any{}), nil
		}
		return stepwise.ScriptedReply{Text: `I can look up and refund orders, and get return labels. Try "look up order 3", "refund order 7", "refund my order", "return order 5", or in plan mode "refund orders 3 and 7". With configs/mcp.yaml I also keep notes with the memory MCP server: "note order 7 is a gift", "what do you remember".`}, nil
	}
}

// askWhichOrder asks which order to refund, then refunds the one chosen.
func askWhichOrder(store *Store, req *stepwise.ModelRequest, results []stepwise.ToolResult) (stepwise.ScriptedReply, error) {
	if len(results) == 0 {
		offered := slices.ContainsFunc(req.Tools, func(t pluginapi.ToolDefinition) bool { return t.Name == "ask_user" })
		if !offered {
			return stepwise.ScriptedReply{Text: `Which order should I refund? Say "refund order 7", for example.`}, nil
		}
		choices, err := refundableOrders(store)
		if err != nil {
			return stepwise.ScriptedReply{}, err
		}
		if len(choices) == 0 {
			return stepwise.ScriptedReply{Text: "Every order is already fully refunded."}, nil
		}
		return call("ask_user", map[string]any{"question": whichOrder, "choices": choices}), nil
	}
	asked := results[0]
	var answer struct {
		Answer string `json:"answer"`
	}
	if asked.Status != string(pluginapi.ToolCallSucceeded) || json.Unmarshal([]byte(asked.Output), &answer) != nil {
		return stepwise.ScriptedReply{Text: "OK, I will not refund anything. (" + asked.Output + ")"}, nil
	}
	m := answerRe.FindStringSubmatch(answer.Answer)
	if m == nil {
		return stepwise.ScriptedReply{Text: "I could not tell which order you meant by " + strconv.Quote(answer.Answer) + `. Say "refund order 7", for example.`}, nil
	}
	return refundScript(m[1], results[1:]), nil
}

// refundableOrders are the choices of the demo's question: each order
// with money left to refund.
func refundableOrders(store *Store) ([]string, error) {
	ids, err := store.IDs()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		o, err := store.Get(id)
		if err != nil {
			return nil, err
		}
		if left := o.TotalCents - o.RefundedCents; left > 0 {
			out = append(out, fmt.Sprintf("order %s: %s (%s left)", o.ID, o.Item, dollars(left)))
		}
	}
	return out, nil
}

func refundScript(id string, results []stepwise.ToolResult) stepwise.ScriptedReply {
	switch {
	case len(results) == 0:
		return call("lookup_order", lookupArgs{OrderID: id})
	case len(results) == 1:
		lookup := results[0]
		if lookup.Status != string(pluginapi.ToolCallSucceeded) {
			return stepwise.ScriptedReply{Text: describeLookup(id, lookup)}
		}
		var o Order
		if err := json.Unmarshal([]byte(lookup.Output), &o); err != nil {
			return stepwise.ScriptedReply{Text: "I could not read order " + id + "."}
		}
		remaining := o.TotalCents - o.RefundedCents
		if remaining <= 0 {
			return stepwise.ScriptedReply{Text: fmt.Sprintf("Order %s (%s) is already fully refunded.", o.ID, o.Item)}
		}
		return stepwise.ScriptedReply{
			Text:      fmt.Sprintf("Order %s (%s) has %s left to refund. I'll ask to refund it.", o.ID, o.Item, dollars(remaining)),
			ToolCalls: []stepwise.ScriptedToolCall{{Name: "refund_order", Arguments: refundArgs{OrderID: o.ID, AmountCents: remaining}}},
		}
	default:
		r := results[len(results)-1]
		switch pluginapi.ToolCallStatus(r.Status) {
		case pluginapi.ToolCallSucceeded:
			return stepwise.ScriptedReply{Text: "Done. " + r.Output}
		case pluginapi.ToolCallRejected:
			return stepwise.ScriptedReply{Text: "OK, I did not refund order " + id + ". (" + r.Output + ")"}
		default:
			return stepwise.ScriptedReply{Text: "The refund of order " + id + " did not go through: " + r.Output}
		}
	}
}

// refundUnlookedScript asks to refund the whole amount left of an order
// without looking it up first, then reports.
func refundUnlookedScript(id string, results []stepwise.ToolResult) stepwise.ScriptedReply {
	if len(results) == 0 {
		return stepwise.ScriptedReply{
			Text:      "I'll ask to refund what is left of order " + id + ".",
			ToolCalls: []stepwise.ScriptedToolCall{{Name: "refund_order", Arguments: refundArgs{OrderID: id}}},
		}
	}
	return refundScript(id, append([]stepwise.ToolResult{{Status: string(pluginapi.ToolCallSucceeded)}}, results...))
}

// returnScript looks the order up, requests its return label (a tool
// task the session polls), and reports the label.
func returnScript(id string, results []stepwise.ToolResult) stepwise.ScriptedReply {
	switch {
	case len(results) == 0:
		return call("lookup_order", lookupArgs{OrderID: id})
	case len(results) == 1:
		if results[0].Status != string(pluginapi.ToolCallSucceeded) {
			return stepwise.ScriptedReply{Text: describeLookup(id, results[0])}
		}
		return stepwise.ScriptedReply{
			Text:      "I'll request a return label for order " + id + "; the carrier prints it in a moment.",
			ToolCalls: []stepwise.ScriptedToolCall{{Name: "request_return_label", Arguments: labelArgs{OrderID: id}}},
		}
	default:
		r := results[len(results)-1]
		if r.Status != string(pluginapi.ToolCallSucceeded) {
			return stepwise.ScriptedReply{Text: "The return label for order " + id + " did not come through: " + r.Output}
		}
		return stepwise.ScriptedReply{Text: r.Output}
	}
}

// delegateTool is the returns sub-agent's tool, as the worker offers it.
const delegateTool = "delegate_to_returns"

// delegateScript hands an order's return to the returns sub-agent and
// reports its answer.
func delegateScript(req *stepwise.ModelRequest, id string, results []stepwise.ToolResult) stepwise.ScriptedReply {
	if len(results) == 0 {
		if !slices.ContainsFunc(req.Tools, func(t pluginapi.ToolDefinition) bool { return t.Name == delegateTool }) {
			return stepwise.ScriptedReply{Text: `I have no returns agent to hand this to here. Say "return order ` + id + `" and I will do it myself.`}
		}
		return stepwise.ScriptedReply{
			Text:      "I'll hand the return of order " + id + " to the returns agent.",
			ToolCalls: []stepwise.ScriptedToolCall{{Name: delegateTool, Arguments: map[string]string{"task": "Return order " + id + ": look it up and request its return label."}}},
		}
	}
	r := results[len(results)-1]
	var out struct {
		Answer string `json:"answer"`
	}
	if r.Status != string(pluginapi.ToolCallSucceeded) || json.Unmarshal([]byte(r.Output), &out) != nil {
		return stepwise.ScriptedReply{Text: "The returns agent did not finish the return of order " + id + ": " + r.Output}
	}
	return stepwise.ScriptedReply{Text: "The returns agent says: " + out.Answer}
}

func describeLookup(id string, r stepwise.ToolResult) string {
	if r.Status != string(pluginapi.ToolCallSucceeded) {
		return "I could not look up order " + id + ": " + r.Output
	}
	var o Order
	if err := json.Unmarshal([]byte(r.Output), &o); err != nil {
		return "Order " + id + ": " + r.Output
	}
	return fmt.Sprintf("Order %s: %s for %s, %s, %s refunded.", o.ID, o.Item, o.Customer, o.Status, dollars(o.RefundedCents))
}

// The memory MCP server's tools, as the worker offers them (the server
// is named memory in configs/mcp.yaml).
const (
	memoryCreate = "memory__create_entities"
	memoryRead   = "memory__read_graph"
)

// memoryScript calls one tool of the memory MCP server, when the worker
// offers it, and reports its result.
func memoryScript(req *stepwise.ModelRequest, results []stepwise.ToolResult, tool string, args any) stepwise.ScriptedReply {
	if len(results) == 0 {
		if !slices.ContainsFunc(req.Tools, func(t pluginapi.ToolDefinition) bool { return t.Name == tool }) {
			return stepwise.ScriptedReply{Text: "I have no memory tools here. Run the demo with configs/mcp.yaml, which gives me the memory MCP server."}
		}
		return call(tool, args)
	}
	r := results[len(results)-1]
	switch {
	case r.Status != string(pluginapi.ToolCallSucceeded):
		return stepwise.ScriptedReply{Text: "The memory server did not do it (" + r.Status + "): " + r.Output}
	case tool == memoryCreate:
		return stepwise.ScriptedReply{Text: "Noted."}
	}
	var graph struct {
		Entities []struct {
			Name         string   `json:"name"`
			Observations []string `json:"observations"`
		} `json:"entities"`
	}
	if err := json.Unmarshal([]byte(r.Output), &graph); err != nil || len(graph.Entities) == 0 {
		return stepwise.ScriptedReply{Text: "I remember nothing yet."}
	}
	var lines []string
	for _, e := range graph.Entities {
		lines = append(lines, e.Name+": "+strings.Join(e.Observations, "; "))
	}
	return stepwise.ScriptedReply{Text: "I remember:\n" + strings.Join(lines, "\n")}
}

func call(name string, args any) stepwise.ScriptedReply {
	return stepwise.ScriptedReply{ToolCalls: []stepwise.ScriptedToolCall{{Name: name, Arguments: args}}}
}

func dollars(cents int64) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }
