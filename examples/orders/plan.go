package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// Plans in the demo script. In plan mode, "refund orders 3 and 7" drafts a
// plan with write_todos, one task per order; feedback such as "also order
// 5" revises the draft. The turn that executes the approved plan works
// through the tasks in order: it marks one in progress, looks its order up,
// refunds it (each refund waits for approval, as always), marks it
// completed, and so on. Outside plan mode, with write_todos offered, the
// same message writes the plan and executes it at once.

var (
	// refundManyRe is a refund of several orders: "refund orders 3 and 7".
	refundManyRe = regexp.MustCompile(`(?i)\brefund\s+orders\b`)
	// orderIDsRe finds the orders a planning message names: "orders 3
	// and 7", "order 5", "3, 5 and 7" after "orders".
	orderIDsRe = regexp.MustCompile(`(?i)\borders?\s+((?:#?\d+(?:\s*(?:,|and|&|\+)\s*)?)+)`)
	digitsRe   = regexp.MustCompile(`\d+`)
	addRe      = regexp.MustCompile(`(?i)\b(?:also|add|plus)\b`)
	// planHeaderRe and planTaskRe read the plan note Stepwise shows the
	// model (stepwise.PlanNoteHeader, then one line per task).
	planHeaderRe = regexp.MustCompile(`^\[Dex\] The current plan \(revision (\d+), (\w+)\):$`)
	planTaskRe   = regexp.MustCompile(`^\d+\. \[(\w+)\] (.*)$`)
	taskOrderRe  = regexp.MustCompile(`(?i)^refund order #?(\w+)$`)
)

// approvedPlanPrefix starts the user message of an executing turn (the
// session's "[Dex] The user approved plan revision <n>. ...").
const approvedPlanPrefix = "[Dex] The user approved plan revision "

const writeTodos = "write_todos"

type todo struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

type todosArgs struct {
	Todos []todo `json:"todos"`
}

// shownPlan is the plan the model sees in its plan note, if any.
type shownPlan struct {
	revision int
	status   string
	tasks    []todo
}

// readPlanNote finds the plan note among the request's user texts.
func readPlanNote(texts []string) *shownPlan {
	for i := len(texts) - 1; i >= 0; i-- {
		lines := strings.Split(texts[i], "\n")
		for j, l := range lines {
			m := planHeaderRe.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			rev, _ := strconv.Atoi(m[1])
			p := &shownPlan{revision: rev, status: m[2]}
			for _, t := range lines[j+1:] {
				tm := planTaskRe.FindStringSubmatch(t)
				if tm == nil {
					break
				}
				p.tasks = append(p.tasks, todo{Content: tm[2], Status: tm[1]})
			}
			return p
		}
	}
	return nil
}

// namedOrders are the order IDs a message names, in order, once each.
func namedOrders(text string) []string {
	var ids []string
	for _, m := range orderIDsRe.FindAllStringSubmatch(text, -1) {
		for _, id := range digitsRe.FindAllString(m[1], -1) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func refundTask(id string) todo { return todo{Content: "Refund order " + id, Status: "pending"} }

func offers(req *stepwise.ModelRequest, name string) bool {
	return slices.ContainsFunc(req.Tools, func(t pluginapi.ToolDefinition) bool { return t.Name == name })
}

// planning reports a planning turn: the session offers write_todos alone.
func planning(req *stepwise.ModelRequest) bool {
	return offers(req, writeTodos) && !offers(req, "lookup_order")
}

// planScript answers a planning turn, an executing turn, and a refund of
// several orders; ok is false for any other request.
func planScript(req *stepwise.ModelRequest, texts []string, results []stepwise.ToolResult) (reply stepwise.ScriptedReply, ok bool) {
	text := texts[len(texts)-1]
	switch {
	case planning(req):
		return draftPlan(text, readPlanNote(texts[:len(texts)-1]), results), true
	case strings.HasPrefix(text, approvedPlanPrefix):
		return executePlan(readPlanNote(texts), results), true
	case refundManyRe.MatchString(text) && len(namedOrders(text)) > 0:
		if !offers(req, writeTodos) {
			return stepwise.ScriptedReply{Text: `I refund several orders by a plan, and this session has no write_todos. Refund them one at a time: say "refund order ` + namedOrders(text)[0] + `".`}, true
		}
		if len(results) == 0 {
			tasks := make([]todo, 0, len(namedOrders(text)))
			for _, id := range namedOrders(text) {
				tasks = append(tasks, refundTask(id))
			}
			tasks[0].Status = "in_progress"
			return call(writeTodos, todosArgs{Todos: tasks}), true
		}
		return executePlan(readPlanNote(texts), results), true
	}
	return stepwise.ScriptedReply{}, false
}

// draftPlan writes the draft of a planning turn: a refund task per order
// the message names, after the draft's tasks when it says "also".
func draftPlan(text string, draft *shownPlan, results []stepwise.ToolResult) stepwise.ScriptedReply {
	if len(results) > 0 {
		r := results[len(results)-1]
		if r.Status != string(pluginapi.ToolCallSucceeded) {
			return stepwise.ScriptedReply{Text: "I could not write the plan: " + r.Output}
		}
		var out struct {
			Revision  int `json:"revision"`
			TaskCount int `json:"task_count"`
		}
		_ = json.Unmarshal([]byte(r.Output), &out)
		return stepwise.ScriptedReply{Text: fmt.Sprintf("Here is the plan (revision %d, %d tasks). Each refund asks for your approval. "+
			"Execute the plan to start, or tell me what to change.", out.Revision, out.TaskCount)}
	}
	ids := namedOrders(text)
	if len(ids) == 0 {
		return stepwise.ScriptedReply{Text: `Which orders should the plan refund? Say "refund orders 3 and 7", for example.`}
	}
	var tasks []todo
	if draft != nil && addRe.MatchString(text) {
		tasks = append(tasks, draft.tasks...)
	}
	for _, id := range ids {
		t := refundTask(id)
		if !slices.Contains(tasks, t) {
			tasks = append(tasks, t)
		}
	}
	return stepwise.ScriptedReply{
		Text:      fmt.Sprintf("I'll plan %d refunds, one task per order.", len(tasks)),
		ToolCalls: []stepwise.ScriptedToolCall{{Name: writeTodos, Arguments: todosArgs{Todos: tasks}}},
	}
}

// executePlan takes the next step of an approved plan. The plan note shows
// the latest task statuses, and the turn's last result says where the
// current task is: after write_todos its order is looked up, after the
// lookup it is refunded, after the refund it is marked completed and the
// next task in progress.
func executePlan(p *shownPlan, results []stepwise.ToolResult) stepwise.ScriptedReply {
	if p == nil || len(p.tasks) == 0 {
		return stepwise.ScriptedReply{Text: "There is no plan to execute."}
	}
	cur := slices.IndexFunc(p.tasks, func(t todo) bool { return t.Status == "in_progress" })
	if len(results) == 0 || results[len(results)-1].ToolName == writeTodos {
		if len(results) > 0 && results[len(results)-1].Status != string(pluginapi.ToolCallSucceeded) {
			return stepwise.ScriptedReply{Text: "I could not update the plan: " + results[len(results)-1].Output}
		}
		if cur < 0 {
			next := slices.IndexFunc(p.tasks, func(t todo) bool { return t.Status == "pending" })
			if next < 0 {
				return planDone(results)
			}
			return advance(p.tasks, -1, next, "")
		}
		id := orderOf(p.tasks[cur])
		if id == "" {
			return advance(p.tasks, cur, nextPending(p.tasks, cur), "I can only refund orders; I mark \""+p.tasks[cur].Content+"\" done.")
		}
		return call("lookup_order", lookupArgs{OrderID: id})
	}
	if cur < 0 {
		return stepwise.ScriptedReply{Text: "The plan has no task in progress."}
	}
	id := orderOf(p.tasks[cur])
	r := results[len(results)-1]
	switch r.ToolName {
	case "lookup_order":
		if r.Status != string(pluginapi.ToolCallSucceeded) {
			return advance(p.tasks, cur, nextPending(p.tasks, cur), describeLookup(id, r)+" I skip it.")
		}
		var o Order
		if err := json.Unmarshal([]byte(r.Output), &o); err != nil {
			return advance(p.tasks, cur, nextPending(p.tasks, cur), "I could not read order "+id+"; I skip it.")
		}
		remaining := o.TotalCents - o.RefundedCents
		if remaining <= 0 {
			return advance(p.tasks, cur, nextPending(p.tasks, cur), fmt.Sprintf("Order %s (%s) is already fully refunded.", o.ID, o.Item))
		}
		return stepwise.ScriptedReply{
			Text:      fmt.Sprintf("Order %s (%s) has %s left to refund. I'll ask to refund it.", o.ID, o.Item, dollars(remaining)),
			ToolCalls: []stepwise.ScriptedToolCall{{Name: "refund_order", Arguments: refundArgs{OrderID: o.ID, AmountCents: remaining}}},
		}
	case "refund_order":
		switch pluginapi.ToolCallStatus(r.Status) {
		case pluginapi.ToolCallSucceeded:
			return advance(p.tasks, cur, nextPending(p.tasks, cur), r.Output)
		case pluginapi.ToolCallRejected:
			return stepwise.ScriptedReply{Text: "OK, I did not refund order " + id + ". (" + r.Output + ") I stop the plan here; its other tasks stay open."}
		default:
			return stepwise.ScriptedReply{Text: "The refund of order " + id + " did not go through: " + r.Output + " I stop the plan here."}
		}
	}
	return stepwise.ScriptedReply{Text: "I did not expect " + r.ToolName + " while executing the plan."}
}

// advance writes the plan with task done (-1: none) completed and task
// next (-1: none) in progress, saying text.
func advance(tasks []todo, done, next int, text string) stepwise.ScriptedReply {
	out := slices.Clone(tasks)
	if done >= 0 {
		out[done].Status = "completed"
	}
	if next >= 0 {
		out[next].Status = "in_progress"
	}
	return stepwise.ScriptedReply{Text: text, ToolCalls: []stepwise.ScriptedToolCall{{Name: writeTodos, Arguments: todosArgs{Todos: out}}}}
}

func nextPending(tasks []todo, after int) int {
	for i := after + 1; i < len(tasks); i++ {
		if tasks[i].Status == "pending" {
			return i
		}
	}
	return slices.IndexFunc(tasks, func(t todo) bool { return t.Status == "pending" })
}

func orderOf(t todo) string {
	if m := taskOrderRe.FindStringSubmatch(t.Content); m != nil {
		return m[1]
	}
	return ""
}

// planDone reports the executed plan: what this turn refunded.
func planDone(results []stepwise.ToolResult) stepwise.ScriptedReply {
	var refunds []string
	for _, r := range results {
		if r.ToolName == "refund_order" && r.Status == string(pluginapi.ToolCallSucceeded) {
			refunds = append(refunds, r.Output)
		}
	}
	if len(refunds) == 0 {
		return stepwise.ScriptedReply{Text: "The plan is done; nothing needed a refund."}
	}
	return stepwise.ScriptedReply{Text: "The plan is done. " + strings.Join(refunds, " ")}
}
