package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// The README's five-minute tour runs here as written: its console blocks
// are commands ("$ " lines) and the output each one promises (the lines
// under it), run in order by one bash against what `make dev` runs, on a
// fresh data dir. Promised lines must appear in the command's output in
// order (other lines may come between them); "<...>" in a promised line
// stands for any text, such as a session ID. Commands that only read
// (session snapshot, plan, messages, list) are run again until their
// output keeps the promise or a minute passes, because the session moves
// on its own; any other command runs once. Then `make dev-reset` must
// start the demo anew.

// tourStep is one command of the tour and what it promises.
type tourStep struct {
	line    int // in README.md
	command string
	want    []string
}

// readmeTour returns the steps of the README's "Five-minute tour" section.
func readmeTour(t *testing.T) []tourStep {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start := -1
	for i, l := range lines {
		if l == "## Five-minute tour" {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatal(`README.md has no "## Five-minute tour" section`)
	}
	var steps []tourStep
	inBlock := false
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		l := lines[i]
		switch {
		case !inBlock && l == "```console":
			inBlock = true
		case inBlock && l == "```":
			inBlock = false
		case inBlock && strings.HasPrefix(l, "$ "):
			steps = append(steps, tourStep{line: i + 1, command: strings.TrimPrefix(l, "$ ")})
		case inBlock && len(steps) == 0:
			t.Fatalf("README.md:%d: a console block must start with a command (\"$ \")", i+1)
		case inBlock:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
	}
	if len(steps) < 10 {
		t.Fatalf("the tour has %d commands; the extraction is broken", len(steps))
	}
	return steps
}

// makeRecipe returns the first command of a Makefile target's recipe.
func makeRecipe(t *testing.T, target string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, target+":") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			return strings.TrimSpace(lines[i+1])
		}
	}
	t.Fatalf("the Makefile has no target %s with a recipe", target)
	return ""
}

// tourPlaceholder matches "<...>" in a promised line or a command.
var tourPlaceholder = regexp.MustCompile(`<[^<>]+>`)

// promise turns a promised line into a regular expression for one line of
// output.
func promise(want string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, m := range tourPlaceholder.FindAllStringIndex(want, -1) {
		b.WriteString(regexp.QuoteMeta(want[last:m[0]]))
		b.WriteString(".+?")
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(strings.TrimRight(want[last:], " ")))
	b.WriteString(" *$")
	return regexp.MustCompile(b.String())
}

// keeps reports whether output holds the promised lines in order, and
// else the first promised line it lacks.
func keeps(output string, want []string) (bool, string) {
	got := strings.Split(output, "\n")
	i := 0
	for _, w := range want {
		re := promise(w)
		for i < len(got) && !re.MatchString(got[i]) {
			i++
		}
		if i == len(got) {
			return false, w
		}
		i++
	}
	return true, ""
}

func TestTourPromises(t *testing.T) {
	t.Parallel()
	out := "session s-1 (agent orders)\nstatus   waiting for approval\n\nmessages\n  #1 user  refund order 7\n"
	for _, c := range []struct {
		want []string
		ok   bool
	}{
		{[]string{"session <id> (agent orders)", "  #1 user  refund order 7"}, true},
		{[]string{"status   waiting for approval   "}, true}, // trailing blanks do not count
		{[]string{"  #1 user  refund order 7", "session <id> (agent orders)"}, false},
		{[]string{"status   waiting"}, false}, // a whole line, not a prefix
		{[]string{"session <id> (agent echo)"}, false},
	} {
		if ok, _ := keeps(out, c.want); ok != c.ok {
			t.Errorf("keeps(%q) = %v, want %v", c.want, ok, c.ok)
		}
	}
}

// tourShell is one bash that runs the tour's commands in turn, so that
// variables and exports carry from one to the next, as in a terminal.
type tourShell struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
	cmd *exec.Cmd
}

const tourEnd = "__dex_tour_step_done__"

func newTourShell(t *testing.T, dir string, env []string) *tourShell {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir = dir
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pw.Close()
	})
	return &tourShell{t: t, in: in, out: bufio.NewReader(pr), cmd: cmd}
}

// run runs one command line and returns what it printed (stdout and
// stderr) and its exit status.
func (s *tourShell) run(command string) (string, int) {
	s.t.Helper()
	if _, err := fmt.Fprintf(s.in, "{ %s\n} </dev/null; __dex_status=$?; echo; echo %s $__dex_status\n", command, tourEnd); err != nil {
		s.t.Fatal(err)
	}
	var b strings.Builder
	done := make(chan int, 1)
	go func() {
		for {
			line, err := s.out.ReadString('\n')
			if err != nil {
				done <- -1
				return
			}
			if rest, ok := strings.CutPrefix(line, tourEnd+" "); ok {
				var code int
				fmt.Sscan(rest, &code)
				done <- code
				return
			}
			b.WriteString(line)
		}
	}()
	select {
	case code := <-done:
		return strings.TrimSuffix(b.String(), "\n"), code
	case <-time.After(2 * time.Minute):
		s.t.Fatalf("%s: no end within 2 minutes; printed so far:\n%s", command, b.String())
		return "", 0
	}
}

// readOnly matches the tour commands that change nothing, which may run
// again until the session has moved far enough.
var readOnly = regexp.MustCompile(`dex-agent-worker session (snapshot|plan|messages|list)\b`)

func TestReadmeTourRunsAsWritten(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	steps := readmeTour(t)
	work, env := demoWorkDir(t)
	// The tour's mail part: its config block on from the start, sending to
	// a real SMTP server where make mail-catcher would run one.
	catcher := testpeer.StartMailCatcher(t, testpeer.MailCatcherOptions{})
	enableTourMail(t, filepath.Join(work, "configs", "dev.yaml"), catcher.Port)
	temporalPort, httpPort := agenttest.FreePort(t), agenttest.FreePort(t)
	// What make dev runs, on ports of the test's own: the commands below
	// reach them through the variables the CLI reads.
	devArgs := func(target string) []string {
		fields := strings.Fields(makeRecipe(t, target))
		if len(fields) < 2 || fields[0] != "./bin/dex-agent-worker" || fields[1] != "dev" {
			t.Fatalf("make %s runs %q; the tour test expects ./bin/dex-agent-worker dev ...", target, fields)
		}
		return append(fields[2:], "--temporal-port", fmt.Sprint(temporalPort), "--ui-port", "0", "--http", fmt.Sprintf("127.0.0.1:%d", httpPort))
	}
	dev, banner := startDev(t, "./bin/dex-agent-worker", work, env, devArgs("dev")...)
	export := regexp.MustCompile(`(?m)^\s*(export DEX_API_TOKEN=\S+)$`).FindStringSubmatch(banner)
	if export == nil {
		t.Fatalf("dev's banner has no export DEX_API_TOKEN=... line:\n%s", banner)
	}
	sh := newTourShell(t, work, append(env,
		fmt.Sprintf("DEX_TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort),
		fmt.Sprintf("DEX_HTTP_ADDRESS=http://127.0.0.1:%d", httpPort)))

	for _, st := range steps {
		command := st.command
		if strings.HasPrefix(command, "export DEX_API_TOKEN=") {
			command = export[1] // the line the banner printed
		} else if tourPlaceholder.MatchString(command) {
			t.Fatalf("README.md:%d: %q has a placeholder; the tour's commands must run as written", st.line, command)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			out, code := sh.run(command)
			ok, missing := keeps(out, st.want)
			if ok && code == 0 {
				break
			}
			if readOnly.MatchString(command) && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			t.Fatalf("README.md:%d: $ %s\nexit %d; the output lacks the promised line %q\npromised:\n%s\nprinted:\n%s\n--- dev's log ---\n%s",
				st.line, st.command, code, missing, strings.Join(st.want, "\n"), out, tail(dev.log(t), 3000))
		}
	}

	checkTourMail(t, sh, catcher, fmt.Sprintf("http://127.0.0.1:%d/", httpPort))

	// make dev-reset starts the demo anew: no session is left.
	if err := dev.stop(t); err != nil {
		t.Fatalf("dev exited with %v after SIGINT, want 0", err)
	}
	startDev(t, "./bin/dex-agent-worker", work, env, devArgs("dev-reset")...)
	if out, code := sh.run("./bin/dex-agent-worker session list --all"); code != 0 || !strings.Contains(out, "no sessions") {
		t.Errorf("after make dev-reset, session list --all: exit %d\n%s", code, out)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// enableTourMail does to the demo config at path what the tour asks: it
// uncomments the README's yaml block, which must be there commented out,
// and points the mail channel, which must name make mail-catcher's port,
// at port.
func enableTourMail(t *testing.T, path string, port int) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Five-minute tour.*?```yaml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README's tour has no yaml block (the config block that sends approvals by mail)")
	}
	block := strings.Split(strings.TrimSuffix(string(m[1]), "\n"), "\n")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	uncomment := regexp.MustCompile(`^(\s*)# ?`)
	start := slices.IndexFunc(lines, func(l string) bool {
		return uncomment.MatchString(l) && uncomment.ReplaceAllString(l, "$1") == block[0]
	})
	if start < 0 || start+len(block) > len(lines) {
		t.Fatalf("configs/dev.yaml lacks the README's block commented out:\n%s", m[1])
	}
	for i, want := range block {
		if l := lines[start+i]; !uncomment.MatchString(l) || uncomment.ReplaceAllString(l, "$1") != want {
			t.Fatalf("configs/dev.yaml:%d: %q is not the README's %q commented out", start+i+1, l, want)
		}
		lines[start+i] = want
	}
	recipe, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	pm := regexp.MustCompile(`(?m)^mail-catcher:\n(?:\t.*\n)*?\t.*catcher\.py --port (\d+)`).FindSubmatch(recipe)
	if pm == nil {
		t.Fatal("the Makefile has no mail-catcher target that runs catcher.py --port N")
	}
	text := strings.Join(lines, "\n")
	smtp := fmt.Sprintf("smtp: {host: 127.0.0.1, port: %s, starttls: false}", pm[1])
	if strings.Count(text, smtp) != 1 {
		t.Fatalf("configs/dev.yaml's mail channel is not %q, where make mail-catcher listens", smtp)
	}
	text = strings.Replace(text, smtp, fmt.Sprintf("smtp: {host: 127.0.0.1, port: %d, starttls: false}", port), 1)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

var tourApproveLink = regexp.MustCompile(`(?m)^Approve:\r?\n(\S+)`)

// checkTourMail checks what the tour says of the mail: the session in
// $MAIL had its approval mailed; the mail's Approve link shows the refund
// on a GET and approves it on the first POST only, and the refund runs.
func checkTourMail(t *testing.T, sh *tourShell, catcher *testpeer.MailCatcher, base string) {
	t.Helper()
	id, _ := sh.run("echo $MAIL")
	id = strings.TrimSpace(id)
	if !strings.HasPrefix(id, "session-") {
		t.Fatalf("the tour set no MAIL session (echo $MAIL: %q)", id)
	}
	var link string
	deadline := time.Now().Add(time.Minute)
	for link == "" {
		for _, m := range catcher.Mails(t) {
			if text := m.Parts["text/plain"]; strings.Contains(text, "Session: "+id) {
				if found := tourApproveLink.FindStringSubmatch(text); found != nil {
					link = found[1]
				}
			}
		}
		if link == "" && time.Now().After(deadline) {
			t.Fatalf("no mail with an Approve link for %s in a minute (%d mails)", id, len(catcher.Mails(t)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.HasPrefix(link, base+"v1/links/") {
		t.Fatalf("the link %q does not start with dev's address %s", link, base)
	}
	get := func(method string) (int, string) {
		req, err := http.NewRequest(method, link, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, page := get(http.MethodGet); code != http.StatusOK || !strings.Contains(page, "Refund $") || !strings.Contains(page, "order 5") {
		t.Fatalf("GET the Approve link: %d\n%s", code, page)
	}
	if code, page := get(http.MethodPost); code != http.StatusOK || !strings.Contains(page, ">Approved<") {
		t.Fatalf("POST the Approve link: %d\n%s", code, page)
	}
	if code, page := get(http.MethodPost); code != http.StatusConflict || strings.Contains(page, ">Approved<") {
		t.Fatalf("POST the Approve link again: %d, want 409\n%s", code, page)
	}
	for out := ""; !strings.Contains(out, "Refunded $"); {
		if time.Now().After(deadline.Add(time.Minute)) {
			t.Fatalf("the refund approved by mail did not run:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
		out, _ = sh.run("./bin/dex-agent-worker session snapshot $MAIL")
	}
}

// demoWorkDir makes a working directory laid out like the repository after
// make build (bin/ with the binaries, configs/), and the environment of
// the test without the DEX_ variables, so that nothing of the test's own
// environment steers the commands.
func demoWorkDir(t *testing.T) (string, []string) {
	t.Helper()
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, pkg := range map[string]string{
		"dex-agent-worker":    "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker",
		"dex-runner-orders":   "github.com/dex-agents/dex-agent-worker/examples/orders",
		"dex-runner-stepwise": "github.com/dex-agents/dex-agent-worker/plugins/stepwise/cmd/dex-runner-stepwise",
	} {
		if err := os.Symlink(agenttest.BuildBinary(t, pkg), filepath.Join(work, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(work, "configs"), os.DirFS(filepath.Join("..", "..", "configs"))); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DEX_") {
			env = append(env, kv)
		}
	}
	return work, env
}
