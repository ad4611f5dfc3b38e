package evals

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Report is what eval run writes: each case's comparison, the metrics over
// all of them, and the checks.
type Report struct {
	Format  string             `json:"format"` // "dex-eval-report/1"
	Dataset string             `json:"dataset"`
	Agent   string             `json:"agent"`
	Config  string             `json:"config"`
	Cases   []CaseReport       `json:"cases"`
	Metrics map[string]float64 `json:"metrics"`
	Checks  []CheckResult      `json:"checks"`
	// Passed is false when a check failed.
	Passed bool `json:"passed"`
	// ModelCache counts the model calls answered from --model-cache and
	// the ones made.
	ModelCache *CacheStats `json:"model_cache,omitempty"`
}

// CacheStats count a model cache's answers.
type CacheStats struct {
	Dir    string `json:"dir"`
	Hits   int    `json:"hits"`
	Misses int    `json:"misses"`
}

// ReportFormat is the version of the report format.
const ReportFormat = "dex-eval-report/1"

// CheckResult is one check and whether it failed.
type CheckResult struct {
	Check  string  `json:"check"`
	Value  float64 `json:"value"`
	Failed bool    `json:"failed"`
}

// NewReport sums the cases and runs the checks.
func NewReport(dataset, agent, cfg string, cases []CaseReport, checks []Check) *Report {
	r := &Report{Format: ReportFormat, Dataset: dataset, Agent: agent, Config: cfg, Cases: cases, Metrics: Metrics(cases), Passed: true}
	for k, v := range r.Metrics {
		if math.IsInf(v, 0) {
			r.Metrics[k] = math.MaxFloat64 // JSON has no infinity: a ratio over a recorded 0
		}
	}
	for _, c := range checks {
		res := CheckResult{Check: c.String(), Value: r.Metrics[c.Metric], Failed: c.Fails(r.Metrics)}
		r.Passed = r.Passed && !res.Failed
		r.Checks = append(r.Checks, res)
	}
	return r
}

// WriteMarkdown writes the report's summary for people: the totals, the
// checks, and what changed in each case.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Eval run: %s against %s\n\n", r.Agent, r.Dataset)
	verdict := "passed"
	if !r.Passed {
		verdict = "FAILED"
	}
	m := r.Metrics
	fmt.Fprintf(&b, "%d case(s): %d changed, %d diverged, %d failed. Checks %s.\n\n", int(m["cases"]), int(m["cases_changed"]), int(m["diverged"]), int(m["failures"]), verdict)
	if c := r.ModelCache; c != nil {
		fmt.Fprintf(&b, "Model cache %s: %d call(s) answered from it, %d made.\n\n", c.Dir, c.Hits, c.Misses)
	}
	if len(r.Checks) > 0 {
		b.WriteString("| Check | Value | Result |\n|---|---|---|\n")
		for _, c := range r.Checks {
			res := "ok"
			if c.Failed {
				res = "**failed**"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Check, num(c.Value), res)
		}
		b.WriteString("\n")
	}
	b.WriteString("| Metric | Value |\n|---|---|\n")
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "| %s | %s |\n", k, num(m[k]))
	}
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "\n## %s: %s\n\n", c.Case, c.Status)
		if c.Session != "" {
			fmt.Fprintf(&b, "Replayed as %s.", code(c.Session))
		}
		fmt.Fprintf(&b, " Turns %d -> %d, model calls %d -> %d, tokens %d -> %d, cost %s -> %s, Step time %d ms -> %d ms.\n\n",
			c.Recorded.Turns, c.Replayed.Turns, c.Recorded.ModelCalls, c.Replayed.ModelCalls, c.Recorded.TotalTokens, c.Replayed.TotalTokens,
			usd(c.Recorded.CostMicros), usd(c.Replayed.CostMicros), c.Recorded.LatencyMs, c.Replayed.LatencyMs)
		if c.Error != "" {
			fmt.Fprintf(&b, "- error: %s\n", c.Error)
		}
		if d := c.DivergedAt; d != nil {
			switch d.Kind {
			case "call":
				fmt.Fprintf(&b, "- **diverged** at call %s (%s): not in the record, so it was not run\n", code(d.Tool+" "+d.Arguments), d.Effect)
			case "approval":
				fmt.Fprintf(&b, "- **diverged** at the approval of %s: the record has no answer, so it was rejected and not run\n", code(d.Tool+" "+d.Arguments))
			default:
				fmt.Fprintf(&b, "- **diverged** at the question %q: the record has no answer, so it was declined\n", d.Question)
			}
		}
		for _, x := range c.Calls {
			switch x.Change {
			case "added":
				fmt.Fprintf(&b, "- call %d added: %s%s\n", x.Index, code(x.Tool+" "+x.Replayed), writeMark(x.Write))
			case "removed":
				fmt.Fprintf(&b, "- call %d removed: %s%s\n", x.Index, code(x.Tool+" "+x.Recorded), writeMark(x.Write))
			case "changed":
				fmt.Fprintf(&b, "- call %d changed: %s %s -> %s%s\n", x.Index, code(x.Tool), code(x.Recorded), code(x.Replayed), writeMark(x.Write))
			}
		}
		for _, a := range c.Approvals {
			fmt.Fprintf(&b, "- approval %s: %s\n", a.Change, code(a.Tool+" "+a.Arguments))
		}
		for _, d := range c.Decisions {
			fmt.Fprintf(&b, "- rule decision on %s: %s -> %s\n", code(d.Tool+" "+d.Arguments), orNone(d.Recorded), orNone(d.Replayed))
		}
		for _, a := range c.Answers {
			if !a.Exact {
				fmt.Fprintf(&b, "- answer of turn %d changed (similarity %s):\n  - recorded: %s\n  - replayed: %s\n", a.Turn, num(a.Similarity), quote(a.Recorded), quote(a.Replayed))
			}
		}
		for _, u := range c.Unanswered {
			fmt.Fprintf(&b, "- %s with no recorded answer: %s\n", u.Kind, code(strings.TrimSpace(u.Tool+" "+u.Arguments+u.Question)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMark(write bool) string {
	if write {
		return " (a write)"
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func quote(s string) string {
	if s == "" {
		return "(none)"
	}
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return strings.ReplaceAll(s, "\n", " ")
}

func num(v float64) string {
	if v == math.MaxFloat64 {
		return "inf"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

func usd(micros int64) string { return fmt.Sprintf("$%.4f", float64(micros)/1e6) }

// code is text as a Markdown code span: on one line, fenced with more
// backticks than it holds in a row, so no text of a report (arguments are
// the model's) can end it early or add markup.
func code(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
