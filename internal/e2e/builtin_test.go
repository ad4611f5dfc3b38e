package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// builtInConfig is the test config with the built-in tools on, and the HTTP
// API with the token "all".
func builtInConfig(t *testing.T, extra string) (string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", "    built_in_tools: [ask_user, durable_wait, write_todos]\n"+extra+"    run_model_limit:", 1) + fmt.Sprintf(`
http:
  listen: 127.0.0.1:%d
  auth:
    tokens:
      - {name: all, token: %s}
`, port, tokenAll)
	return cfg, fmt.Sprintf("http://127.0.0.1:%d", port)
}

func pendingQuestion(s wire.Snapshot) bool {
	return len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].Kind == wire.InterruptKindQuestion
}

// TestAskUserAnsweredOverHTTP: the model asks with choices; the session
// waits in AwaitQuestionAnswer with the question in the snapshot; an answer
// outside the choices and a blank one are refused, the answer over the
// HTTP route is the tool's result, a second answer is refused, and the
// turn ends with one more model call.
func TestAskUserAnsweredOverHTTP(t *testing.T) {
	t.Parallel()
	cfg, base := builtInConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "ask:How_many_seats?:4,8")
	snap := s.WaitForSnapshot("a pending question", id, pendingQuestion)
	in := snap.PendingInterrupts[0]
	if in.Question != "How many seats?" || strings.Join(in.Choices, ",") != "4,8" || in.AllowsFreeText || in.InterruptID != in.ToolCallID || in.ToolName != "ask_user" {
		t.Fatalf("question interrupt = %+v", in)
	}
	if c := findCall(snap, "ask_user"); c == nil || c.Status != wire.ToolCallAwaitingAnswer {
		t.Errorf("the question's record: %+v", snap.ToolCalls)
	}
	waitingIn(t, s, id, wire.StepAwaitQuestionAnswer)
	for _, a := range []string{"5", "   "} {
		if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: a}); err != nil || ok {
			t.Errorf("answer %q = %v, %v; want false", a, ok, err)
		}
	}
	// A body with neither answer nor decline: the client cannot send it.
	url := base + "/v1/sessions/" + id + "/questions/" + in.InterruptID
	if code, body := do(t, "POST", url, tokenAll, `{}`); code != 400 {
		t.Errorf("no answer: %d %s", code, body)
	}
	c := apiClient(t, base, tokenAll)
	// A refused answer says why.
	if ok, why, err := c.AnswerQuestionWithReason(ctx(t), id, in.InterruptID, "5", false); err != nil || ok || why != "the answer is not one of its choices: 4, 8" {
		t.Errorf("an answer off the choices over HTTP: %v %q %v", ok, why, err)
	}
	if ok, why, err := c.ResolveInterruptWithReason(ctx(t), id, in.InterruptID, httpclient.Resolution{Approved: true}); err != nil || ok || why != "it is a question: answer it, or decline it" {
		t.Errorf("approving the question: %v %q %v", ok, why, err)
	}
	if ok, err := c.AnswerQuestion(ctx(t), id, in.InterruptID, " 8 ", false); err != nil || !ok {
		t.Fatalf("answer over HTTP: %v %v", ok, err)
	}
	if ok, why, err := c.AnswerQuestionWithReason(ctx(t), id, in.InterruptID, "4", false); err != nil || ok || why != "it was already answered" {
		t.Errorf("second answer: %v %q %v; want false, already answered", ok, why, err)
	}
	if ok, why, err := c.ResolveInterruptWithReason(ctx(t), id, "call_nope", httpclient.Resolution{Approved: true}); err != nil || ok || !strings.HasPrefix(why, "the session has no interrupt call_nope") {
		t.Errorf("an unknown interrupt: %v %q %v", ok, why, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, `done: ask_user=succeeded:{"status":"answered","answer":"8"}`)
	if n := modelCalls(t, s); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
	if len(snap.PendingInterrupts) != 0 {
		t.Errorf("interrupts after the answer: %+v", snap.PendingInterrupts)
	}
}

// TestAskUserDeclinedAndInvalid: a declined question is the spec's text to
// the model; a blank question fails the call at once with no interrupt.
func TestAskUserDeclinedAndInvalid(t *testing.T) {
	t.Parallel()
	cfg, base := builtInConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "ask:Which_city?")
	snap := s.WaitForSnapshot("a pending question", id, pendingQuestion)
	if !snap.PendingInterrupts[0].AllowsFreeText {
		t.Errorf("a question without choices takes free text: %+v", snap.PendingInterrupts[0])
	}
	if ok, err := apiClient(t, base, tokenAll).AnswerQuestion(ctx(t), id, snap.PendingInterrupts[0].InterruptID, "", true); err != nil || !ok {
		t.Fatalf("decline: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: ask_user=rejected:The user declined to answer.")

	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "ask:_"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap = s.WaitForSnapshot("the second answer", id, idleAfter(2))
	if got := lastText(snap); !strings.HasPrefix(got, "done: ask_user=failed:") || !strings.Contains(got, "question is required and must not be blank") {
		t.Errorf("blank question: answer %q", got)
	}
}

// TestDurableWaitSurvivesARestartOfEverything: a durable_wait of 4 s; the
// worker is SIGKILLed and the engine restarted during the wait, a new worker
// starts, and the wait ends with the spec's result and exactly one more
// model call. No Step runs during the wait.
func TestDurableWaitSurvivesARestartOfEverything(t *testing.T) {
	t.Parallel()
	cfg, _ := builtInConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	began := time.Now()
	id := start(t, s, "wait:4")
	snap := s.WaitForSnapshot("a durable wait", id, func(s wire.Snapshot) bool {
		c := findCall(s, "durable_wait")
		return c != nil && c.Status == wire.ToolCallWaitingForTimer
	})
	waitingIn(t, s, id, wire.StepAwaitTimer)
	waiting := findCall(snap, "durable_wait")
	if waiting == nil || waiting.Status != wire.ToolCallWaitingForTimer || waiting.WaitUntil == "" {
		t.Fatalf("the wait's record: %+v", snap.ToolCalls)
	}
	s.KillWorkers()
	s.StopEngine()
	s.StartEngine()
	s.StartWorker()
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, `done: durable_wait=succeeded:{"status":"completed","waited_seconds":4,"reason":"scripted wait"}`)
	if d := time.Since(began); d < 4*time.Second {
		t.Errorf("the turn ended %v after it began; the wait was 4s", d)
	}
	if n := modelCalls(t, s); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
}

func findCall(s wire.Snapshot, tool string) *wire.ToolCall {
	for i := range s.ToolCalls {
		if s.ToolCalls[i].ToolName == tool {
			return &s.ToolCalls[i]
		}
	}
	return nil
}

// waitingIn waits until the ActiveStepTypes search attribute finds the
// session by the Step it waits in.
func waitingIn(t *testing.T, s *agenttest.Stack, id, step string) {
	t.Helper()
	q := fmt.Sprintf("ActiveStepTypes = %q", step)
	err := agenttest.WaitFor(context.Background(), q, 30*time.Second, func() (bool, error) {
		resp, err := s.Client.ListWorkflow(ctx(t), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: q})
		if err != nil {
			return false, err
		}
		for _, e := range resp.GetExecutions() {
			if e.GetExecution().GetWorkflowId() == id {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecordBuiltInHistory runs a session with the built-in tools: a
// question answered, one declined, and a durable wait, and records its
// history as builtin_v5_turns.json (a version-5 session: the results keep
// the reference's key order) for the replay test of internal/sessionflow
// with -update-histories. builtin_turns.json, recorded from an older
// version, is kept and replays as it ran.
func TestRecordBuiltInHistory(t *testing.T) {
	t.Parallel()
	cfg, _ := builtInConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "ask:Which_size?:S,M,L ask:Gift_wrap?")
	snap := s.WaitForSnapshot("two pending questions", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 2 })
	for _, in := range snap.PendingInterrupts {
		var ok bool
		var err error
		if in.Question == "Which size?" {
			ok, err = s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: "M"})
		} else {
			ok, err = s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID})
		}
		if err != nil || !ok {
			t.Fatalf("%q: %v %v", in.Question, ok, err)
		}
	}
	snap = s.WaitForSnapshot("the first answer", id, idleAfter(1))
	wantAnswer(t, snap, `done: ask_user=succeeded:{"status":"answered","answer":"M"}; ask_user=rejected:The user declined to answer.`)
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "wait:1"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap = s.WaitForSnapshot("the wait's answer", id, idleAfter(2))
	wantAnswer(t, snap, `done: durable_wait=succeeded:{"status":"completed","waited_seconds":1,"reason":"scripted wait"}`)
	if *updateHistories {
		recordHistory(t, s, id, "builtin_v5_turns.json")
	}
}

// TestToolInputRequestSurvivesAKilledWorker: a tool asks which color before
// it takes any effect; the session raises the question <call>-input-1 and
// no Step runs while it waits. The worker is SIGKILLed during the wait; a
// new one starts; the answer runs the tool again with the answer and the
// continuation, and the turn ends. The tool ran twice (the question, then
// the work); the model was called twice.
func TestToolInputRequestSurvivesAKilledWorker(t *testing.T) {
	t.Parallel()
	cfg, base := builtInConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "call:asker:door")
	snap := s.WaitForSnapshot("the tool's question", id, pendingQuestion)
	in := snap.PendingInterrupts[0]
	if in.InterruptID != in.ToolCallID+"-input-1" || in.ToolName != "asker" || in.Question != "Which color for door?" || strings.Join(in.Choices, ",") != "red,blue" || in.AllowsFreeText {
		t.Fatalf("the tool's question: %+v", in)
	}
	waitingIn(t, s, id, wire.StepAwaitQuestionAnswer)
	// The browser form leaves out what only the Steps use: a check of the
	// JSON on the wire, which a decoded snapshot cannot make.
	if code, body := do(t, "GET", base+"/v1/sessions/"+id+"/snapshot", tokenAll, ""); code != 200 || strings.Contains(string(body), "asked-door") || strings.Contains(string(body), "input_continuation") {
		t.Errorf("browser snapshot: %d %s", code, body)
	}
	s.KillWorkers()
	s.StartWorker()
	if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: "green"}); err != nil || ok {
		t.Errorf("off-choice answer = %v, %v; want false", ok, err)
	}
	if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: "blue"}); err != nil || !ok {
		t.Fatalf("answer: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: asker=succeeded:door painted blue (asked-door)")
	if n := s.Log().Count("tool", "asker"); n != 2 {
		t.Errorf("asker ran %d times, want 2 (the question, then the work)", n)
	}
	if n := modelCalls(t, s); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
}

// TestToolTaskSurvivesAKilledWorkerBetweenPolls: a tool starts a task and
// the session polls it on durable timers. Its second poll asks a question;
// the worker is SIGKILLed while the question waits and again between two
// later polls; the answer reaches the task once, the question is asked
// once, and the label comes back as the call's result. The tool ran once.
func TestToolTaskSurvivesAKilledWorkerBetweenPolls(t *testing.T) {
	t.Parallel()
	cfg, _ := builtInConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "call:labeler:box")
	snap := s.WaitForSnapshot("the task's question", id, pendingQuestion)
	in := snap.PendingInterrupts[0]
	if c := findCall(snap, "labeler"); c == nil || c.TaskID != "job-box" || in.InterruptID != c.ToolCallID+"-input-1" || in.Question != "Label size for box?" {
		t.Fatalf("the task's question: %+v, record %+v", in, c)
	}
	s.KillWorkers()
	s.StartWorker()
	if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: "large"}); err != nil || !ok {
		t.Fatalf("answer: %v %v", ok, err)
	}
	// Between the poll that took the answer and the next one: no Step runs.
	err := agenttest.WaitFor(context.Background(), "the poll that takes the answer", 30*time.Second, func() (bool, error) {
		return s.Log().Count("poll", "job-box") >= 3, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitingIn(t, s, id, wire.StepPollToolTask)
	s.KillWorkers()
	s.StartWorker()
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: labeler=succeeded:label job-box answered:large after 5 polls")
	if n := s.Log().Count("tool", "labeler"); n != 1 {
		t.Errorf("labeler ran %d times, want 1", n)
	}
	if n := modelCalls(t, s); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
}

// TestRecordToolTaskHistory runs a tool input request and a tool task with
// a question, and records the history as task_turns.json for the replay
// test of internal/session with -update-histories.
func TestRecordToolTaskHistory(t *testing.T) {
	t.Parallel()
	cfg, _ := builtInConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "call:asker:door call:labeler:box")
	for _, want := range []string{"Which color for door?", "Label size for box?"} {
		snap := s.WaitForSnapshot(want, id, func(s wire.Snapshot) bool {
			return slices.ContainsFunc(s.PendingInterrupts, func(in wire.Interrupt) bool { return in.Question == want })
		})
		i := slices.IndexFunc(snap.PendingInterrupts, func(in wire.Interrupt) bool { return in.Question == want })
		answer := snap.PendingInterrupts[i].Choices[1]
		if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: snap.PendingInterrupts[i].InterruptID, Answer: answer}); err != nil || !ok {
			t.Fatalf("answer %q: %v %v", want, ok, err)
		}
	}
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: asker=succeeded:door painted blue (asked-door); labeler=succeeded:label job-box answered:large after 5 polls")
	if *updateHistories {
		recordHistory(t, s, id, "task_turns.json")
	}
}

// TestWriteTodosKeepsThePlan: write_todos records the plan (revision 1,
// active) with no tool Step, the model sees its result and, in the same
// turn's next call, the plan note; the snapshot and a later turn keep it.
func TestWriteTodosKeepsThePlan(t *testing.T) {
	t.Parallel()
	cfg, base := builtInConfig(t, "")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "todo:Pack_the_books,Call_the_movers")
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, `done: write_todos=succeeded:{"status":"updated","revision":1,"task_count":2} [[Dex] The current plan (revision 1, active):]`)
	p := snap.Plan
	if p == nil || p.Revision != 1 || p.Status != "active" || len(p.Tasks) != 2 || p.Tasks[0].Content != "Pack the books" || p.Tasks[1].Status != "pending" {
		t.Fatalf("snapshot plan = %+v", p)
	}
	hs, _, err := apiClient(t, base, tokenAll).Snapshot(ctx(t), id)
	if hp := hs.Plan; err != nil || hp == nil || hp.Revision != 1 || hp.Status != "active" || len(hp.Tasks) == 0 || hp.Tasks[0] != (wire.PlanTask{Content: "Pack the books", Status: "pending"}) {
		t.Errorf("HTTP snapshot: plan %+v, %v", hp, err)
	}
	if n := s.Log().Count("tool", "write_todos"); n != 0 {
		t.Errorf("a tool Step ran write_todos %d times", n)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "call:noop:x"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap = s.WaitForSnapshot("the second answer", id, idleAfter(2))
	wantAnswer(t, snap, "done: noop=succeeded:ok [[Dex] The current plan (revision 1, active):]")
}

// TestPlanModeOverHTTP: a plan_mode message starts a planning turn that
// writes a draft (its other calls are rejected, no tool runs); the
// execute route refuses another revision and runs the draft's, which turns
// active and starts an executing turn with the spec's message.
func TestPlanModeOverHTTP(t *testing.T) {
	t.Parallel()
	cfg, base := builtInConfig(t, "    plan_mode_enabled: true\n")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "")
	sess := base + "/v1/sessions/" + id
	c := apiClient(t, base, tokenAll)
	if ok, err := c.SendPlanningMessage(ctx(t), id, "todo:Pack,Move call:noop:x"); err != nil || !ok {
		t.Fatalf("plan_mode message: %v %v", ok, err)
	}
	snap := s.WaitForSnapshot("the draft", id, idleAfter(1))
	wantAnswer(t, snap, `done: write_todos=succeeded:{"status":"updated","revision":1,"task_count":2}; noop=rejected:The tool call was not run: a planning turn can only call write_todos.`)
	if p := snap.Plan; p == nil || p.Status != "draft" || p.Revision != 1 {
		t.Fatalf("plan after the planning turn: %+v", p)
	}
	if n := s.Log().Count("tool", "noop"); n != 0 {
		t.Errorf("noop ran %d times in a planning turn", n)
	}
	// A body without a revision: the client always sends one.
	if code, body := do(t, "POST", sess+"/plan/execute", tokenAll, `{}`); code != 400 {
		t.Errorf("execute {}: %d %s, want 400", code, body)
	}
	for _, r := range []struct {
		revision int
		want     bool
	}{{2, false}, {1, true}} {
		if ok, err := c.ExecutePlan(ctx(t), id, r.revision); err != nil || ok != r.want {
			t.Errorf("execute revision %d: %v %v, want %v", r.revision, ok, err, r.want)
		}
	}
	snap = s.WaitForSnapshot("the executing turn", id, idleAfter(2))
	wantAnswer(t, snap, "echo: [Dex] The user approved plan revision 1. Execute it and keep the task statuses current with write_todos.")
	if p := snap.Plan; p == nil || p.Status != "active" || p.Revision != 1 {
		t.Errorf("plan after the approval: %+v", p)
	}
}

// TestRecordPlanHistory runs plan mode: a planning turn that writes a
// draft (and has another call rejected), execute_plan, and the executing
// turn; with -update-histories it records plan_turns.json for the replay
// test of internal/session.
func TestRecordPlanHistory(t *testing.T) {
	t.Parallel()
	cfg, _ := builtInConfig(t, "    plan_mode_enabled: true\n")
	s := agenttest.NewStack(t, cfg)
	s.StartWorker()
	id := start(t, s, "")
	if ok, err := s.Sessions.SendUserMessageWithOptions(ctx(t), id, "todo:Pack,Move call:noop:x", client.SendOptions{PlanMode: true}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	s.WaitForSnapshot("the draft", id, idleAfter(1))
	if ok, err := s.Sessions.ExecutePlan(ctx(t), id, 1); err != nil || !ok {
		t.Fatalf("execute_plan: %v %v", ok, err)
	}
	s.WaitForSnapshot("the executing turn", id, idleAfter(2))
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "todo:Pack,Move call:noop:y"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap := s.WaitForSnapshot("the third turn", id, idleAfter(3))
	if p := snap.Plan; p == nil || p.Revision != 2 || p.Status != "active" {
		t.Fatalf("plan = %+v", p)
	}
	if *updateHistories {
		recordHistory(t, s, id, "plan_turns.json")
	}
}
