package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/evals"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestEvalCaptureOfTheOrdersDemo captures real sessions of the orders demo
// (what make dev runs): a refund approved, a question answered, and a
// refund rejected with a message. The case holds each in order, with the
// calls' arguments and the results the model saw, and --query finds the
// session by its agent.
const evalSecret = "eval-secret-0123456789"

func TestEvalCaptureOfTheOrdersDemo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	work, env := demoWorkDir(t)
	// A secret the worker's config grants its plugin: capture redacts it
	// wherever it shows (here in a rejection's message).
	cfgPath := filepath.Join(work, "configs", "dev.yaml")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	granted := strings.Replace(string(b), "    command: ../bin/dex-runner-orders\n", "    command: ../bin/dex-runner-orders\n    env: [DEX_EVAL_SECRET]\n", 1)
	if granted == string(b) {
		t.Fatal("configs/dev.yaml has no orders plugin command to grant a variable to")
	}
	if err := os.WriteFile(cfgPath, []byte(granted), 0o644); err != nil {
		t.Fatal(err)
	}
	port := agenttest.FreePort(t)
	startDev(t, "./bin/dex-agent-worker", work, env, "--config", "configs/dev.yaml", "--data-dir", ".dex",
		"--temporal-port", fmt.Sprint(port), "--ui-port", "0", "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sessions := devSessions(t, ctx, port)
	id, err := sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersAgent", InitialMessage: "refund order 7"})
	if err != nil {
		t.Fatal(err)
	}
	pending := func(kind string) wire.Interrupt {
		t.Helper()
		return waitSnapshot(t, ctx, sessions, id, "a pending "+kind, func(s wire.Snapshot) bool {
			return len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].Kind == kind
		}).PendingInterrupts[0]
	}
	idle := func() {
		t.Helper()
		waitSnapshot(t, ctx, sessions, id, "the session idle", func(s wire.Snapshot) bool {
			return s.State != nil && s.State.Status == wire.StatusWaitingForUserMessage && len(s.PendingInterrupts) == 0 && s.QueuedCount == 0
		})
	}
	in := pending(wire.InterruptKindApproval)
	if ok, err := sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, Digest: in.Digest}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	idle()
	if ok, err := sessions.SendUserMessage(ctx, id, "refund my order"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	q := pending(wire.InterruptKindQuestion)
	if ok, err := sessions.AnswerQuestion(ctx, id, wire.AnswerQuestionRequest{InterruptID: q.InterruptID, Answer: q.Choices[0]}); err != nil || !ok {
		t.Fatalf("answer: %v %v", ok, err)
	}
	in = pending(wire.InterruptKindApproval)
	if ok, err := sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: false, RejectionMessage: "not today " + evalSecret, Digest: in.Digest}); err != nil || !ok {
		t.Fatalf("reject: %v %v", ok, err)
	}
	idle()

	capture := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("./bin/dex-agent-worker", append([]string{"eval", "capture", "--config", "configs/dev.yaml"}, args...)...)
		cmd.Dir, cmd.Env = work, append(env, fmt.Sprintf("DEX_TEMPORAL_ADDRESS=127.0.0.1:%d", port), "DEX_EVAL_SECRET="+evalSecret)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("eval capture %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := capture("--sessions", id, "--out", "cases")
	if !strings.Contains(out, id+": 2 user message(s), 5 tool call(s), 2 approval(s), 1 question(s), 2 turn(s) -> cases/"+id+".jsonl") {
		t.Fatalf("eval capture said:\n%s", out)
	}
	raw, err := os.ReadFile(filepath.Join(work, "cases", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), evalSecret) {
		t.Errorf("the case holds the secret:\n%s", raw)
	}
	f, err := os.Open(filepath.Join(work, "cases", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := evals.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Header.Agent != "orders" || c.Header.FlowType != "OrdersAgent" || c.Header.SessionID != id || c.Header.Runs != 1 || c.Header.Status != "running" {
		t.Errorf("header: %+v", c.Header)
	}
	var got []string
	for _, r := range c.Records {
		switch r.Type {
		case evals.TypeUserMessage:
			got = append(got, "user: "+r.Text)
		case evals.TypeToolCall:
			got = append(got, fmt.Sprintf("call %s %s %s %s: %s", r.ToolName, r.Arguments, r.Effect, r.Status, r.Output))
		case evals.TypeApproval:
			got = append(got, fmt.Sprintf("approval %s %v %q", r.ToolName, *r.Approved, r.Message))
		case evals.TypeQuestion:
			got = append(got, fmt.Sprintf("question %q -> %s %q", r.Question, r.Resolution, r.Answer))
		case evals.TypeTurn:
			got = append(got, fmt.Sprintf("turn %s %s: %s", r.Turn, r.Status, r.Answer))
			if r.Usage == nil || r.Usage.ModelCalls < 2 || r.ModelMs <= 0 {
				t.Errorf("turn %s usage %+v, model %d ms", r.Turn, r.Usage, r.ModelMs)
			}
		}
	}
	want := []string{
		"user: refund order 7",
		`call lookup_order {"order_id":"7"} read succeeded: {"id":"7","customer":"customer-7","item":"office chair"`,
		`call refund_order {"order_id":"7","amount_cents":6250} non_idempotent_write succeeded: Refunded $62.50 of order 7 (office chair); order status: refunded.`,
		`approval refund_order true ""`,
		"turn turn-1 completed: Done. Refunded $62.50 of order 7 (office chair); order status: refunded.",
		"user: refund my order",
		`call ask_user {"choices":[`,
		`question "Which order should I refund?" -> answered "order 1: desk lamp ($17.50 left)"`,
		`call lookup_order {"order_id":"1"} read succeeded: `,
		`call refund_order {"order_id":"1","amount_cents":1750} non_idempotent_write rejected: not today <redacted>`,
		`approval refund_order false "not today <redacted>"`,
		"turn turn-2 completed: OK, I did not refund order 1. (not today <redacted>)",
	}
	if len(got) != len(want) {
		t.Fatalf("the case:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("record %d: %s\nwant it to start with: %s", i+1, got[i], want[i])
		}
	}
	// The same session, found by its agent.
	out = capture("--query", "agent=orders status=all", "--out", "by-query")
	if !strings.Contains(out, id+": ") {
		t.Errorf("--query agent=orders did not capture %s:\n%s", id, out)
	}
	if _, err := os.Stat(filepath.Join(work, "by-query", id+".jsonl")); err != nil {
		t.Error(err)
	}

	// eval run: the unchanged agent replays the case with no difference.
	evalRun := func(wantCode int, args ...string) (string, evals.Report) {
		t.Helper()
		cmd := exec.Command("./bin/dex-agent-worker", append([]string{"eval", "run", "--agent", "orders", "--out", "report.json"}, args...)...)
		// The demo's orders, as make dev keeps them: the scripted model
		// reads them (a question's choices) besides its tools.
		cmd.Dir, cmd.Env = work, append(env, "DEX_DATA_DIR="+filepath.Join(work, ".dex"))
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantCode {
			t.Fatalf("eval run %v: exit %d, want %d\n%s", args, code, wantCode, out)
		}
		var rep evals.Report
		b, err := os.ReadFile(filepath.Join(work, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Cases) != 1 {
			t.Fatalf("%d cases in the report\n%s", len(rep.Cases), out)
		}
		return string(out), rep
	}
	store := filepath.Join(work, ".dex", "orders.json")
	before, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	out, rep := evalRun(0, "--dataset", "cases", "--config", "configs/dev.yaml", "--fail-on", "calls_added>0,calls_removed>0,calls_changed>0,answers_changed>0,approvals_added>0,decisions_changed>0")
	if c := rep.Cases[0]; c.Status != "same" || c.Replayed.ToolCalls != 5 || c.Replayed.Approvals != 2 || c.DivergedAt != nil || len(c.Unanswered) != 0 {
		t.Fatalf("the unchanged agent: %+v\n%s", c, out)
	}
	if !strings.Contains(out, "1 case(s): 0 changed, 0 diverged, 0 failed. Checks passed.") {
		t.Errorf("the summary:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(work, "report.md")); err != nil {
		t.Error(err)
	}

	// --model-cache: the first run keeps each model answer, the second
	// makes no model call, and both match the record.
	for i, want := range []evals.CacheStats{{Dir: "model-cache", Hits: 0, Misses: 7}, {Dir: "model-cache", Hits: 7, Misses: 0}} {
		out, rep = evalRun(0, "--dataset", "cases", "--config", "configs/dev.yaml", "--model-cache", "model-cache", "--fail-on", "cases_changed>0")
		if rep.ModelCache == nil || *rep.ModelCache != want || rep.Cases[0].Status != "same" {
			t.Fatalf("run %d with --model-cache: cache %+v, want %+v; status %s\n%s", i+1, rep.ModelCache, want, rep.Cases[0].Status, out)
		}
	}

	// A rule that denies refunds: the decision changed, the approvals
	// the record asked are not asked, and --fail-on fails the run.
	b, err = os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	deny := strings.Replace(string(b), "    interrupt_deadline: 24h\n", "    interrupt_deadline: 24h\n    approval_rules:\n      - {tool: refund_order, decision: deny, reason: \"Refunds are closed today.\"}\n", 1)
	if err := os.WriteFile(filepath.Join(work, "configs", "deny.yaml"), []byte(deny), 0o644); err != nil {
		t.Fatal(err)
	}
	out, rep = evalRun(1, "--dataset", "cases", "--config", "configs/deny.yaml", "--fail-on", "decisions_changed>0")
	cr := rep.Cases[0]
	if len(cr.Decisions) != 2 || cr.Decisions[0].Replayed != "deny" || cr.Decisions[0].Recorded != "" || cr.Status != "changed" {
		t.Fatalf("the rule change: %+v\n%s", cr, out)
	}
	removed := 0
	for _, a := range cr.Approvals {
		if a.Change == "removed" {
			removed++
		}
	}
	if removed != 2 || !strings.Contains(out, "| `decisions_changed>0` | 2 | **failed** |") {
		t.Errorf("approvals %+v\n%s", cr.Approvals, out)
	}

	// A prompt that skips the lookup: the report shows the removed call,
	// the refund asked with other arguments (whose approval the record
	// does not hold, so it is rejected and never run) and the changed
	// answer.
	prompt := strings.Replace(string(b), "      store_path: ${DEX_DATA_DIR:-.dex}/orders.json\n",
		"      store_path: ${DEX_DATA_DIR:-.dex}/orders.json\n      instructions: You refund orders without looking orders up.\n", 1)
	if prompt == string(b) {
		t.Fatal("configs/dev.yaml has no orders store_path to add instructions after")
	}
	if err := os.WriteFile(filepath.Join(work, "configs", "prompt.yaml"), []byte(prompt), 0o644); err != nil {
		t.Fatal(err)
	}
	// With the model cache the unchanged agent filled: the changed prompt
	// gets none of its answers.
	out, rep = evalRun(1, "--dataset", "cases", "--config", "configs/prompt.yaml", "--model-cache", "model-cache", "--fail-on", "calls_removed>0")
	cr = rep.Cases[0]
	if rep.ModelCache == nil || rep.ModelCache.Hits != 0 || rep.ModelCache.Misses == 0 {
		t.Errorf("the changed prompt's model cache: %+v", rep.ModelCache)
	}
	var changes []string
	for _, x := range cr.Calls {
		changes = append(changes, x.Change+" "+x.Tool)
	}
	if strings.Join(changes, ", ") != "removed lookup_order, changed refund_order" || len(cr.Answers) != 2 || cr.Answers[0].Exact || !cr.Answers[1].Exact ||
		!strings.Contains(cr.Answers[0].Replayed, "I did not refund order 7") {
		t.Fatalf("the prompt change: calls %v, answers %+v\n%s", changes, cr.Answers, out)
	}
	if !strings.Contains(out, "- call 1 removed: `lookup_order {\"order_id\":\"7\"}`") || !strings.Contains(out, "- answer of turn 1 changed") {
		t.Errorf("the summary:\n%s", out)
	}

	// The record's refund had other arguments (as if the model now asked
	// for a write the record does not hold): its approval has no recorded
	// answer, so it is rejected and never run; the case diverged there,
	// and the orders store is untouched.
	raw, err = os.ReadFile(filepath.Join(work, "cases", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(string(raw), `{\"order_id\":\"7\",\"amount_cents\":6250}`, `{\"order_id\":\"7\",\"amount_cents\":100}`)
	if edited == string(raw) {
		t.Fatal("the case has no refund of order 7 to edit")
	}
	if err := os.MkdirAll(filepath.Join(work, "edited"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "edited", id+".jsonl"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out, rep = evalRun(1, "--dataset", "edited", "--config", "configs/dev.yaml", "--fail-on", "diverged>0")
	cr = rep.Cases[0]
	if cr.Status != "diverged" || cr.DivergedAt == nil || cr.DivergedAt.Kind != "approval" || cr.DivergedAt.Tool != "refund_order" || cr.Replayed.Writes != 0 {
		t.Fatalf("the invented write: %+v\n%s", cr, out)
	}
	if len(cr.Unanswered) != 1 || cr.Unanswered[0].Kind != "approval" {
		t.Errorf("the write's approval, which the record did not hold: %+v", cr.Unanswered)
	}
	after, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the orders store changed during eval run:\nbefore %s\nafter  %s", before, after)
	}
}

// TestEvalRunReplaysAPlan: a plan-mode message drafts a plan, the user runs
// it (execute_plan) and approves its refunds; the case records the run of
// the plan, and eval run runs its own draft at that point, with the same
// calls and answers as the record.
func TestEvalRunReplaysAPlan(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	work, env := demoWorkDir(t)
	port := agenttest.FreePort(t)
	startDev(t, "./bin/dex-agent-worker", work, env, "--config", "configs/dev.yaml", "--data-dir", ".dex",
		"--temporal-port", fmt.Sprint(port), "--ui-port", "0", "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sessions := devSessions(t, ctx, port)
	id, err := sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersAgent"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := sessions.SendUserMessageWithOptions(ctx, id, "refund orders 2 and 4", client.SendOptions{PlanMode: true}); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	wait := func(what string, f func(wire.Snapshot) bool) wire.Snapshot {
		t.Helper()
		return waitSnapshot(t, ctx, sessions, id, what, f)
	}
	snap := wait("the draft", func(s wire.Snapshot) bool {
		return s.Plan != nil && s.Plan.Status == "draft" && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if ok, err := sessions.ExecutePlan(ctx, id, snap.Plan.Revision); err != nil || !ok {
		t.Fatalf("execute_plan: %v %v", ok, err)
	}
	for range 2 {
		snap = wait("an approval", func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
		in := snap.PendingInterrupts[0]
		if ok, err := sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true, Digest: in.Digest}); err != nil || !ok {
			t.Fatalf("approve: %v %v", ok, err)
		}
		wait("the approval gone", func(s wire.Snapshot) bool {
			return len(s.PendingInterrupts) == 0 || s.PendingInterrupts[0].InterruptID != in.InterruptID
		})
	}
	wait("the plan done", func(s wire.Snapshot) bool {
		return s.Plan != nil && s.Plan.Status == "completed" && s.State.Status == wire.StatusWaitingForUserMessage && len(s.PendingInterrupts) == 0
	})

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("./bin/dex-agent-worker", args...)
		cmd.Dir, cmd.Env = work, append(env, fmt.Sprintf("DEX_TEMPORAL_ADDRESS=127.0.0.1:%d", port), "DEX_DATA_DIR="+filepath.Join(work, ".dex"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("eval", "capture", "--config", "configs/dev.yaml", "--sessions", id, "--out", "plans")
	raw, err := os.ReadFile(filepath.Join(work, "plans", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `{"type":"user_message","text":"refund orders 2 and 4","plan_mode":true}`) || !strings.Contains(string(raw), `{"type":"execute_plan","revision":`) {
		t.Fatalf("the case:\n%s", raw)
	}
	out := run("eval", "run", "--dataset", "plans", "--config", "configs/dev.yaml", "--agent", "orders", "--out", "report.json",
		"--fail-on", "cases_changed>0,unanswered>0")
	if !strings.Contains(out, "1 case(s): 0 changed, 0 diverged, 0 failed. Checks passed.") {
		t.Fatalf("eval run:\n%s", out)
	}
}

// waitSnapshot polls a session's snapshot until f holds, and returns it.
func waitSnapshot(t *testing.T, ctx context.Context, sessions *client.AgentSessionClient, id, what string, f func(wire.Snapshot) bool) wire.Snapshot {
	t.Helper()
	for {
		snap, err := sessions.GetAgentSnapshot(ctx, id)
		if err == nil && f(snap) {
			return snap
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: %v (last error %v)", what, ctx.Err(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
