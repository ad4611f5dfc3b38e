// Command benchreport reads the output of `go test -bench` (one or more
// files, or standard input) and prints make bench's summary: one table of
// the figures the project tracks, each as a percentile or as a ratio
// against its baseline measured in the same run, with its goal, then every
// benchmark's medians. A benchmark run several times (-count) counts by
// the median of its runs.
//
//	go run ./internal/benchreport bench.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	var in []io.Reader
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = append(in, f)
	}
	if len(in) == 0 {
		in = append(in, os.Stdin)
	}
	runs, err := parse(io.MultiReader(in...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(2)
	}
	report(os.Stdout, runs)
}

// results holds each benchmark's values by unit ("ns/op", "p50-ms", ...),
// one per run.
type results map[string]map[string][]float64

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// parse reads go test -bench output; lines that are not results are
// skipped.
func parse(r io.Reader) (results, error) {
	out := results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		if len(fields)%2 != 0 {
			continue
		}
		for i := 0; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			if out[m[1]] == nil {
				out[m[1]] = map[string][]float64{}
			}
			out[m[1]][fields[i+1]] = append(out[m[1]][fields[i+1]], v)
		}
	}
	return out, sc.Err()
}

// median returns a benchmark's median value of unit, and whether it ran.
func (r results) median(name, unit string) (float64, bool) {
	vs := r[name][unit]
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// figure is one row of the summary.
type figure struct {
	name, value, baseline, result, goal string
}

func report(w io.Writer, r results) {
	var rows []figure
	pct := func(name, what, prefix, goal string) {
		p50, ok1 := r.median(name, prefix+"p50-ms")
		p99, ok2 := r.median(name, prefix+"p99-ms")
		if ok1 && ok2 {
			rows = append(rows, figure{what, fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", p50, p99), "", "", goal})
		}
	}
	ratio := func(what, name, unit, base, baseUnit, goal string) {
		v, ok1 := r.median(name, unit)
		b, ok2 := r.median(base, baseUnit)
		if ok1 && ok2 && b != 0 {
			rows = append(rows, figure{what, format(v, unit), format(b, baseUnit) + " (" + short(base) + ")", fmt.Sprintf("%.2fx", v/b), goal})
		}
	}
	value := func(what, name, unit, goal string) {
		if v, ok := r.median(name, unit); ok {
			rows = append(rows, figure{what, format(v, unit), "", "", goal})
		}
	}
	pct("BenchmarkCancelTurn", "cancel_turn until the model call sees its context end", "model-ctx-", "p50 <= 100 ms, p99 <= 250 ms")
	pct("BenchmarkCancelTurn", "cancel_turn until turn_cancelled reaches an SSE client", "", "keep (p50 ~11 ms)")
	if n50, ok := r.median("BenchmarkCancelProviderStream", "deltas-after-cancel-p50"); ok {
		n99, _ := r.median("BenchmarkCancelProviderStream", "deltas-after-cancel-p99")
		c50, _ := r.median("BenchmarkCancelProviderStream", "stream-close-p50-ms")
		c99, _ := r.median("BenchmarkCancelProviderStream", "stream-close-p99-ms")
		rows = append(rows, figure{"tokens a provider streaming 100/s still generates after cancel_turn",
			fmt.Sprintf("p50 %.0f, p99 %.0f (its stream closed after p50 %.1f ms, p99 %.1f ms)", n50, n99, c50, c99), "", "", "stop the spend"})
	}
	pct("BenchmarkFirstDelta", "send until the first text_delta at an SSE client", "", "p50 <= 5 ms, p99 <= 12 ms")
	ratio("session turn against bare Temporal", "BenchmarkSessionTurn/telemetry=none", "ns/op", "BenchmarkBareTemporalTurn", "ns/op", "<= 1.10x")
	ratio("session turn, active_step_search_mode disabled, against bare Temporal", "BenchmarkSessionTurn/search=disabled", "ns/op", "BenchmarkBareTemporalTurn", "ns/op", "report")
	ratio("ActiveStepTypes upserts (search on against off)", "BenchmarkSessionTurn/telemetry=none", "ns/op", "BenchmarkSessionTurn/search=disabled", "ns/op", "report")
	ratio("history events per turn", "BenchmarkSessionTurn/telemetry=none", "events/turn", "BenchmarkBareTemporalTurn", "events/turn", "report")
	ratio("workflow tasks per turn", "BenchmarkSessionTurn/telemetry=none", "wftasks/turn", "BenchmarkBareTemporalTurn", "wftasks/turn", "report")
	ratio("metrics on", "BenchmarkSessionTurn/telemetry=metrics", "ns/op", "BenchmarkSessionTurn/telemetry=none", "ns/op", "report")
	ratio("metrics and traces on", "BenchmarkSessionTurn/telemetry=metrics+traces", "ns/op", "BenchmarkSessionTurn/telemetry=none", "ns/op", "report")
	for _, name := range sortedNames(r, "BenchmarkAdapterTurn/runner=") {
		runner := strings.TrimPrefix(name, "BenchmarkAdapterTurn/runner=")
		base := "BenchmarkAdapterTurn/runner=stepwise"
		if strings.HasSuffix(runner, "-responses") {
			base = "BenchmarkAdapterTurn/runner=stepwise-responses"
		}
		if name != base {
			ratio("orders turn on "+runner, name, "ns/op", base, "ns/op", "report")
		}
	}
	for _, name := range sortedNames(r, "BenchmarkColdStart/") {
		value("runner cold start, "+strings.TrimPrefix(name, "BenchmarkColdStart/"), name, "ns/op", "report")
	}
	for _, d := range []struct{ name, what string }{
		{"BenchmarkTurnAtDepth", "SQLite"},
		{"BenchmarkTurnAtDepthCompacted", "SQLite, with compaction"},
		{"BenchmarkTurnAtDepthPostgres", "PostgreSQL"},
	} {
		for _, name := range sortedNames(r, d.name+"/depth=") {
			depth := strings.TrimPrefix(name, d.name+"/depth=")
			what := "turn at depth " + depth + " against depth 10 to 30 (" + d.what + ")"
			value(what, name, "median-ratio", "<= 1.1")
			value(what+", history bytes a turn adds", name, "bytes-ratio", "<= 1.1")
			value("fork at depth "+depth+" against a session 10 to 30 turns deep ("+d.what+")", name, "fork-ratio", "<= 1.2")
			value("fork at depth "+depth+" against a session of 60 turns, whose window is as full ("+d.what+")", name, "fork-window-ratio", "report")
			value("fork of a session 10 to 30 turns deep, median ("+d.what+")", name, "fork-shallow-ms", "report")
		}
	}
	for _, store := range []string{"sqlite", "postgres"} {
		ratio("fork in the message store ("+store+"), depth 2000 against depth 10", "BenchmarkFork/"+store+"/depth=2000", "ns/op", "BenchmarkFork/"+store+"/depth=10", "ns/op", "report")
	}
	for _, name := range sortedNames(r, "BenchmarkTurnAtDepthHTTP/store=") {
		store := strings.TrimPrefix(name, "BenchmarkTurnAtDepthHTTP/store=")
		value("over HTTP, "+store+": a deep session's late turn against a new session's", name, "depth-ratio", "<= 1.1")
		value("over HTTP, "+store+": a new session after the deep one against its early turns", name, "age-ratio", "<= 1.1")
	}
	for _, name := range sortedNames(r, "BenchmarkLoad/") {
		value("echo turns/s over HTTP, "+strings.TrimPrefix(name, "BenchmarkLoad/"), name, "turns/s", "report")
	}
	value("memory per cached session (engine + worker, 5 turns of 4 KiB)", "BenchmarkCachedSessionMemory", "KiB/session", "<= 100 KiB")

	fmt.Fprintln(w, "| Figure | Value | Baseline (same run) | Ratio | Goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, f := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", f.name, f.value, f.baseline, f.result, f.goal)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Benchmark | Medians |")
	fmt.Fprintln(w, "|---|---|")
	for _, name := range sortedNames(r, "Benchmark") {
		var parts []string
		for _, unit := range slices.Sorted(maps.Keys(r[name])) {
			v, _ := r.median(name, unit)
			parts = append(parts, format(v, unit))
		}
		fmt.Fprintf(w, "| %s | %s |\n", name, strings.Join(parts, ", "))
	}
}

func sortedNames(r results, prefix string) []string {
	var out []string
	for name := range r {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// format renders a value with its unit, ns/op as milliseconds.
func format(v float64, unit string) string {
	if unit == "ns/op" {
		return fmt.Sprintf("%.2f ms/op", v/1e6)
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
}

func short(name string) string { return strings.TrimPrefix(name, "Benchmark") }
