package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestMain(m *testing.M) {
	agenttest.RunWorkerIfChild()
	os.Exit(m.Run())
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`
plugins:
  p: {command: /bin/true}
agents:
  - name: a
    flow_type: A
    runner: p
  - name: b
    flow_type: B
    runner: p
    tool_policies:
      refund: {effect: write}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "config", "validate", "--config", bad)
	if code != 1 || !strings.Contains(stderr, `agents[1].tool_policies.refund.effect: unknown effect "write"`) {
		t.Errorf("bad config: exit %d, stderr:\n%s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, "config", "validate", "--offline", "--config", filepath.Join("..", "..", "configs", "dev.yaml"))
	if code != 0 || !strings.Contains(stdout, "is valid: 3 agent(s), 2 plugin(s); --offline: plugins not started") {
		t.Errorf("dev config: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, _, code := runCLI(t, "config", "validate", "--config", filepath.Join(dir, "missing.yaml")); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}

// TestConfigValidatePlugins runs `config validate` on configs whose
// plugins are real binaries: it starts them and configures every agent.
func TestConfigValidatePlugins(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and starts plugins")
	}
	orders := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	notExecutable := write("not-executable", "#!/bin/sh\n")

	good := write("good.yaml", fmt.Sprintf(`
plugins:
  orders: {command: %s}
  spare: {command: /nonexistent/spare}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: %s}
    tool_policies:
      lookup_order: {effect: read}
      refund_ordr: {effect: non_idempotent_write}
`, orders, filepath.Join(dir, "orders.json")))
	stdout, stderr, code := runCLI(t, "config", "validate", "--config", good)
	if code != 0 {
		t.Errorf("good config: exit %d\n%s%s", code, stdout, stderr)
	}
	if want := "is valid: 1 agent(s), 2 plugin(s); every plugin started and accepted its agents' runner_config\n"; !strings.HasSuffix(stdout, want) {
		t.Errorf("stdout = %q, want it to end with %q", stdout, want)
	}
	// Every tool's effective policy, and where it comes from.
	for _, want := range []string{
		"agent orders: tool lookup_order: read, no approval (tool_policies)\n",
		"agent orders: tool refund_order: non_idempotent_write, approval (the runner's policy)\n",
		"agent orders: tool request_return_label: idempotent_write, no approval (the runner's policy)\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout = %q, want the line %q", stdout, want)
		}
	}
	wantWarnings := "warning: plugins.spare: no agent uses this plugin; the worker does not start it\n" +
		`warning: agents[0].tool_policies.refund_ordr: runner orders does not offer a tool "refund_ordr" to agent orders (it offers: lookup_order, refund_order, request_return_label); the policy never applies` + "\n"
	if stderr != wantWarnings {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, wantWarnings)
	}

	// Every kind of problem at once: each is listed, and the exit is 1.
	bad := write("bad.yaml", fmt.Sprintf(`
plugins:
  orders: {command: %[1]s}
  summed: {command: %[1]s, sha256: "%[2]s"}
  missing: {command: ./bin/no-such-plugin}
  noexec: {command: %[3]s}
agents:
  - {name: a, flow_type: A, runner: orders, runner_config: {store_path: %[4]s, bogus: 1}}
  - {name: b, flow_type: B, runner: summed}
  - {name: c, flow_type: C, runner: missing}
  - {name: d, flow_type: D, runner: noexec}
`, orders, strings.Repeat("0", 64), notExecutable, filepath.Join(dir, "orders.json")))
	stdout, stderr, code = runCLI(t, "config", "validate", "--config", bad)
	if code != 1 || stdout != "" {
		t.Errorf("bad config: exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{
		bad + " is not valid:\n",
		"plugins.missing: runner plugin \"missing\": command " + filepath.Join(dir, "bin", "no-such-plugin") + " does not exist",
		"plugins.noexec: runner plugin \"noexec\": command " + notExecutable + " is not executable",
		"plugins.summed: runner plugin \"summed\": refusing to start " + orders + ": its SHA-256 is ",
		"the configuration expects " + strings.Repeat("0", 64),
		`agents[0].runner_config: agent a: plugin orders refused its runner_config: runner plugin "orders": Configure agent "a": orders runner_config: json: unknown field "bogus"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}

	// --offline checks the file alone, which is fine.
	stdout, stderr, code = runCLI(t, "config", "validate", "--offline", "--config", bad)
	if code != 0 || !strings.Contains(stdout, "is valid: 4 agent(s), 4 plugin(s); --offline: plugins not started") || stderr != "" {
		t.Errorf("--offline: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestOrdersDemoThroughTheCLI is the orders demo walkthrough of
// docs/operations.md: start a session with "refund order 7", see the
// pending approval, approve it, and see the refund applied once and the
// final answer.
func TestOrdersDemoThroughTheCLI(t *testing.T) {
	t.Parallel()
	o := newOrdersCLI(t, "    built_in_tools: [ask_user]\n", "    message_window_size: 2\n    message_chunk_size: 2\n")
	stack, base, session := o.stack, o.base, o.session
	out := session("start", "--agent", "orders", "--message", "refund order 7")
	id := strings.TrimSpace(out)
	if id == "" || strings.Count(out, "\n") != 1 {
		t.Fatalf("start printed %q, want the ID alone", out)
	}
	snap := stack.WaitForSnapshot("a pending approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	var viaCLI wire.Snapshot
	if err := json.Unmarshal([]byte(session("snapshot", id, "--json")), &viaCLI); err != nil {
		t.Fatal(err)
	}
	if len(viaCLI.PendingInterrupts) != 1 || viaCLI.PendingInterrupts[0].ToolName != "refund_order" {
		t.Fatalf("snapshot --json pending interrupts = %+v", viaCLI.PendingInterrupts)
	}
	human := session("snapshot", id)
	interrupt := snap.PendingInterrupts[0]
	for _, want := range []string{
		"status   waiting for approval: refund_order (" + interrupt.ToolCallID + ")  [running_tools, turn-1]\n",
		// A copied hint reaches the same engine and worker config.
		"approve: dex-agent-worker session approve " + id + " " + interrupt.InterruptID + " --address " + stack.Address() + " --config " + stack.ConfigPath + "\n",
		"reject:  dex-agent-worker session reject " + id + " " + interrupt.InterruptID + " --message 'the reason the model sees' --address " + stack.Address() + " --config " + stack.ConfigPath + "\n",
	} {
		if !strings.Contains(human, want) {
			t.Errorf("snapshot text lacks %q:\n%s", want, human)
		}
	}
	if got := session("approve", id, snap.PendingInterrupts[0].InterruptID); got != "approved\n" {
		t.Errorf("approve printed %q", got)
	}
	final := stack.WaitForSnapshot("the final answer", id, func(s wire.Snapshot) bool {
		return s.State.Status == wire.StatusWaitingForUserMessage && len(s.Messages) > 0 && s.Messages[len(s.Messages)-1].Role == "assistant"
	})
	if got := final.Messages[len(final.Messages)-1].Text; !strings.HasPrefix(got, "Done. Refunded $62.50 of order 7") {
		t.Errorf("final answer = %q", got)
	}
	data, err := os.ReadFile(filepath.Join(stack.Dir, "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"idempotency_key"`); n != 1 {
		t.Errorf("the store holds %d refunds, want 1", n)
	}
	// Approving again is refused with a clear message and exit 1.
	_, stderr, code := runCLI(t, append([]string{"session", "approve", id, snap.PendingInterrupts[0].InterruptID}, base...)...)
	if want := "interrupt " + snap.PendingInterrupts[0].InterruptID + " was not approved: it was already approved: the call succeeded"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("second approve: exit %d, %s; want %q", code, stderr, want)
	}
	// The workflow holds a window of 2; the first messages come from the
	// store, in pages of 2 that the printed hint walks.
	var seqs []int64
	args := []string{"messages", id, "--json", "--limit", "2"}
	for {
		var page wire.MessagesPage
		if err := json.Unmarshal([]byte(session(args...)), &page); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, m := range page.Messages {
			got = append(got, m.Sequence)
		}
		seqs = append(got, seqs...)
		if !page.HasMore {
			break
		}
		args = []string{"messages", id, "--json", "--limit", "2", "--before", fmt.Sprint(page.NextBeforeSequence)}
	}
	if len(seqs) < 4 || seqs[0] != 1 || seqs[len(seqs)-1] != int64(len(seqs)) {
		t.Errorf("paged sequences %v, want 1..n", seqs)
	}
	if msgs := session("messages", id, "--limit", "200"); !strings.Contains(msgs, "refund order 7") {
		t.Errorf("messages:\n%s", msgs)
	}
	// A text over 64 KiB travels by reference through the store.
	long := "look up order 7 " + strings.Repeat("z", 70_000)
	if got := session("send", id, long); got != "queued\n" {
		t.Errorf("send 70 KB printed %q", got)
	}
	stack.WaitForSnapshot("the answer to the long text", id, func(s wire.Snapshot) bool {
		return s.State.TurnCount == 2 && s.State.Status == wire.StatusWaitingForUserMessage
	})
	stored, err := stack.StoredMessages(id)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range stored {
		found = found || m.Text == long
	}
	if !found {
		t.Errorf("the store lacks the whole 70 KB text")
	}
	// Session settings: set keys, show, unset one, clear.
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"settings", id, "--set", "model=deep", "--set", "n=2", "--set", `tone="brief"`}, `{"model":"deep","n":2,"tone":"brief"}` + "\n"},
		{[]string{"settings", id, "--unset", "n"}, `{"model":"deep","tone":"brief"}` + "\n"},
		{[]string{"settings", id}, "{\n  \"model\": \"deep\",\n  \"tone\": \"brief\"\n}\n"},
		{[]string{"settings", id, "--clear"}, "{}\n"},
	} {
		if got := session(step.args...); got != step.want {
			t.Errorf("session %v printed %q, want %q", step.args, got, step.want)
		}
	}
	if _, stderr, code := runCLI(t, append([]string{"session", "settings", id, "--set", "k=" + strings.Repeat("x", 17000)}, base...)...); code != 1 || !strings.Contains(stderr, "at most 16384") {
		t.Errorf("17 KB of settings: exit %d, %s", code, stderr)
	}
	// A question: "refund my order" asks which order (order 7 is refunded,
	// so it is not a choice); an off-choice answer is refused, a decline
	// is taken.
	if got := session("send", id, "refund my order"); got != "queued\n" {
		t.Errorf("send printed %q", got)
	}
	snap = stack.WaitForSnapshot("a question", id, func(s wire.Snapshot) bool {
		return len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].Kind == wire.InterruptKindQuestion
	})
	q := snap.PendingInterrupts[0]
	human = session("snapshot", id)
	for _, want := range []string{"waiting for an answer\n  Which order should I refund?\n    1. order 1: desk lamp ($17.50 left)\n",
		"    answer:  dex-agent-worker session answer " + id + " " + q.InterruptID + " 'order 1: desk lamp ($17.50 left)' --address "} {
		if !strings.Contains(human, want) {
			t.Errorf("snapshot text lacks %q:\n%s", want, human)
		}
	}
	if strings.Contains(human, "order 7:") {
		t.Errorf("a refunded order is a choice:\n%s", human)
	}
	if _, stderr, code := runCLI(t, append([]string{"session", "answer", id, q.InterruptID, "order 42"}, base...)...); code != 1 ||
		!strings.Contains(stderr, "the answer was not taken: the answer is not one of its choices: order 1: desk lamp ($17.50 left)") {
		t.Errorf("off-choice answer: exit %d, %s", code, stderr)
	}
	if got := session("answer", id, q.InterruptID, "--decline"); got != "declined\n" {
		t.Errorf("decline printed %q", got)
	}
	final = stack.WaitForSnapshot("the answer to the decline", id, func(s wire.Snapshot) bool {
		return s.State.TurnCount == 3 && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if got := final.Messages[len(final.Messages)-1].Text; got != "OK, I will not refund anything. (The user declined to answer.)" {
		t.Errorf("answer after the decline = %q", got)
	}
	// A return label is a tool task: the session polls the carrier on
	// durable timers until the label is printed.
	if got := session("send", id, "return order 5"); got != "queued\n" {
		t.Errorf("send printed %q", got)
	}
	snap = stack.WaitForSnapshot("the label task", id, func(s wire.Snapshot) bool {
		return slices.ContainsFunc(s.ToolCalls, func(c wire.ToolCall) bool {
			return c.ToolName == "request_return_label" && c.Status == wire.ToolCallWaitingForTask
		})
	})
	if human := session("snapshot", id); !strings.Contains(human, "request_return_label") || !strings.Contains(human, "waiting_for_task") {
		t.Errorf("snapshot text while the task runs:\n%s", human)
	}
	final = stack.WaitForSnapshot("the label", id, func(s wire.Snapshot) bool {
		return s.State.TurnCount == 4 && s.State.Status == wire.StatusWaitingForUserMessage
	})
	if got := final.Messages[len(final.Messages)-1].Text; !strings.HasPrefix(got, "Return label RET-5-") || !strings.HasSuffix(got, " for order 5 is ready.") {
		t.Errorf("answer to the return = %q", got)
	}

	// Forks: the whole conversation (the refund included) into a new
	// session, which never refunds again; an edit of the first message;
	// the branches of the conversation.
	last := final.Messages[len(final.Messages)-1].Sequence
	fork := strings.TrimSpace(session("fork", id, "--at", fmt.Sprint(last), "--id", "cli-fork"))
	if fork != "cli-fork" {
		t.Fatalf("fork printed %q", fork)
	}
	edit := strings.TrimSpace(session("edit", id, "1", "look up order 7"))
	stack.WaitForSnapshot("the edited branch's answer", edit, func(s wire.Snapshot) bool {
		return s.State != nil && s.State.TurnCount == 1 && s.State.Status == wire.StatusWaitingForUserMessage
	})
	branches := session("branches", id)
	if !strings.HasPrefix(branches, id+" (root)\n") || !strings.Contains(branches, "cli-fork  forked from "+id+" at "+fmt.Sprint(last)) ||
		!strings.Contains(branches, edit+"  forked from "+id+" at 0") {
		t.Errorf("branches printed:\n%s", branches)
	}
	if _, stderr, code := runCLI(t, append([]string{"session", "fork", id}, base...)...); code == 0 || !strings.Contains(stderr, `required flag(s) "at" not set`) {
		t.Errorf("fork without --at: exit %d, %s", code, stderr)
	}
	var store struct {
		Orders map[string]struct {
			Refunds []json.RawMessage `json:"refunds"`
		} `json:"orders"`
	}
	if data, err = os.ReadFile(filepath.Join(stack.Dir, "orders.json")); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &store); err != nil {
		t.Fatal(err)
	}
	refunds := 0
	for _, o := range store.Orders {
		refunds += len(o.Refunds)
	}
	if refunds != 1 {
		t.Errorf("after the forks the store holds %d refunds, want 1", refunds)
	}
}
