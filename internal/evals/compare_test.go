package evals

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{`{"order_id":"7","amount_cents":6250}`, `{ "amount_cents" : 6250 , "order_id" : "7" }`}, // key order, whitespace
		{`{"n":1}`, `{"n":1.0}`},
		{`{"n":1}`, `{"n":1e0}`},
		{`{"n":0.1}`, `{"n":1e-1}`},
		{`{"n":0}`, `{"n":-0}`},
		{`{"a":[1,{"y":2,"x":1}]}`, `{"a":[1,{"x":1,"y":2}]}`},
		{`{"big":9007199254740993}`, `{"big":9007199254740992}`}, // past 2^53, float64 cannot tell them apart
	} {
		if Canonical(c.a) != Canonical(c.b) {
			t.Errorf("%s and %s: %s != %s", c.a, c.b, Canonical(c.a), Canonical(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{
		{`{"s":"a b"}`, `{"s":"a  b"}`}, // whitespace inside strings counts
		{`{"n":0.3}`, `{"n":0.30000000000000004}`},
		{`{"n":1}`, `{"n":"1"}`},
		{`[1,2]`, `[2,1]`},
		{`not json`, `not  json`},
		{`{"a":1} {"a":1}`, `{"a":1}`},
	} {
		if Canonical(c.a) == Canonical(c.b) {
			t.Errorf("%s and %s match: %s", c.a, c.b, Canonical(c.a))
		}
	}
	if got := Canonical(`{"b":true,"a":null,"c":"<x>"}`); got != `{"a":null,"b":true,"c":"\u003cx\u003e"}` {
		t.Errorf("Canonical = %s", got)
	}
}

func TestSimilarity(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want float64
	}{
		{"Done. Refunded $62.50 of order 7.", "done, refunded $62.50 of order 7", 1},
		{"", "", 1},
		{"a b c d", "a b x d", 0.75},
		{"refund", "", 0},
	} {
		if got := Similarity(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Similarity(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	rec := decodeFile(t, filepath.Join(recorded, "approval_turn.json"))
	same := Compare(rec, rec)
	if same.Status != "same" || len(same.Calls)+len(same.Approvals)+len(same.Decisions) != 0 || same.answersChanged() != 0 {
		t.Fatalf("a case against itself: %+v", same)
	}
	m := Metrics([]CaseReport{same})
	if m["cost_ratio"] != 1 || m["tokens_ratio"] != 1 || m["calls_added"] != 0 || m["similarity_min"] != 1 {
		t.Errorf("metrics of an unchanged run: %v", m)
	}

	// A run that skipped the read, wrote other arguments, was asked no
	// approval, and answered otherwise.
	run := &Case{Header: rec.Header}
	run.Header.SessionID = "eval-1"
	for _, r := range rec.Records {
		switch {
		case r.Type == TypeToolCall && r.ToolName == "read_gate":
			continue
		case r.Type == TypeToolCall && r.ToolName == "approve_write":
			r.Arguments = `{"name":"other"}`
		case r.Type == TypeApproval:
			continue
		case r.Type == TypeTurn && r.Turn == "turn-2":
			u := *r.Usage
			u.TotalTokens *= 3
			r.Usage = &u
			r.Answer = "echo: thanks a lot"
		}
		run.Records = append(run.Records, r)
	}
	got := Compare(rec, run)
	if got.Status != "changed" {
		t.Errorf("status %s", got.Status)
	}
	var calls []string
	for _, c := range got.Calls {
		calls = append(calls, c.Change+" "+c.Tool)
	}
	if strings.Join(calls, ", ") != "removed read_gate, changed approve_write" {
		t.Errorf("calls: %v", calls)
	}
	if len(got.Approvals) != 1 || got.Approvals[0].Change != "removed" {
		t.Errorf("approvals: %+v", got.Approvals)
	}
	if len(got.Answers) != 2 || !got.Answers[0].Exact || got.Answers[1].Exact || got.Answers[1].Similarity != 0.5 {
		t.Errorf("answers: %+v", got.Answers)
	}
	m = Metrics([]CaseReport{got})
	if m["calls_removed"] != 1 || m["calls_changed"] != 1 || m["writes_changed"] != 1 || m["writes_added"] != 0 || m["approvals_removed"] != 1 || m["answers_changed"] != 1 || m["tokens_ratio"] <= 1 {
		t.Errorf("metrics: %v", m)
	}

	// A rule that now denies the write.
	rules := decodeFile(t, filepath.Join(recorded, "rules_turns.json"))
	denied := &Case{Header: rules.Header}
	for _, r := range rules.Records {
		if r.Type == TypeToolCall && r.Rule != nil && r.Rule.Decision == "allow" {
			r.Rule = &Rule{Rule: "approval_rules[0]", Decision: "deny"}
		}
		denied.Records = append(denied.Records, r)
	}
	if d := Compare(rules, denied).Decisions; len(d) != 1 || d[0].Recorded != "allow" || d[0].Replayed != "deny" {
		t.Errorf("decisions: %+v", d)
	}
}

func TestChecks(t *testing.T) {
	cs, err := ParseChecks("writes_added>0, cost_ratio>1.2,similarity_min<0.8")
	if err != nil || len(cs) != 3 {
		t.Fatal(cs, err)
	}
	m := map[string]float64{"writes_added": 0, "cost_ratio": 1.3, "similarity_min": 0.9}
	var failed []string
	for _, c := range cs {
		if c.Fails(m) {
			failed = append(failed, c.String())
		}
	}
	if strings.Join(failed, " ") != "cost_ratio>1.2" {
		t.Errorf("failed: %v", failed)
	}
	for in, want := range map[string]string{
		"writes>0":          `unknown metric "writes"`,
		"writes_added":      "want METRIC>VALUE",
		"cost_ratio>lots":   `the value "lots" is not a number`,
		"writes_added=>0":   "unknown metric",
		"diverged>0,bogus<": `the value "" is not a number`,
	} {
		if _, err := ParseChecks(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseChecks(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestMarkdownCodeSpansHoldAnyText(t *testing.T) {
	for in, want := range map[string]string{
		"refund {}":        "`refund {}`",
		"a `b` c":          "``a `b` c``",
		"x``y":             "```x``y```",
		"`edge`":           "`` `edge` ``",
		"two\nlines\r\nok": "`two lines ok`",
	} {
		if got := code(in); got != want {
			t.Errorf("code(%q) = %q, want %q", in, got, want)
		}
	}
}
