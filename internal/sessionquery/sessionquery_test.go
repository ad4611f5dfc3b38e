package sessionquery

import (
	"strings"
	"testing"
	"time"
)

var agents = map[string]string{"orders": "OrdersAgent", "returns": "ReturnsAgent", "echo": "EchoAgent"}

func TestParseAndVisibility(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		expr string
		runs bool
		want string
	}{
		{"agent=orders status=all since=7d", false, "WorkflowType IN ('OrdersAgent') AND ExecutionStatus != 'ContinuedAsNew' AND StartTime > '2026-11-28T12:00:00Z'"},
		{"agent=orders agent=returns", true, "WorkflowType IN ('OrdersAgent', 'ReturnsAgent')"},
		{"status=running", false, "WorkflowType IN ('EchoAgent', 'OrdersAgent', 'ReturnsAgent') AND ExecutionStatus = 'Running'"},
		{"status=closed since=90m", false, "WorkflowType IN ('EchoAgent', 'OrdersAgent', 'ReturnsAgent') AND ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew' AND StartTime > '2026-12-05T10:30:00Z'"},
		{"status=closed", true, "WorkflowType IN ('EchoAgent', 'OrdersAgent', 'ReturnsAgent') AND ExecutionStatus != 'Running'"},
		{"", false, "WorkflowType IN ('EchoAgent', 'OrdersAgent', 'ReturnsAgent') AND ExecutionStatus != 'ContinuedAsNew'"},
	} {
		f, err := Parse(c.expr, StatusAll, agents)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if got := f.Visibility(now, c.runs); got != c.want {
			t.Errorf("%q (runs %v):\n got %s\nwant %s", c.expr, c.runs, got, c.want)
		}
	}
}

func TestParseRefusesWhatItCannotRead(t *testing.T) {
	for expr, want := range map[string]string{
		"agent=billing":         `the config has no agent "billing" (it has echo, orders, returns)`,
		"status=done":           "want running, closed or all",
		"since=-1d":             "want a positive duration",
		"since=soon":            "want a positive duration",
		"agent":                 "want key=value",
		"agent=":                "want key=value",
		"owner=me":              `unknown key "owner"`,
		"status=all status=all": "status is given twice",
	} {
		if _, err := Parse(expr, StatusAll, agents); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", expr, err, want)
		}
	}
	if _, err := Parse("", StatusAll, nil); err == nil {
		t.Error("a config without agents gave a filter")
	}
}
