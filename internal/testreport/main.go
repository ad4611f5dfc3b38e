// Command testreport runs go test -json and reports on it as make test
// needs: while the tests run it prints what plain go test prints (a line
// per package, the output of every failed test, build errors), and it
// saves the events so that a summary over several runs can follow.
//
//	testreport run -o FILE -- go test -json [flags] [packages]
//	testreport summary FILE...
//
// run exits with go test's exit code. summary prints the packages, the
// tests run (a test that runs in several files counts once per run), the
// failures, the skipped tests with the reason each gave, and the ten
// slowest tests; it exits 1 when a file records a failure.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var exit exitError
		if errors.As(err, &exit) {
			os.Exit(int(exit))
		}
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
}

// exitError is an exit code to leave with, its message printed already.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

const usage = `usage: testreport run -o FILE -- go test -json ...
       testreport summary FILE...`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "run":
		if len(args) < 5 || args[1] != "-o" || args[3] != "--" {
			return errors.New(usage)
		}
		return runTests(args[2], args[4:], stdout, stderr)
	case "summary":
		if len(args) < 2 {
			return errors.New(usage)
		}
		var tests, fuzz []event
		var phases []phase
		for _, path := range args[1:] {
			evs, err := readFile(path)
			if err != nil {
				return err
			}
			// A fuzz run's target ran among the tests too, with its seeds:
			// the fuzz runs are counted apart.
			if phaseName(path) == "fuzz" {
				fuzz = append(fuzz, evs...)
			} else {
				tests = append(tests, evs...)
			}
			phases = addPhase(phases, phaseName(path), evs)
		}
		r := summarize(tests)
		r.phases = phases
		r.fuzz = summarize(fuzz)
		r.print(stdout)
		if r.failed() {
			return exitError(1)
		}
		return nil
	default:
		return errors.New(usage)
	}
}

// event is one line of go test -json (test2json's TestEvent).
type event struct {
	Time    time.Time `json:",omitempty"`
	Action  string
	Package string  `json:",omitempty"`
	Test    string  `json:",omitempty"`
	Elapsed float64 `json:",omitempty"`
	Output  string  `json:",omitempty"`
	// ImportPath is set on build-output and build-fail events.
	ImportPath string `json:",omitempty"`
	// FailedBuild names the package whose build failed a test package.
	FailedBuild string `json:",omitempty"`
}

// runTests runs the command, saves its JSON events to out and prints them
// the way go test without -json would, but quieter: passing tests print
// nothing.
func runTests(out string, command []string, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", strings.Join(command, " "), err)
	}
	p := newPrinter(stdout)
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		// Each event reaches the file at once, so a run that is killed
		// leaves what it did.
		if _, err := f.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("save go test's events: %w", err)
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event: go test prints some lines as they are.
			fmt.Fprintf(stdout, "%s\n", line)
			continue
		}
		p.event(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read go test's output: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return exitError(ee.ExitCode())
		}
		return err
	}
	return nil
}

// printer prints go test's events as a person reads them.
type printer struct {
	w io.Writer
	// output holds each running test's output (and each package's own,
	// under the key pkg+"\x00"), printed only when it fails.
	output map[string][]string
}

func newPrinter(w io.Writer) *printer { return &printer{w: w, output: map[string][]string{}} }

func (p *printer) event(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(p.w, e.Output)
	case "output":
		p.output[key] = append(p.output[key], e.Output)
	case "fail":
		if e.Test != "" {
			// A subtest's output is its own; its parent's "--- FAIL"
			// follows when the parent ends.
			fmt.Fprint(p.w, strings.Join(p.output[key], ""))
		} else {
			// Tests of the package that never ended: the binary died
			// while they ran (a panic in a goroutine, a signal, an
			// os.Exit). Their output holds the reason.
			p.printUnended(e.Package)
			fmt.Fprint(p.w, strings.Join(p.output[key], ""))
			fmt.Fprintf(p.w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
		delete(p.output, key)
	case "pass", "skip":
		if e.Test != "" {
			// test2json may end a test after the lines of a panic that
			// killed the binary (a goroutine of the package, not the
			// test's): keep them for the package's failure.
			if lines := panicLines(p.output[key]); lines != nil {
				pkgKey := e.Package + "\x00"
				p.output[pkgKey] = append(p.output[pkgKey], lines...)
			}
		}
		if e.Test == "" {
			if e.Action == "skip" {
				fmt.Fprintf(p.w, "?   \t%s\t[no test files]\n", e.Package)
			} else {
				fmt.Fprintf(p.w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
		}
		delete(p.output, key)
	}
}

// unendedLines is how much of a test that never ended is printed.
const unendedLines = 60

// printUnended prints, for each test of pkg still running, the part of
// its output that tells why the binary died: from the first "panic:" or
// "fatal error:" line on, or else its last lines.
func (p *printer) printUnended(pkg string) {
	var keys []string
	for key := range p.output {
		if k, test, _ := strings.Cut(key, "\x00"); k == pkg && test != "" {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		_, test, _ := strings.Cut(key, "\x00")
		fmt.Fprintf(p.w, "--- NEVER ENDED: %s (the test binary exited while it ran)\n", test)
		fmt.Fprint(p.w, strings.Join(deathLines(p.output[key], unendedLines), ""))
		delete(p.output, key)
	}
}

// panicLines is out from its first line that starts a panic or a fatal
// error, or nil.
func panicLines(out []string) []string {
	for i, l := range out {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "panic:") || strings.HasPrefix(t, "fatal error:") {
			return out[i:]
		}
	}
	return nil
}

// deathLines is at most n lines of out: from the first line that starts a
// panic or a fatal error, or else the last n.
func deathLines(out []string, n int) []string {
	for i, l := range out {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "panic:") || strings.HasPrefix(t, "fatal error:") {
			out = out[i:]
			if len(out) > n {
				out = out[:n]
			}
			return out
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

func readFile(path string) ([]event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readEvents(f, path)
}

func readEvents(r io.Reader, name string) ([]event, error) {
	var out []event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// testResult is one test's end in one run.
type testResult struct {
	pkg, name, action string
	elapsed           float64
	reason            string // a skip's
}

// phase is the wall time of the runs whose files share a name before
// the first "-" (unit.json; fuzz-a-FuzzX.json and fuzz-b-FuzzY.json).
type phase struct {
	name        string
	first, last time.Time
}

func phaseName(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	name, _, _ = strings.Cut(name, "-")
	return name
}

// addPhase widens the phase of that name to the events' times.
func addPhase(phases []phase, name string, events []event) []phase {
	var first, last time.Time
	for _, e := range events {
		if e.Time.IsZero() {
			continue
		}
		if first.IsZero() || e.Time.Before(first) {
			first = e.Time
		}
		if e.Time.After(last) {
			last = e.Time
		}
	}
	if first.IsZero() {
		return phases
	}
	for i := range phases {
		if phases[i].name == name {
			if first.Before(phases[i].first) {
				phases[i].first = first
			}
			if last.After(phases[i].last) {
				phases[i].last = last
			}
			return phases
		}
	}
	return append(phases, phase{name: name, first: first, last: last})
}

type report struct {
	phases                                    []phase
	fuzz                                      *report // the fuzz runs, or nil
	packages, packagesFailed, packagesNoTests int
	buildFailures                             []string
	results                                   []testResult
	// unended are the tests that started but never ended, in a package
	// whose binary died.
	unended []testResult
}

func summarize(events []event) *report {
	r := &report{}
	output := map[string][]string{}
	pkgs := map[string]string{}
	running := map[string]bool{}
	for _, e := range events {
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "run":
			if e.Test != "" {
				running[key] = true
			}
		case "output":
			output[key] = append(output[key], e.Output)
		case "build-fail":
			r.buildFailures = append(r.buildFailures, e.ImportPath)
		case "pass", "fail", "skip":
			if e.Test == "" {
				// A package may run in several files (such as once for
				// its tests and once for a fuzz target): it failed if any
				// run did.
				if pkgs[e.Package] != "fail" {
					pkgs[e.Package] = e.Action
				}
				if e.Action == "fail" {
					r.unended = append(r.unended, unendedIn(running, e.Package)...)
				}
				continue
			}
			delete(running, key)
			res := testResult{pkg: e.Package, name: e.Test, action: e.Action, elapsed: e.Elapsed}
			if e.Action == "skip" {
				res.reason = skipReason(output[key])
			}
			r.results = append(r.results, res)
			delete(output, key)
		}
	}
	for _, action := range pkgs {
		r.packages++
		switch action {
		case "fail":
			r.packagesFailed++
		case "skip":
			r.packagesNoTests++
		}
	}
	return r
}

// unendedIn takes pkg's tests out of running and returns them, sorted.
func unendedIn(running map[string]bool, pkg string) []testResult {
	var res []testResult
	for key := range running {
		if k, test, _ := strings.Cut(key, "\x00"); k == pkg {
			res = append(res, testResult{pkg: pkg, name: test, action: "fail"})
			delete(running, key)
		}
	}
	sort.Slice(res, func(i, j int) bool { return res[i].name < res[j].name })
	return res
}

// skipReason is what a skipped test logged last before its "--- SKIP"
// line: the argument of t.Skip.
func skipReason(lines []string) string {
	reason := ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		// "file_test.go:12: the reason"
		if i := strings.Index(t, ".go:"); i >= 0 {
			if j := strings.Index(t[i+4:], ": "); j >= 0 {
				t = t[i+4+j+2:]
			}
		}
		reason = t
	}
	if reason == "" {
		return "no reason given"
	}
	return reason
}

func (r *report) failed() bool {
	if r.packagesFailed > 0 || len(r.buildFailures) > 0 || r.fuzz != nil && r.fuzz.failed() {
		return true
	}
	for _, t := range r.results {
		if t.action == "fail" {
			return true
		}
	}
	return false
}

func (r *report) print(w io.Writer) {
	var top, sub, passed, failed, skipped int
	var fails, skips, timed []testResult
	for _, t := range r.results {
		if strings.Contains(t.name, "/") {
			sub++
		} else {
			top++
			timed = append(timed, t)
		}
		switch t.action {
		case "pass":
			passed++
		case "fail":
			failed++
			fails = append(fails, t)
		case "skip":
			skipped++
			skips = append(skips, t)
		}
	}
	fmt.Fprintf(w, "\n== Test summary\n")
	if len(r.phases) > 0 {
		fmt.Fprintf(w, "wall time:")
		for _, p := range r.phases {
			fmt.Fprintf(w, " %s %s", p.name, p.last.Sub(p.first).Round(time.Second))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "packages: %d (%d failed, %d without tests)\n", r.packages, r.packagesFailed, r.packagesNoTests)
	for _, b := range r.buildFailures {
		fmt.Fprintf(w, "build failed: %s\n", b)
	}
	fmt.Fprintf(w, "tests run: %d (%d top-level tests, %d subtests): %d passed, %d failed, %d skipped\n",
		len(r.results), top, sub, passed, failed, skipped)
	if r.fuzz != nil && len(r.fuzz.results) > 0 {
		var failedTargets []string
		for _, t := range r.fuzz.results {
			if t.action == "fail" {
				failedTargets = append(failedTargets, t.name+"  "+t.pkg)
				fails = append(fails, t)
			}
		}
		fmt.Fprintf(w, "fuzz targets fuzzed: %d (%d failed)\n", len(r.fuzz.results), len(failedTargets))
		for _, b := range r.fuzz.buildFailures {
			fmt.Fprintf(w, "build failed: %s\n", b)
		}
	}
	if len(r.unended) > 0 {
		fmt.Fprintf(w, "never ended (the test binary exited while they ran; their output is above):\n")
		for _, t := range r.unended {
			fmt.Fprintf(w, "  %s  %s\n", t.name, t.pkg)
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(w, "failed:\n")
		for _, t := range fails {
			fmt.Fprintf(w, "  %s  %s\n", t.name, t.pkg)
		}
	}
	if len(skips) > 0 {
		fmt.Fprintf(w, "skipped:\n")
		for _, t := range skips {
			fmt.Fprintf(w, "  %s  %s: %s\n", t.name, t.pkg, t.reason)
		}
	}
	sort.SliceStable(timed, func(i, j int) bool { return timed[i].elapsed > timed[j].elapsed })
	if len(timed) > 10 {
		timed = timed[:10]
	}
	fmt.Fprintf(w, "slowest:\n")
	for _, t := range timed {
		fmt.Fprintf(w, "  %7.1fs  %s  %s\n", t.elapsed, t.name, t.pkg)
	}
}
