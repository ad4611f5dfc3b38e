package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// uiMessage is an AI SDK UI message as the AI SDK's chat client built it.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

type uiPart struct {
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	State            string          `json:"state"`
	ToolCallID       string          `json:"toolCallId"`
	Input            json.RawMessage `json:"input"`
	Output           json.RawMessage `json:"output"`
	ErrorText        string          `json:"errorText"`
	ProviderMetadata json.RawMessage `json:"providerMetadata"`
	Approval         *struct {
		ID       string `json:"id"`
		Approved *bool  `json:"approved"`
	} `json:"approval"`
	Data json.RawMessage `json:"data"`
}

// uiStepResult is one line chat.mjs prints after a step.
type uiStepResult struct {
	Step     string      `json:"step"`
	Status   string      `json:"status"`
	Errors   []string    `json:"errors"`
	Messages []uiMessage `json:"messages"`
	Text     *string     `json:"text"`
}

// aisdkDir holds chat.mjs and the installed AI SDK.
func aisdkDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/aisdk")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		testpeer.Missing(t, "Node.js", "apt-get install nodejs")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ai", "package.json")); err != nil {
		testpeer.Missing(t, "the AI SDK (npm package ai)", "bash internal/e2e/testdata/aisdk/install.sh (make test-peers)")
	}
	return dir
}

// runChat runs chat.mjs with steps; onText sees each text line as it comes.
func runChat(t *testing.T, dir, base, token, id string, env []string, onText func(string), steps ...string) []uiStepResult {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx(t), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "node", append([]string{filepath.Join(dir, "chat.mjs"), base, token, id}, steps...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var results []uiStepResult
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r uiStepResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("chat.mjs printed %q: %v", sc.Text(), err)
		}
		if r.Text != nil {
			if onText != nil {
				onText(*r.Text)
			}
			continue
		}
		results = append(results, r)
	}
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat.mjs %v: %v\n%s", steps, err, stderr.String())
	}
	if len(results) != len(steps) {
		t.Fatalf("chat.mjs ran %d of %d steps\n%s", len(results), len(steps), stderr.String())
	}
	for _, r := range results {
		if len(r.Errors) > 0 || r.Status != "ready" {
			t.Fatalf("step %s: status %s, errors %q", r.Step, r.Status, r.Errors)
		}
	}
	return results
}

// uiText is the text of a UI message's text parts, without the parts a
// retried model call superseded.
func uiText(m uiMessage) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" && !strings.Contains(string(p.ProviderMetadata), `"superseded":true`) {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func uiToolParts(m uiMessage) map[string]uiPart {
	out := map[string]uiPart{}
	for _, p := range m.Parts {
		if strings.HasPrefix(p.Type, "tool-") {
			out[p.ToolCallID] = p
		}
	}
	return out
}

// TestUseChatDrivesAnOrdersTurnWithAnApproval drives the orders demo with
// the AI SDK's own chat client (AbstractChat, what useChat wraps, with
// DefaultChatTransport): "refund order 7" streams until the refund's
// approval request; a new chat resumes the paused turn (as after a page
// reload) and gets the same message; addToolApprovalResponse answers it,
// the automatic request resolves the interrupt, and the turn finishes in
// the same assistant message. The message matches the session's
// transcript and tool call records.
func TestUseChatDrivesAnOrdersTurnWithAnApproval(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	dir := aisdkDir(t)
	_, base, token := ordersHTTPStack(t, "")
	c, err := httpclient.New(base, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.StartSession(ctx(t), httpclient.StartRequest{Agent: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	// No turn runs: the resume route answers 204, as useChat expects.
	if code := uiStreamStatus(t, base, token, id); code != http.StatusNoContent {
		t.Fatalf("GET stream with no turn running: %d, want 204", code)
	}
	res := runChat(t, dir, base, token, id, nil, nil, "send:refund order 7", "resume", "approve")
	paused, resumed, done := res[0].Messages, res[1].Messages, res[2].Messages
	if len(paused) != 2 || paused[0].Role != "user" || paused[1].Role != "assistant" {
		t.Fatalf("after the send: %+v", paused)
	}
	msg := paused[1]
	var refund uiPart
	for _, p := range msg.Parts {
		if p.Type == "tool-refund_order" {
			refund = p
		}
	}
	if refund.State != "approval-requested" || refund.Approval == nil || refund.Approval.ID == "" {
		t.Fatalf("the refund's tool part %+v; want approval-requested with an approval ID", refund)
	}
	// The reload's resumed stream rebuilds the same message.
	if len(resumed) != 2 {
		t.Fatalf("after the resume: %d messages", len(resumed))
	}
	if a, b := mustJSON(t, resumed[1]), mustJSON(t, msg); a != b {
		t.Errorf("the resumed message differs:\n%s\nwant\n%s", a, b)
	}
	// At the pause the message holds every text the model wrote so far.
	if at, end := uiText(msg), uiText(done[len(done)-1]); at == "" || !strings.HasPrefix(end, at) || at == end {
		t.Errorf("text at the approval %q; at the end %q", at, end)
	}
	if len(done) != 2 || done[1].ID != msg.ID {
		t.Fatalf("after the approval: %d messages; want the assistant message %s continued", len(done), msg.ID)
	}
	final := done[1]

	// The session's records.
	snap, _, err := c.Snapshot(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if snap.State == nil || snap.State.ActiveTurnID != "" {
		t.Fatalf("the turn still runs: %+v", snap.State)
	}
	page, err := c.Messages(ctx(t), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	tools := map[string]wire.Message{}
	for _, m := range page.Messages {
		switch {
		case m.Role == wire.RoleAssistant:
			want.WriteString(m.Text)
		case m.Role == wire.RoleTool:
			tools[m.ToolCallID] = m
		}
	}
	if got := uiText(final); got != want.String() || got == "" {
		t.Errorf("the UI message's text %q; the transcript's %q", got, want.String())
	}
	parts := uiToolParts(final)
	if len(parts) != len(tools) || len(tools) < 2 {
		t.Errorf("tool parts %v; the transcript's tool results %v", parts, tools)
	}
	for callID, m := range tools {
		p, ok := parts[callID]
		if !ok {
			t.Errorf("no tool part for %s (%s)", callID, m.ToolName)
			continue
		}
		var output string
		_ = json.Unmarshal(p.Output, &output)
		if p.Type != "tool-"+m.ToolName || p.State != "output-available" || output == "" || !strings.Contains(m.Text, output) {
			t.Errorf("tool part %s: %s %s output %q; the transcript has %s %q", callID, p.Type, p.State, output, m.ToolName, m.Text)
		}
		if !json.Valid(p.Input) || string(p.Input) == "{}" {
			t.Errorf("tool part %s has input %s", callID, p.Input)
		}
	}
	if p := parts[refund.ToolCallID]; p.Approval == nil || p.Approval.Approved == nil || !*p.Approval.Approved {
		t.Errorf("the refund's part lost its approval: %+v", p.Approval)
	}
	var usage bool
	for _, p := range final.Parts {
		usage = usage || p.Type == "data-dex-usage"
	}
	if !usage {
		t.Error("no data-dex-usage part")
	}
	if code := uiStreamStatus(t, base, token, id); code != http.StatusNoContent {
		t.Errorf("GET stream after the turn: %d, want 204", code)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("the UI message at the approval:\n%s\nat the end:\n%s\ntranscript: %+v", mustJSON(t, msg), mustJSON(t, final), page.Messages)
	}
}

// TestUseChatShowsARetriedModelCallsTextOnce runs the production topology
// (engine, a worker and an API process on Redis and PostgreSQL) and kills
// the worker while a model call streams, once the call's first words are
// in the AI SDK's message; the next worker's attempt streams the text
// again, through the API process that stayed up:
//   - the retry writes the same text: the message holds it once;
//   - the retry writes other text (draftgate): an AI SDK 6 client keeps the
//     first attempt's words in a part marked superseded, and its answer
//     text is the retry's;
//   - the same with AI SDK 7, which asked for the v7 chunks: reset-step
//     leaves only the retry's text.
func TestUseChatShowsARetriedModelCallsTextOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	dir := aisdkDir(t)
	c, state := startCluster(t)
	worker := c.run("worker-1", "worker")
	api := c.run("api", "api")
	hc, err := httpclient.New("http://"+api.addr, clusterToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	workers := 1
	for _, tc := range []struct {
		name, message string
		env           []string
		same          bool // the retry writes the first attempt's text again
	}{
		{"same text, AI SDK 6", "streamgate:k1", nil, true},
		{"other text, AI SDK 6", "draftgate:k2", nil, false},
		{"other text, AI SDK 7 with the v7 chunks", "draftgate:k3", []string{"DEX_AI_PACKAGE=ai7", "DEX_UI_CHUNKS=v7"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := agenttest.FileGate{Dir: state, Name: "model-" + strings.SplitN(tc.message, ":", 2)[1]}
			if err := gate.Arm(); err != nil {
				t.Fatal(err)
			}
			id, err := hc.StartSession(ctx(t), httpclient.StartRequest{Agent: "test"})
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			res := runChat(t, dir, "http://"+api.addr, clusterToken, id, tc.env, func(text string) {
				if text == "" {
					return
				}
				texts = append(texts, text)
				if len(texts) > 1 {
					return
				}
				// The first words are on the screen while the call waits at
				// the gate: kill the worker in the call, let the next retry it.
				reached(t, gate)
				worker.kill()
				if err := gate.Release(); err != nil {
					t.Error(err)
				}
				workers++
				worker = c.run(fmt.Sprintf("worker-%d", workers), "worker")
			}, "send:"+tc.message)
			if len(texts) == 0 {
				t.Fatal("the client saw no text")
			}
			page, err := hc.Messages(ctx(t), id, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			want := page.Messages[len(page.Messages)-1].Text
			msgs := res[0].Messages
			if len(msgs) != 2 || uiText(msgs[1]) != want || want == "" {
				t.Fatalf("the UI message's text %q, the transcript's %q; texts seen %q", uiText(msgs[len(msgs)-1]), want, texts)
			}
			var parts, superseded []string
			for _, p := range msgs[1].Parts {
				if p.Type != "text" {
					continue
				}
				if strings.Contains(string(p.ProviderMetadata), `"superseded":true`) {
					superseded = append(superseded, p.Text)
				} else {
					parts = append(parts, p.Text)
				}
			}
			first := texts[0]
			switch {
			case tc.same:
				if !strings.HasPrefix(want, first) || first == want || len(superseded) != 0 || len(parts) != 1 {
					t.Errorf("first text %q, parts %q, superseded %q: want the answer %q once", first, parts, superseded, want)
				}
			case tc.env == nil:
				if strings.HasPrefix(want, first) || len(superseded) != 1 || superseded[0] != first || len(parts) != 1 {
					t.Errorf("first text %q, parts %q, superseded %q: want the first attempt's text superseded and the answer %q", first, parts, superseded, want)
				}
			default:
				if strings.HasPrefix(want, first) || len(superseded) != 0 || len(parts) != 1 || parts[0] != want {
					t.Errorf("first text %q, parts %q, superseded %q: want reset-step to leave only %q", first, parts, superseded, want)
				}
			}
		})
	}
}

func uiStreamStatus(t *testing.T, base, token, id string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodGet, base+"/v1/ui/sessions/"+id+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUseChatExamplePage builds nothing itself: examples/useChat/install.sh
// (make test-peers) builds the page, and this test serves it with the
// example's server.mjs in front of a worker running the orders demo, then
// drives it in headless Chromium: a refund with its approval through the
// React useChat hook.
func TestUseChatExamplePage(t *testing.T) {
	t.Parallel()
	stack, base, token, node := ordersWebStack(t, "")
	example, err := filepath.Abs("../../examples/useChat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(example, "dist", "app.js")); err != nil {
		testpeer.Missing(t, "the built useChat example (examples/useChat/dist/app.js)", "bash examples/useChat/install.sh (make test-peers)")
	}
	port := agenttest.FreePort(t)
	srv := exec.Command(node, "server.mjs")
	srv.Dir = example
	srv.Env = append(os.Environ(), "DEX_API="+base, fmt.Sprintf("PORT=%d", port))
	var out strings.Builder
	srv.Stdout, srv.Stderr = &out, &out
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
		if t.Failed() {
			t.Logf("server.mjs:\n%s", out.String())
		}
	})
	page := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitOK(t, "the example's server", page+"/app.js", 30*time.Second, nil)
	runBrowserScript(t, node, "usechat.test.mjs", page, token, filepath.Join(t.TempDir(), "usechat.png"), "-approval")
	orders, b := demoOrders(t, stack)
	if o := orders["7"]; len(o.Refunds) != 1 || o.RefundedCents != 6250 {
		t.Fatalf("want one refund of order 7; store:\n%s", b)
	}
}
