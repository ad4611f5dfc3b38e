package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A go test -json stream of two packages: one with a pass, a skip with a
// reason, a subtest and a failure; one without tests.
const stream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestPass"}
{"Action":"output","Package":"ex/a","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"output","Package":"ex/a","Test":"TestPass","Output":"--- PASS: TestPass (2.50s)\n"}
{"Action":"pass","Package":"ex/a","Test":"TestPass","Elapsed":2.5}
{"Action":"run","Package":"ex/a","Test":"TestSkip"}
{"Action":"output","Package":"ex/a","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Action":"output","Package":"ex/a","Test":"TestSkip","Output":"    a_test.go:12: chromium is missing: make test-peers\n"}
{"Action":"output","Package":"ex/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"ex/a","Test":"TestSkip","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestFail"}
{"Action":"run","Package":"ex/a","Test":"TestFail/case"}
{"Action":"output","Package":"ex/a","Test":"TestFail/case","Output":"    a_test.go:20: got 1, want 2\n"}
{"Action":"fail","Package":"ex/a","Test":"TestFail/case","Elapsed":0.1}
{"Action":"output","Package":"ex/a","Test":"TestFail","Output":"--- FAIL: TestFail (0.10s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestFail","Elapsed":0.1}
{"Action":"output","Package":"ex/a","Output":"FAIL\n"}
{"Action":"fail","Package":"ex/a","Elapsed":3.1}
{"Action":"start","Package":"ex/b"}
{"Action":"output","Package":"ex/b","Output":"?   \tex/b\t[no test files]\n"}
{"Action":"skip","Package":"ex/b","Elapsed":0}
`

func TestSummary(t *testing.T) {
	events, err := readEvents(strings.NewReader(stream), "stream")
	if err != nil {
		t.Fatal(err)
	}
	r := summarize(events)
	var out bytes.Buffer
	r.print(&out)
	want := `
== Test summary
packages: 2 (1 failed, 1 without tests)
tests run: 4 (3 top-level tests, 1 subtests): 1 passed, 2 failed, 1 skipped
failed:
  TestFail/case  ex/a
  TestFail  ex/a
skipped:
  TestSkip  ex/a: chromium is missing: make test-peers
slowest:
      2.5s  TestPass  ex/a
      0.1s  TestFail  ex/a
      0.0s  TestSkip  ex/a
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if !r.failed() {
		t.Error("failed() = false for a stream with a failure")
	}
}

func TestSummaryPassesAndCountsFuzzRunsApart(t *testing.T) {
	dir := t.TempDir()
	unit := filepath.Join(dir, "unit.json")
	fuzz := filepath.Join(dir, "fuzz-a-FuzzX.json")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(unit, `{"Time":"2026-12-04T10:00:00Z","Action":"start","Package":"ex/a"}
{"Time":"2026-12-04T10:00:01Z","Action":"pass","Package":"ex/a","Test":"FuzzX","Elapsed":0.01}
{"Time":"2026-12-04T10:01:30Z","Action":"pass","Package":"ex/a","Elapsed":0.5}
`)
	write(fuzz, `{"Time":"2026-12-04T10:02:00Z","Action":"pass","Package":"ex/a","Test":"FuzzX","Elapsed":5}
{"Time":"2026-12-04T10:02:06Z","Action":"pass","Package":"ex/a","Elapsed":6}
`)
	fuzz2 := filepath.Join(dir, "fuzz-b-FuzzY.json")
	write(fuzz2, `{"Time":"2026-12-04T10:02:03Z","Action":"pass","Package":"ex/b","Test":"FuzzY","Elapsed":5}
{"Time":"2026-12-04T10:02:10Z","Action":"pass","Package":"ex/b","Elapsed":7}
`)
	var out, errOut bytes.Buffer
	if err := run([]string{"summary", unit, fuzz, fuzz2}, &out, &errOut); err != nil {
		t.Fatalf("summary: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "wall time: unit 1m30s fuzz 10s\npackages: 1 (0 failed, 0 without tests)\ntests run: 1 (1 top-level tests, 0 subtests): 1 passed, 0 failed, 0 skipped\nfuzz targets fuzzed: 2 (0 failed)\n") {
		t.Errorf("summary:\n%s", out.String())
	}
}

func TestRunPrintsFailuresOnlyAndKeepsTheExitCode(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-go-test")
	// A stand-in for go test -json: the stream above, and exit 1.
	if err := os.WriteFile(filepath.Join(dir, "stream.json"), []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat "+filepath.Join(dir, "stream.json")+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(dir, "out", "run.json")
	var out, errOut bytes.Buffer
	err := run([]string{"run", "-o", saved, "--", script}, &out, &errOut)
	if code, ok := err.(exitError); !ok || code != 1 {
		t.Fatalf("run returned %v, want exit 1", err)
	}
	want := "    a_test.go:20: got 1, want 2\n--- FAIL: TestFail (0.10s)\n" +
		"FAIL\nFAIL\tex/a\t3.100s\n" +
		"?   \tex/b\t[no test files]\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("printed (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(saved)
	if err != nil || string(data) != stream {
		t.Errorf("the saved events differ from the stream (err %v)", err)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"run"}, {"run", "-o", "x", "go"}, {"summary"}, {"other"}} {
		if err := run(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "usage:") {
			t.Errorf("run(%q) = %v, want the usage", args, err)
		}
	}
}

// A package whose binary died in a goroutine while two tests ran: go test
// ends the package with a failure but gives the tests no result.
const diedStream = `{"Action":"start","Package":"ex/c"}
{"Action":"run","Package":"ex/c","Test":"TestDone"}
{"Action":"pass","Package":"ex/c","Test":"TestDone","Elapsed":1}
{"Action":"run","Package":"ex/c","Test":"TestQuiet"}
{"Action":"output","Package":"ex/c","Test":"TestQuiet","Output":"=== RUN   TestQuiet\n"}
{"Action":"run","Package":"ex/c","Test":"TestDies"}
{"Action":"output","Package":"ex/c","Test":"TestDies","Output":"=== RUN   TestDies\n"}
{"Action":"output","Package":"ex/c","Test":"TestDies","Output":"    c_test.go:9: a line before\n"}
{"Action":"output","Package":"ex/c","Test":"TestDies","Output":"panic: Log in goroutine after TestX has completed\n"}
{"Action":"output","Package":"ex/c","Test":"TestDies","Output":"goroutine 7 [running]:\n"}
{"Action":"output","Package":"ex/c","Output":"FAIL\tex/c\t9.000s\n"}
{"Action":"fail","Package":"ex/c","Elapsed":9}
`

func TestABinaryThatDiesNamesItsUnendedTestsAndShowsThePanic(t *testing.T) {
	events, err := readEvents(strings.NewReader(diedStream), "stream")
	if err != nil {
		t.Fatal(err)
	}
	r := summarize(events)
	var out bytes.Buffer
	r.print(&out)
	if !strings.Contains(out.String(), "packages: 1 (1 failed, 0 without tests)\n") ||
		!strings.Contains(out.String(), "never ended (the test binary exited while they ran; their output is above):\n  TestDies  ex/c\n  TestQuiet  ex/c\n") {
		t.Errorf("summary:\n%s", out.String())
	}
	if !r.failed() {
		t.Error("failed() = false")
	}

	var printed bytes.Buffer
	p := newPrinter(&printed)
	for _, e := range events {
		p.event(e)
	}
	want := "--- NEVER ENDED: TestDies (the test binary exited while it ran)\n" +
		"panic: Log in goroutine after TestX has completed\ngoroutine 7 [running]:\n" +
		"--- NEVER ENDED: TestQuiet (the test binary exited while it ran)\n=== RUN   TestQuiet\n" +
		"FAIL\tex/c\t9.000s\nFAIL\tex/c\t9.000s\n"
	if diff := cmp.Diff(want, printed.String()); diff != "" {
		t.Errorf("printed (-want +got):\n%s", diff)
	}
}

func TestDeathLinesKeepsTheTailWithoutAPanic(t *testing.T) {
	var out []string
	for i := range 100 {
		out = append(out, strings.Repeat("x", i%3)+"\n")
	}
	if got := deathLines(out, 60); len(got) != 60 || &got[59] != &out[99] {
		t.Errorf("deathLines kept %d lines, want the last 60", len(got))
	}
}

// passedThenPanicked is a stream where test2json ends a test after the
// lines of a panic in another goroutine that killed the binary.
const passedThenPanicked = `{"Action":"run","Package":"ex/d","Test":"TestQuick"}
{"Action":"output","Package":"ex/d","Test":"TestQuick","Output":"--- PASS: TestQuick (1.00s)\n"}
{"Action":"output","Package":"ex/d","Test":"TestQuick","Output":"panic: runtime error: invalid memory address or nil pointer dereference\n"}
{"Action":"output","Package":"ex/d","Test":"TestQuick","Output":"goroutine 18004 [running]:\n"}
{"Action":"pass","Package":"ex/d","Test":"TestQuick","Elapsed":1}
{"Action":"run","Package":"ex/d","Test":"TestSlow"}
{"Action":"output","Package":"ex/d","Output":"FAIL\tex/d\t2.000s\n"}
{"Action":"fail","Package":"ex/d","Elapsed":2}
`

// TestAPanicAfterATestPassedIsShown: the panic that killed the binary is
// printed with the package's failure even when test2json filed it under a
// test that then passed.
func TestAPanicAfterATestPassedIsShown(t *testing.T) {
	events, err := readEvents(strings.NewReader(passedThenPanicked), "stream")
	if err != nil {
		t.Fatal(err)
	}
	var printed bytes.Buffer
	p := newPrinter(&printed)
	for _, e := range events {
		p.event(e)
	}
	if !strings.Contains(printed.String(), "panic: runtime error: invalid memory address or nil pointer dereference\ngoroutine 18004 [running]:\n") {
		t.Errorf("the panic is not printed:\n%s", printed.String())
	}
}
