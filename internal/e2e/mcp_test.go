package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/mcpsource"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer/aimock"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// notesServer is an MCP server over Streamable HTTP in the test process,
// which the worker in its child process calls: it records every tools/call
// with its idempotency key, and a tool whose argument name starts with
// "hold" blocks until the test releases it (or its request ends), so a
// test can kill the worker while the server runs a call.
type notesServer struct {
	url string
	ts  *httptest.Server

	mu      sync.Mutex
	calls   []notesCall
	entered chan string
	release chan struct{}
}

type notesCall struct{ Tool, Name, Key string }

func newNotesServer(t *testing.T) *notesServer {
	t.Helper()
	ns := &notesServer{entered: make(chan string, 16), release: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	handle := func(verb string) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			key, _ := req.Params.Meta[mcpsource.IdempotencyKeyMetaKey].(string)
			ns.mu.Lock()
			ns.calls = append(ns.calls, notesCall{Tool: req.Params.Name, Name: args.Name, Key: key})
			first := len(ns.callsOf(req.Params.Name)) == 1
			ns.mu.Unlock()
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: verb + " " + args.Name})
			}
			if strings.HasPrefix(args.Name, "hold") && first {
				ns.entered <- req.Params.Name
				select {
				case <-ns.release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: verb + " " + args.Name}}}, nil
		}
	}
	srv.AddTool(&mcp.Tool{Name: "lookup", Description: "Looks a note up.", InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, handle("found"))
	srv.AddTool(&mcp.Tool{Name: "save", Description: "Saves a note.", InputSchema: schema}, handle("saved"))
	// charge asks which account before it acts (MCP 2026-07-28
	// input_required), and charges the one the answer names.
	srv.AddTool(&mcp.Tool{Name: "charge", Description: "Charges an account.", InputSchema: schema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			key, _ := req.Params.Meta[mcpsource.IdempotencyKeyMetaKey].(string)
			ns.mu.Lock()
			ns.calls = append(ns.calls, notesCall{Tool: "charge", Key: key})
			ns.mu.Unlock()
			if r, ok := req.Params.InputResponses["account"].(*mcp.ElicitResult); ok && req.Params.RequestState == "asked" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("charged %v", r.Content["account"])}}}, nil
			}
			return &mcp.CallToolResult{RequestState: "asked", InputRequests: mcp.InputRequestMap{"account": &mcp.ElicitParams{
				Message:         "Which account should I charge?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string","enum":["checking","savings"]}}}`),
			}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "note://a", Name: "note a", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "remember the milk"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ns.ts = httptest.NewServer(h)
	t.Cleanup(ns.ts.Close)
	t.Cleanup(func() { ns.releaseAll() })
	ns.url = ns.ts.URL
	return ns
}

// callsOf returns the calls of tool; mu is held.
func (ns *notesServer) callsOf(tool string) []notesCall {
	var out []notesCall
	for _, c := range ns.calls {
		if c.Tool == tool {
			out = append(out, c)
		}
	}
	return out
}

func (ns *notesServer) recorded(tool string) []notesCall {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.callsOf(tool)
}

func (ns *notesServer) releaseAll() {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	select {
	case <-ns.release:
	default:
		close(ns.release)
	}
}

func (ns *notesServer) waitEntered(t *testing.T, tool string) {
	t.Helper()
	select {
	case got := <-ns.entered:
		if got != tool {
			t.Fatalf("the server entered %s, want %s", got, tool)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the server never ran %s", tool)
	}
}

// withPolicy adds a tool policy ("tool: {...}") to the test config's agent.
func withPolicy(cfg, policy string) string {
	return strings.Replace(cfg, "    tool_policies:\n", "    tool_policies:\n      "+policy+"\n", 1)
}

// mcpConfig is the test config with the notes server as an MCP server of
// the agent, and extra agent keys.
func mcpConfig(t *testing.T, ns *notesServer, extra string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "    run_model_limit:", "    mcp: [notes]\n"+extra+"    run_model_limit:", 1)
	return cfg + fmt.Sprintf("mcp_servers:\n  notes: {url: %q, connection_timeout: 5s, request_timeout: 1m, connection_attempts: 2}\n", ns.url+"/mcp")
}

// TestMCPReadAndApprovedWrite: the runner is offered the MCP tools as
// host tools and defers their calls; the worker routes them to the server
// with the effect of the annotations: the read runs without approval, the
// write (no annotations: unclassified) waits for approval and runs once.
// Every call carries the session's idempotency key in _meta, progress
// notifications become mcp.tool_progress events, and the record keeps the
// source reference and the effect in the session's history.
func TestMCPReadAndApprovedWrite(t *testing.T) {
	t.Parallel()
	ns := newNotesServer(t)
	s := agenttest.NewStack(t, mcpConfig(t, ns, ""))
	s.StartWorker()
	id := start(t, s, "call:notes__lookup:a call:notes__save:b")
	snap := s.WaitForSnapshot("the write's approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	in := snap.PendingInterrupts[0]
	if in.ToolName != "notes__save" || in.Kind != wire.InterruptKindApproval {
		t.Fatalf("interrupt = %+v", in)
	}
	if n := len(ns.recorded("save")); n != 0 {
		t.Fatalf("save ran %d times before its approval", n)
	}
	records := snap
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: notes__lookup=succeeded:found a; notes__save=succeeded:saved b")
	for _, want := range []struct {
		tool, mcpName string
		effect        wire.Effect
	}{{"notes__lookup", "lookup", wire.EffectRead}, {"notes__save", "save", wire.EffectUnclassified}} {
		c := findCall(records, want.tool)
		if c == nil || c.Effect != want.effect || c.ToolSourceReference != "mcp:notes/"+want.mcpName {
			t.Errorf("%s record = %+v", want.tool, c)
			continue
		}
		calls := ns.recorded(want.mcpName)
		if len(calls) != 1 || calls[0].Key != id+"/turn-1/"+c.ToolCallID {
			t.Errorf("%s calls at the server = %+v, want one with key %s/turn-1/%s", want.mcpName, calls, id, c.ToolCallID)
		}
	}
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	if n := countSteps(h, "completed", wire.StepCallTool); n != 1 {
		t.Errorf("CallTool completed %d times, want 1 (the read)", n)
	}
	if n := countSteps(h, "completed", wire.StepCallSingleAttemptTool); n != 1 {
		t.Errorf("CallSingleAttemptTool completed %d times, want 1 (the write)", n)
	}
}

// TestMCPReadKilledMidCallIsSentAgainWithTheSameKey: the worker is
// SIGKILLed while the server runs a read; the new worker's retry sends the
// call again with the same idempotency key, and its result ends the turn.
func TestMCPReadKilledMidCallIsSentAgainWithTheSameKey(t *testing.T) {
	t.Parallel()
	ns := newNotesServer(t)
	s := agenttest.NewStack(t, mcpConfig(t, ns, ""))
	w := s.StartWorker()
	id := start(t, s, "call:notes__lookup:hold-r")
	ns.waitEntered(t, "lookup")
	w.Kill()
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: notes__lookup=succeeded:found hold-r")
	calls := ns.recorded("lookup")
	if len(calls) != 2 || calls[0].Key != calls[1].Key || !strings.HasPrefix(calls[0].Key, id+"/turn-1/") {
		t.Errorf("lookup calls at the server = %+v, want two with one key", calls)
	}
}

// TestMCPWriteKilledMidCallIsOutcomeUnknownAndNeverResent: the worker is
// SIGKILLed while the server runs an approved write; the call records
// outcome_unknown and the server saw it once.
func TestMCPWriteKilledMidCallIsOutcomeUnknownAndNeverResent(t *testing.T) {
	t.Parallel()
	ns := newNotesServer(t)
	s := agenttest.NewStack(t, withPolicy(mcpConfig(t, ns, ""), "notes__save: {effect: non_idempotent_write, requires_approval: false}"))
	w := s.StartWorker()
	id := start(t, s, "call:notes__save:hold-w")
	ns.waitEntered(t, "save")
	w.Kill()
	ns.releaseAll()
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: notes__save=outcome_unknown:"+pluginapi.OutcomeUnknownToolResult)
	h, err := s.StepHistory(id)
	if err != nil {
		t.Fatal(err)
	}
	// The policy won over the defaults (unclassified, with approval): one
	// attempt, no approval.
	if n := countSteps(h, "failed", wire.StepCallSingleAttemptTool) + countSteps(h, "timed_out", wire.StepCallSingleAttemptTool); n != 1 {
		t.Errorf("CallSingleAttemptTool failed or timed out %d times, want 1: %+v", n, h)
	}
	if calls := ns.recorded("save"); len(calls) != 1 {
		t.Errorf("save calls at the server = %+v, want one", calls)
	}
}

// TestMCPServerGoneFailsTheCallAsNotSent: the server goes away after the
// worker listed it; the next call cannot connect in its connection
// attempts, so the tool provably never ran: the call records failed with
// the reason, which the model sees, and the turn goes on.
func TestMCPServerGoneFailsTheCallAsNotSent(t *testing.T) {
	t.Parallel()
	ns := newNotesServer(t)
	s := agenttest.NewStack(t, mcpConfig(t, ns, ""))
	s.StartWorker()
	id := start(t, s, "call:notes__lookup:a")
	s.WaitForSnapshot("the first answer", id, idleWithAnswer)
	ns.ts.Close()
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "call:notes__lookup:b"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap := s.WaitForSnapshot("the second answer", id, idleAfter(2))
	got := lastText(snap)
	if !strings.HasPrefix(got, "done: notes__lookup=failed:") || !strings.Contains(got, "the MCP tool call was not sent: ") || !strings.Contains(got, "2 connection attempts failed") {
		t.Errorf("answer = %q", got)
	}
	if calls := ns.recorded("lookup"); len(calls) != 1 {
		t.Errorf("lookup calls at the server = %+v, want the first only", calls)
	}
}

// TestRecordMCPHistory records a session whose runner was offered MCP
// tools: a read routed to the server at once, and a write it approved
// (internal/session replays it under changed settings).
func TestRecordMCPHistory(t *testing.T) {
	t.Parallel()
	ns := newNotesServer(t)
	s := agenttest.NewStack(t, mcpConfig(t, ns, ""))
	s.StartWorker()
	id := start(t, s, "call:notes__lookup:a call:notes__save:b")
	snap := s.WaitForSnapshot("the write's approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: notes__lookup=succeeded:found a; notes__save=succeeded:saved b")
	if ok, err := s.Sessions.CloseSession(ctx(t), id); err != nil || !ok {
		t.Fatalf("close: %v %v", ok, err)
	}
	waitCompleted(t, s, id)
	if *updateHistories {
		recordHistory(t, s, id, "mcp_turns.json")
	}
}

// TestMCPToolInAnAimockTurn: Stepwise with the OpenAI provider, against
// aimock speaking the Responses wire format: the model is offered the MCP
// tool with the server's schema, calls it, the worker runs the call on the
// server, and the model's answer uses the result. Stepwise has no MCP code.
func TestMCPToolInAnAimockTurn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	ns := newNotesServer(t)
	srv := aimock.Start(t, filepath.Join("testdata", "aimock", "mcp.json"))
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/plugins/stepwise/cmd/dex-runner-stepwise")
	s := agenttest.NewStack(t, fmt.Sprintf(`
plugins:
  stepwise: {command: %s, env: [OPENAI_API_KEY]}
mcp_servers:
  notes: {url: %q}
agents:
  - name: chat
    flow_type: ChatAgent
    runner: stepwise
    mcp: [notes]
    runner_config:
      instructions: You answer from the notes.
      model: {provider: openai, name: gpt-5-mini, api_base: "%s/v1", api_key_env: OPENAI_API_KEY}
`, plugin, ns.url+"/mcp", srv.URL))
	s.Setenv("OPENAI_API_KEY", "sk-aimock-mcp-test")
	s.StartWorker()
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: "ChatAgent", InitialMessage: "what does note a say"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the answer", id, idleWithAnswer)
	wantAnswer(t, snap, "The notes server answered: found a.")
	if calls := ns.recorded("lookup"); len(calls) != 1 || calls[0].Key != id+"/turn-1/lookup_note_a" || calls[0].Name != "a" {
		t.Errorf("lookup calls at the server = %+v", calls)
	}
	reqs := srv.Requests("/v1/responses")
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	var body struct {
		Tools []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, tool := range body.Tools {
		offered = append(offered, tool.Name)
		if tool.Name == "notes__lookup" && !strings.Contains(string(tool.Parameters), `"required":["name"]`) {
			t.Errorf("notes__lookup parameters = %s, want the server's schema", tool.Parameters)
		}
	}
	if !slices.Equal(offered, []string{"notes__charge", "notes__lookup", "notes__save"}) {
		t.Errorf("tools offered to the model = %q", offered)
	}
	if !strings.Contains(string(reqs[1].Body), "found a") {
		t.Errorf("the second model call lacks the tool's result: %s", reqs[1].Body)
	}
}

// TestMCPResourceToolsOfAnAgent: with resource_and_prompt_tools, the
// runner is also offered the three read tools over the agent's servers; a
// resource read runs without approval, its output is the spec's JSON.
func TestMCPResourceToolsOfAnAgent(t *testing.T) {
	t.Parallel()
	ns := newNotesServer(t)
	s := agenttest.NewStack(t, mcpConfig(t, ns, "    resource_and_prompt_tools: true\n"))
	s.StartWorker()
	id := start(t, s, `args:mcp_read_resource:{"server":"notes","uri":"note://a"} args:mcp_list_resources_and_prompts:{"server":"notes"}`)
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, `done: mcp_read_resource=succeeded:{"contents":[{"mimeType":"text/plain","text":"remember the milk","uri":"note://a"}]}; `+
		`mcp_list_resources_and_prompts=succeeded:{"prompts":[],"resource_templates":[],"resources":[{"mimeType":"text/plain","name":"note a","uri":"note://a"}]}`)
}

// TestMCPElicitationIsASessionQuestion: the server asks before it acts;
// the session raises the question <call>-input-1 with the schema's enum as
// choices and no Step runs while it waits. The worker is SIGKILLed during
// the wait; the answer, through answer_question, goes back to the server
// with its request state under the same idempotency key, and the tool's
// result ends the turn. A declined question is rejected without a second
// request.
func TestMCPElicitationIsASessionQuestion(t *testing.T) {
	t.Parallel()
	ns := newNotesServer(t)
	s := agenttest.NewStack(t, withPolicy(mcpConfig(t, ns, ""), "notes__charge: {effect: non_idempotent_write, requires_approval: false}"))
	s.StartWorker()
	id := start(t, s, "call:notes__charge:x")
	snap := s.WaitForSnapshot("the server's question", id, pendingQuestion)
	in := snap.PendingInterrupts[0]
	if in.InterruptID != in.ToolCallID+"-input-1" || in.ToolName != "notes__charge" || in.Question != "Which account should I charge?" ||
		strings.Join(in.Choices, ",") != "checking,savings" || in.AllowsFreeText {
		t.Fatalf("question = %+v", in)
	}
	waitingIn(t, s, id, wire.StepAwaitQuestionAnswer)
	s.KillWorkers()
	s.StartWorker()
	if ok, err := s.Sessions.AnswerQuestion(ctx(t), id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: "savings"}); err != nil || !ok {
		t.Fatalf("answer: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: notes__charge=succeeded:charged savings")
	calls := ns.recorded("charge")
	if len(calls) != 2 || calls[0].Key != calls[1].Key || calls[0].Key != id+"/turn-1/"+in.ToolCallID {
		t.Errorf("charge calls at the server = %+v, want the question and the answer under one key", calls)
	}

	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "call:notes__charge:y"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	snap = s.WaitForSnapshot("the second question", id, pendingQuestion)
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: false}); err != nil || !ok {
		t.Fatalf("decline: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the second answer", id, idleAfter(2))
	if got := lastText(snap); !strings.HasPrefix(got, "done: notes__charge=rejected:") {
		t.Errorf("declined answer = %q", got)
	}
	if n := len(ns.recorded("charge")); n != 3 {
		t.Errorf("charge was called %d times, want 3 (the decline sends nothing)", n)
	}
}

// TestMCPWriteDrainsOnSIGTERM is a rolling restart while an MCP write
// runs: the worker stops taking Steps and lets the call to the server
// finish before it exits; the next worker finishes the turn. The server
// saw the write once, and it is recorded as succeeded.
func TestMCPWriteDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	ns := newNotesServer(t)
	s := agenttest.NewStack(t, withPolicy(mcpConfig(t, ns, ""), "notes__save: {effect: non_idempotent_write, requires_approval: false}"))
	w := s.StartWorker()
	id := start(t, s, "call:notes__save:hold-term")
	ns.waitEntered(t, "save")
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	draining(t, w)
	ns.releaseAll()
	if code, err := w.Wait(time.Minute); err != nil || code != 0 {
		t.Fatalf("worker exit: code %d, %v; want 0 after the drain", code, err)
	}
	s.StartWorker()
	snap := s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: notes__save=succeeded:saved hold-term")
	if calls := ns.recorded("save"); len(calls) != 1 {
		t.Errorf("save calls at the server = %+v, want one", calls)
	}
}
