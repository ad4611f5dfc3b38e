package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/dex-agents/dex-agent-worker/internal/evals"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// The browser test's tools: Debian's Chromium and playwright-core from
// internal/webui/browsertest (installed by its install.sh).
const chromiumPath = "/usr/bin/chromium"

// browserTestDir is internal/webui/browsertest, from this package's directory.
func browserTestDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "webui", "browsertest"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// requireBrowser skips the test when Chromium, node or playwright-core is
// missing, except in CI (CI=true), which installs them: there it fails.
func requireBrowser(t *testing.T) (node string) {
	t.Helper()
	var missing []string
	if _, err := os.Stat(chromiumPath); err != nil {
		missing = append(missing, chromiumPath)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node")
	}
	if _, err := os.Stat(filepath.Join(browserTestDir(t), "node_modules", "playwright-core", "package.json")); err != nil {
		missing = append(missing, "internal/webui/browsertest/node_modules/playwright-core")
	}
	if len(missing) > 0 {
		testpeer.Missing(t, strings.Join(missing, ", "), "make test-peers (or bash internal/webui/browsertest/install.sh)")
	}
	return node
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// ordersWebStack starts a worker that runs the orders demo agent "orders"
// (agentYAML: more lines of the agent, indented four spaces, such as its
// built_in_tools) and serves the HTTP API and the web page; it returns the
// stack, the page's base URL, an API token, and node for the browser
// scripts.
func ordersWebStack(t *testing.T, agentYAML string) (stack *agenttest.Stack, base, token, node string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	node = requireBrowser(t)
	stack, base, token = ordersHTTPStack(t, agentYAML)
	return stack, base, token, node
}

// ordersHTTPStack is ordersWebStack without the browser: the stack, the
// API's base URL and a token.
func ordersHTTPStack(t *testing.T, agentYAML string) (stack *agenttest.Stack, base, token string) {
	t.Helper()
	return ordersHTTPStackWith(t, agentYAML, "")
}

// ordersHTTPStackWith is ordersHTTPStack with more agents (agentsYAML:
// list items indented two spaces), such as a sub-agent.
func ordersHTTPStackWith(t *testing.T, agentYAML, agentsYAML string) (stack *agenttest.Stack, base, token string) {
	t.Helper()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/examples/orders")
	port := agenttest.FreePort(t)
	token = randomToken(t)
	// Approvals carry digests, and the page, the chat endpoint and the AI
	// SDK must send them back: the worker refuses approvals without one.
	stack = agenttest.NewStack(t, fmt.Sprintf(`
approval_digest: {key_env: DEX_E2E_APPROVAL_KEY, required: true}
plugins:
  orders: {command: %s}
agents:
  - name: orders
    flow_type: OrdersAgent
    runner: orders
    runner_config: {store_path: "{{DIR}}/orders.json"}
%s    tool_policies:
      lookup_order: {effect: read, display_text: "Looked up order {order_id}"}
      refund_order: {effect: non_idempotent_write, requires_approval: true, approval_text: "Refund {amount_cents|usd} on order {order_id}"}
      request_return_label: {effect: idempotent_write}
%shttp:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{name: browser, token: "%s"}]
`, plugin, agentYAML, agentsYAML, port, token))
	stack.Setenv("DEX_E2E_APPROVAL_KEY", "browser-approval-digest-key-0123456789")
	stack.StartWorker()
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	waitForPage(t, base)
	return stack, base, token
}

// demoOrder is an order of the demo's store, as the tests read it.
type demoOrder struct {
	RefundedCents int64  `json:"refunded_cents"`
	Status        string `json:"status"`
	Refunds       []struct {
		IdempotencyKey string `json:"idempotency_key"`
		AmountCents    int64  `json:"amount_cents"`
	} `json:"refunds"`
}

// demoOrders reads the orders demo's store (and returns its bytes too).
func demoOrders(t *testing.T, stack *agenttest.Stack) (map[string]demoOrder, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stack.Dir, "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	var store struct {
		Orders map[string]demoOrder `json:"orders"`
	}
	if err := json.Unmarshal(b, &store); err != nil {
		t.Fatal(err)
	}
	return store.Orders, b
}

// TestWebChatRefundWithApproval drives the web chat page in a real browser
// against a worker serving the orders demo agent: start a session, watch
// the streamed answer, approve the refund, read the final answer, reload the
// page, answer the question of "refund my order" on its card and reject
// that refund, and check that one refund was applied exactly once.
func TestWebChatRefundWithApproval(t *testing.T) {
	t.Parallel()
	stack, base, token, node := ordersWebStack(t, "    built_in_tools: [ask_user]\n")
	runBrowserScript(t, node, "chat.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-chat.png"), "-approval", "-question", "-enduser", "-enduser-phone", "-operator", "-operator-phone")

	// The store saw exactly one refund: approve once, apply once.
	orders, b := demoOrders(t, stack)
	refunds := 0
	for id, o := range orders {
		refunds += len(o.Refunds)
		if id != "7" && len(o.Refunds) > 0 {
			t.Errorf("order %s was refunded: %+v", id, o)
		}
	}
	o7 := orders["7"]
	if refunds != 1 || len(o7.Refunds) != 1 || o7.Refunds[0].AmountCents != 6250 || o7.RefundedCents != 6250 {
		t.Fatalf("want exactly one refund of 6250 cents on order 7; store:\n%s", b)
	}
}

// TestWebChatLiveListAndNeedsYou drives the page's live conversation list
// and Needs-you count in headless Chromium (feed.test.mjs): a session the
// CLI starts straight through Temporal appears, its approval raises the
// count and its rejection lowers it, and the CLI's close marks its row,
// each within 10 s while the page polls only once a minute.
func TestWebChatLiveListAndNeedsYou(t *testing.T) {
	t.Parallel()
	stack, base, token, node := ordersWebStack(t, "")
	cli := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	runBrowserScriptEnv(t, node, "feed.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-feed.png"),
		[]string{"DEX_CLI=" + cli, "DEX_ADDRESS=" + stack.Address(), "DEX_CONFIG=" + stack.ConfigPath,
			"DEX_E2E_APPROVAL_KEY=browser-approval-digest-key-0123456789"}, "-desktop", "-phone")
	orders, _ := demoOrders(t, stack)
	if o := orders["8"]; len(o.Refunds) > 0 {
		t.Errorf("order 8 was refunded after a rejection: %+v", o.Refunds)
	}
}

// runBrowserScript runs one of internal/webui/browsertest's scripts
// against the page at base, logs its output (without the token), keeps its
// screenshots (shot and shot-<suffix>.png) and fails the test when it fails.
func runBrowserScript(t *testing.T, node, script, base, token, shot string, suffixes ...string) {
	t.Helper()
	runBrowserScriptEnv(t, node, script, base, token, shot, nil, suffixes...)
}

// runBrowserScriptEnv is runBrowserScript with more environment (env:
// NAME=value) for the script.
func runBrowserScriptEnv(t *testing.T, node, script, base, token, shot string, env []string, suffixes ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = browserTestDir(t)
	cmd.Env = append(append(os.Environ(), "BASE_URL="+base, "API_TOKEN="+token, "SCREENSHOT="+shot), env...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("%s output:\n%s", script, strings.ReplaceAll(string(out), token, "<token>"))
	for _, s := range append(suffixes, "-failure") {
		keepScreenshot(t, strings.TrimSuffix(shot, ".png")+s+".png")
	}
	keepScreenshot(t, shot)
	if err != nil {
		t.Fatalf("the browser test failed: %v (its output is above)", err)
	}
}

// waitForPage waits until the worker's HTTP server answers the page.
func waitForPage(t *testing.T, base string) {
	t.Helper()
	c := &http.Client{Timeout: 3 * time.Second}
	var last string
	err := agenttest.WaitFor(context.Background(), "the web page", 30*time.Second, func() (bool, error) {
		resp, err := c.Get(base + "/")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		last = resp.Status
		if resp.StatusCode == http.StatusNotFound {
			return false, agenttest.Permanent(fmt.Errorf("GET %s/ answered 404: the worker serves the API but not the web page "+
				"(daemon.Options.WebUI must be webui.Handler())", base))
		}
		return resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), nil
	})
	if err != nil {
		t.Fatalf("%v (last answer: %s)", err, last)
	}
}

// keepScreenshot logs a screenshot's path and copies it to DEX_TEST_ARTIFACTS
// when that is set.
func keepScreenshot(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	t.Logf("screenshot: %s", path)
	dir := os.Getenv("DEX_TEST_ARTIFACTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("keep screenshot: %v", err)
		return
	}
	dst := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Logf("keep screenshot: %v", err)
		return
	}
	t.Logf("screenshot copied to %s", dst)
}

// TestWebChatModelPickerCompactionAndBudget: the page offers the models
// the agent's runner reports, switches a session's model through its
// settings, marks where a compaction summary starts, and shows the budget
// left (settings.test.mjs, headless Chromium).
func TestWebChatModelPickerCompactionAndBudget(t *testing.T) {
	t.Parallel()
	node := requireBrowser(t)
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/plugins/stepwise/cmd/dex-runner-stepwise")
	port := agenttest.FreePort(t)
	token := randomToken(t)
	stack := agenttest.NewStack(t, fmt.Sprintf(`
plugins:
  stepwise: {command: %s}
agents:
  - name: echo
    flow_type: EchoAgent
    runner: stepwise
    runner_config:
      instructions: You repeat what the user says.
      model: {provider: scripted, name: echo}
      models:
        deep: {provider: scripted, name: echo}
        fast: {provider: scripted, name: echo}
    compaction: {context_window_tokens: 2000}
    spend_limits: {per_session: {model_calls: 50}}
prices:
  default: {input: 1, output: 4}
http:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{name: browser, token: "%s"}]
`, plugin, port, token))
	stack.StartWorker()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitForPage(t, base)
	runBrowserScript(t, node, "settings.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-settings.png"))
}

// TestWebEvalReportView opens a report of eval run in the page's report
// view in headless Chromium (report.test.mjs): the summary, the failed
// check and each case's changes show, a file that is no report gets an
// error, and a replayed answer holding markup shows as text.
func TestWebEvalReportView(t *testing.T) {
	t.Parallel()
	_, base, token, node := ordersWebStack(t, "")
	checks, err := evals.ParseChecks("diverged>0")
	if err != nil {
		t.Fatal(err)
	}
	rep := evals.NewReport("evals/orders", "orders", "configs/dev.yaml", []evals.CaseReport{
		{Case: "session-a", Session: "eval-1", Status: "diverged",
			DivergedAt: &evals.Unrecorded{Kind: "approval", Tool: "refund_order", Arguments: `{"order_id":"7","amount_cents":100}`},
			Calls:      []evals.CallChange{{Change: "removed", Index: 1, Tool: "lookup_order", Effect: "read", Recorded: `{"order_id":"7"}`}},
			Answers:    []evals.AnswerChange{{Turn: 1, Similarity: 0.2, Recorded: "Done.", Replayed: `<img src=x onerror="window.__xss=1">`}}},
		{Case: "session-b", Session: "eval-2", Status: "same", Answers: []evals.AnswerChange{{Turn: 1, Exact: true, Similarity: 1}}},
	}, checks)
	dir := t.TempDir()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	good, bad := filepath.Join(dir, "report.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	runBrowserScriptEnv(t, node, "report.test.mjs", base, token, filepath.Join(t.TempDir(), "webui-report.png"), []string{"REPORT_FILE=" + good, "BAD_REPORT_FILE=" + bad})
}
