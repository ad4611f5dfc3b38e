package evals

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// CaseReport compares a changed agent's run of a case with the record.
type CaseReport struct {
	// Case is the recorded session; Session the run's.
	Case    string `json:"case"`
	Session string `json:"session,omitempty"`
	// Status is "same" (nothing compared differs), "changed", "diverged"
	// (the run asked for a call the record does not hold, and it was not
	// run), "failed" (a turn failed, or the run could not finish) or
	// "timed_out".
	Status string `json:"status"`
	// DivergedAt is the first call of the run that the record did not
	// hold.
	DivergedAt *Unrecorded `json:"diverged_at,omitempty"`
	// Calls are the tool calls added, removed and changed, in order.
	Calls []CallChange `json:"calls,omitempty"`
	// Approvals are the approvals asked in one and not the other.
	Approvals []ApprovalChange `json:"approvals,omitempty"`
	// Decisions are the approval rules' decisions that changed on calls
	// both made.
	Decisions []DecisionChange `json:"decisions,omitempty"`
	// Answers compare the turns' final answers, in order.
	Answers []AnswerChange `json:"answers,omitempty"`
	// Unanswered are the approvals and questions of the run that the
	// record had no answer for: rejected or declined.
	Unanswered []Unrecorded `json:"unanswered,omitempty"`
	// Unrecorded are the calls of the run the record did not hold.
	Unrecorded []Unrecorded `json:"unrecorded_calls,omitempty"`
	Recorded   Totals       `json:"recorded"`
	Replayed   Totals       `json:"replayed"`
	// Error says why the run failed or stopped.
	Error string `json:"error,omitempty"`
}

// CallChange is one difference between the calls of the record and of the
// run. Index is the call's position (from 1) in the run, or in the record
// for a removed call.
type CallChange struct {
	Change   string `json:"change"` // added, removed, changed
	Index    int    `json:"index"`
	Tool     string `json:"tool"`
	Effect   string `json:"effect,omitempty"`
	Recorded string `json:"recorded_arguments,omitempty"`
	Replayed string `json:"replayed_arguments,omitempty"`
	Write    bool   `json:"write"`
}

// ApprovalChange is an approval asked in one and not the other.
type ApprovalChange struct {
	Change    string `json:"change"` // added, removed
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
}

// DecisionChange is an approval rule's decision that changed on a call
// both made.
type DecisionChange struct {
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Recorded  string `json:"recorded"`
	Replayed  string `json:"replayed"`
}

// AnswerChange compares one turn's final answer.
type AnswerChange struct {
	Turn       int     `json:"turn"` // from 1, in order
	Exact      bool    `json:"exact"`
	Similarity float64 `json:"similarity"`
	Recorded   string  `json:"recorded"`
	Replayed   string  `json:"replayed"`
}

// Unrecorded is a call, approval or question of the run that the record
// did not hold.
type Unrecorded struct {
	Kind      string `json:"kind"` // call, approval, question
	Tool      string `json:"tool,omitempty"`
	Effect    string `json:"effect,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Question  string `json:"question,omitempty"`
}

// Totals are what one side spent and did.
type Totals struct {
	Turns       int   `json:"turns"`
	FailedTurns int   `json:"failed_turns"`
	ToolCalls   int   `json:"tool_calls"`
	Writes      int   `json:"writes"`
	Approvals   int   `json:"approvals"`
	Usage             // model calls and tokens
	CostMicros  int64 `json:"cost_micros"`
	// LatencyMs is the time the model and tool Steps took.
	LatencyMs int64 `json:"latency_ms"`
}

func (t *Totals) add(u Totals) {
	t.Turns += u.Turns
	t.FailedTurns += u.FailedTurns
	t.ToolCalls += u.ToolCalls
	t.Writes += u.Writes
	t.Approvals += u.Approvals
	t.Usage.add(u.Usage)
	t.CostMicros += u.CostMicros
	t.LatencyMs += u.LatencyMs
}

// isWrite reports a call whose effect is not a read: any write, and an
// unclassified call.
func isWrite(effect string) bool { return effect != "read" && effect != "" }

// totals sums a case.
func totals(c *Case) Totals {
	var t Totals
	for _, r := range c.Records {
		switch r.Type {
		case TypeTurn:
			t.Turns++
			if r.Status == "failed" {
				t.FailedTurns++
			}
			if r.Usage != nil {
				t.Usage.add(*r.Usage)
			}
			t.CostMicros += r.CostMicros
			t.LatencyMs += r.ModelMs + r.ToolMs
		case TypeToolCall:
			t.ToolCalls++
			if isWrite(r.Effect) && r.Status != "rejected" && r.Status != "" {
				t.Writes++
			}
		case TypeApproval:
			t.Approvals++
		}
	}
	return t
}

func recordsOf(c *Case, typ string) []Record {
	var out []Record
	for _, r := range c.Records {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// Compare compares a run of a case with its record.
func Compare(rec, run *Case) CaseReport {
	rep := CaseReport{Case: rec.Header.SessionID, Session: run.Header.SessionID, Recorded: totals(rec), Replayed: totals(run)}
	rc, nc := recordsOf(rec, TypeToolCall), recordsOf(run, TypeToolCall)
	pairs := align(rc, nc)
	i, j := 0, 0
	for _, p := range append(pairs, [2]int{len(rc), len(nc)}) {
		for ; i < p[0]; i++ {
			rep.Calls = append(rep.Calls, CallChange{Change: "removed", Index: i + 1, Tool: rc[i].ToolName, Effect: rc[i].Effect, Recorded: rc[i].Arguments, Write: isWrite(rc[i].Effect)})
		}
		for ; j < p[1]; j++ {
			rep.Calls = append(rep.Calls, CallChange{Change: "added", Index: j + 1, Tool: nc[j].ToolName, Effect: nc[j].Effect, Replayed: nc[j].Arguments, Write: isWrite(nc[j].Effect)})
		}
		if p[0] == len(rc) {
			break
		}
		a, b := rc[p[0]], nc[p[1]]
		if Canonical(a.Arguments) != Canonical(b.Arguments) {
			rep.Calls = append(rep.Calls, CallChange{Change: "changed", Index: p[1] + 1, Tool: b.ToolName, Effect: b.Effect, Recorded: a.Arguments, Replayed: b.Arguments, Write: isWrite(b.Effect)})
		}
		if da, db := decision(a.Rule), decision(b.Rule); da != db {
			rep.Decisions = append(rep.Decisions, DecisionChange{Tool: b.ToolName, Arguments: b.Arguments, Recorded: da, Replayed: db})
		}
		i, j = p[0]+1, p[1]+1
	}
	// Approvals asked, as a multiset of (tool, arguments).
	asked := map[string]int{}
	for _, r := range recordsOf(rec, TypeApproval) {
		asked[r.ToolName+"\x00"+Canonical(r.Arguments)]++
	}
	for _, r := range recordsOf(run, TypeApproval) {
		k := r.ToolName + "\x00" + Canonical(r.Arguments)
		if asked[k] > 0 {
			asked[k]--
			continue
		}
		rep.Approvals = append(rep.Approvals, ApprovalChange{Change: "added", Tool: r.ToolName, Arguments: r.Arguments})
	}
	for _, r := range recordsOf(rec, TypeApproval) {
		k := r.ToolName + "\x00" + Canonical(r.Arguments)
		if asked[k] > 0 {
			asked[k]--
			rep.Approvals = append(rep.Approvals, ApprovalChange{Change: "removed", Tool: r.ToolName, Arguments: r.Arguments})
		}
	}
	rt, nt := recordsOf(rec, TypeTurn), recordsOf(run, TypeTurn)
	for k := 0; k < max(len(rt), len(nt)); k++ {
		var a, b string
		if k < len(rt) {
			a = rt[k].Answer
		}
		if k < len(nt) {
			b = nt[k].Answer
		}
		rep.Answers = append(rep.Answers, AnswerChange{Turn: k + 1, Exact: a == b && k < len(rt) && k < len(nt), Similarity: Similarity(a, b), Recorded: a, Replayed: b})
	}
	rep.Status = "same"
	if len(rep.Calls) > 0 || len(rep.Approvals) > 0 || len(rep.Decisions) > 0 || rep.answersChanged() > 0 {
		rep.Status = "changed"
	}
	if rep.Replayed.FailedTurns > 0 {
		rep.Status = "failed"
	}
	return rep
}

func decision(r *Rule) string {
	if r == nil {
		return ""
	}
	if r.ShadowDecision != "" {
		return r.Decision + " (shadow " + r.ShadowDecision + ")"
	}
	return r.Decision
}

func (r CaseReport) answersChanged() int {
	n := 0
	for _, a := range r.Answers {
		if !a.Exact {
			n++
		}
	}
	return n
}

// align pairs the calls of the record and of the run by tool name, in
// order, as a longest common subsequence: pairs of indexes, increasing.
func align(a, b []Record) [][2]int {
	n, m := len(a), len(b)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case a[i].ToolName == b[j].ToolName:
				l[i][j] = l[i+1][j+1] + 1
			case l[i+1][j] >= l[i][j+1]:
				l[i][j] = l[i+1][j]
			default:
				l[i][j] = l[i][j+1]
			}
		}
	}
	var out [][2]int
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i].ToolName == b[j].ToolName:
			out = append(out, [2]int{i, j})
			i, j = i+1, j+1
		case l[i+1][j] >= l[i][j+1]:
			i++
		default:
			j++
		}
	}
	return out
}

// Similarity is how alike two answers are, from 0 to 1: one minus the
// word-level edit distance over the longer answer's length, after
// lowercasing and dropping punctuation. Two empty answers are 1.
func Similarity(a, b string) float64 {
	wa, wb := words(a), words(b)
	if len(wa) == 0 && len(wb) == 0 {
		return 1
	}
	const maxWords = 4000
	wa, wb = wa[:min(len(wa), maxWords)], wb[:min(len(wb), maxWords)]
	prev := make([]int, len(wb)+1)
	cur := make([]int, len(wb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(wa); i++ {
		cur[0] = i
		for j := 1; j <= len(wb); j++ {
			cost := 1
			if wa[i-1] == wb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	d := prev[len(wb)]
	s := 1 - float64(d)/float64(max(len(wa), len(wb)))
	return math.Round(s*1000) / 1000
}

// words splits an answer into lowercase words, keeping amounts such as
// $62.50 whole and dropping a sentence's final period.
func words(s string) []string {
	ws := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '$' && r != '.' })
	out := ws[:0]
	for _, w := range ws {
		if w = strings.Trim(w, "."); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// Metrics are the figures checks gate on, over all cases.
func Metrics(reports []CaseReport) map[string]float64 {
	m := map[string]float64{}
	var rec, run Totals
	minSim := 1.0
	for _, r := range reports {
		rec.add(r.Recorded)
		run.add(r.Replayed)
		for _, c := range r.Calls {
			m["calls_"+c.Change]++
			if c.Write && c.Change == "added" {
				m["writes_added"]++
			}
			if c.Write && c.Change == "changed" {
				m["writes_changed"]++
			}
		}
		for _, a := range r.Approvals {
			m["approvals_"+a.Change]++
		}
		m["decisions_changed"] += float64(len(r.Decisions))
		m["answers_changed"] += float64(r.answersChanged())
		for _, a := range r.Answers {
			minSim = math.Min(minSim, a.Similarity)
		}
		m["unanswered"] += float64(len(r.Unanswered))
		m["unrecorded_calls"] += float64(len(r.Unrecorded))
		switch r.Status {
		case "diverged":
			m["diverged"]++
		case "failed", "timed_out":
			m["failures"]++
		}
		if r.Status != "same" {
			m["cases_changed"]++
		}
	}
	m["cases"] = float64(len(reports))
	m["similarity_min"] = minSim
	ratio := func(a, b int64) float64 {
		if b == 0 {
			if a == 0 {
				return 1
			}
			return math.Inf(1)
		}
		return math.Round(float64(a)/float64(b)*1000) / 1000
	}
	m["cost_ratio"] = ratio(run.CostMicros, rec.CostMicros)
	m["tokens_ratio"] = ratio(run.TotalTokens, rec.TotalTokens)
	m["turns_ratio"] = ratio(int64(run.Turns), int64(rec.Turns))
	m["model_calls_ratio"] = ratio(run.ModelCalls, rec.ModelCalls)
	m["latency_ratio"] = ratio(run.LatencyMs, rec.LatencyMs)
	return m
}

// MetricNames are the names a check may use.
var MetricNames = []string{"cases", "cases_changed", "diverged", "failures", "calls_added", "calls_removed", "calls_changed",
	"writes_added", "writes_changed", "approvals_added", "approvals_removed", "decisions_changed", "answers_changed",
	"similarity_min", "unanswered", "unrecorded_calls", "cost_ratio", "tokens_ratio", "turns_ratio", "model_calls_ratio", "latency_ratio"}

// Check is one threshold a CI job gates on: metric op value.
type Check struct {
	Metric string
	Op     string // >, >=, <, <=, ==, !=
	Value  float64
}

func (c Check) String() string {
	return c.Metric + c.Op + strconv.FormatFloat(c.Value, 'g', -1, 64)
}

// Fails reports whether the metrics trip the check.
func (c Check) Fails(m map[string]float64) bool {
	v := m[c.Metric]
	switch c.Op {
	case ">":
		return v > c.Value
	case ">=":
		return v >= c.Value
	case "<":
		return v < c.Value
	case "<=":
		return v <= c.Value
	case "==":
		return v == c.Value
	case "!=":
		return v != c.Value
	}
	return false
}

// ParseChecks reads comma-separated checks such as
// "writes_added>0,cost_ratio>1.2": each fails the run when it holds.
func ParseChecks(s string) ([]Check, error) {
	var out []Check
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var c Check
		for _, op := range []string{">=", "<=", "==", "!=", ">", "<"} {
			if k, v, ok := strings.Cut(part, op); ok {
				c.Metric, c.Op = strings.TrimSpace(k), op
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return nil, fmt.Errorf("%q: the value %q is not a number", part, strings.TrimSpace(v))
				}
				c.Value = f
				break
			}
		}
		if c.Op == "" {
			return nil, fmt.Errorf("%q: want METRIC>VALUE (or >=, <, <=, ==, !=), such as writes_added>0", part)
		}
		known := false
		for _, n := range MetricNames {
			known = known || n == c.Metric
		}
		if !known {
			return nil, fmt.Errorf("%q: unknown metric %q (want one of %s)", part, c.Metric, strings.Join(MetricNames, ", "))
		}
		out = append(out, c)
	}
	return out, nil
}
