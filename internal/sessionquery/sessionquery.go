// Package sessionquery parses the session filters that commands over many
// sessions take (eval capture --query, replay-check --from-visibility),
// such as "agent=orders status=all since=7d", into a Temporal visibility
// query.
package sessionquery

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Filter selects sessions.
type Filter struct {
	// FlowTypes are the workflow types of the agents named (of every
	// agent of the config when the expression names none).
	FlowTypes []string
	// Status is "running", "closed" or "all".
	Status string
	// Since keeps sessions started this long before now (0: any time).
	Since time.Duration
}

// Statuses a filter takes.
const (
	StatusRunning = "running"
	StatusClosed  = "closed"
	StatusAll     = "all"
)

// Parse reads space-separated key=value terms: agent=NAME (repeatable),
// status=running|closed|all (default def), since=DURATION (7d, 12h, 30m).
// agents maps an agent's name to its flow type; all are the flow types of
// every agent, used when no agent is named.
func Parse(expr, def string, agents map[string]string) (Filter, error) {
	f := Filter{Status: def}
	seen := map[string]bool{}
	for _, term := range strings.Fields(expr) {
		key, value, ok := strings.Cut(term, "=")
		if !ok || value == "" {
			return f, fmt.Errorf("%q: want key=value, such as agent=orders, status=all or since=7d", term)
		}
		if key != "agent" && seen[key] {
			return f, fmt.Errorf("%s is given twice", key)
		}
		seen[key] = true
		switch key {
		case "agent":
			ft, ok := agents[value]
			if !ok {
				return f, fmt.Errorf("agent=%s: the config has no agent %q (it has %s)", value, value, names(agents))
			}
			if !slices.Contains(f.FlowTypes, ft) {
				f.FlowTypes = append(f.FlowTypes, ft)
			}
		case "status":
			if value != StatusRunning && value != StatusClosed && value != StatusAll {
				return f, fmt.Errorf("status=%s: want running, closed or all", value)
			}
			f.Status = value
		case "since":
			d, err := ParseDuration(value)
			if err != nil || d <= 0 {
				return f, fmt.Errorf("since=%s: want a positive duration such as 7d, 12h or 30m", value)
			}
			f.Since = d
		default:
			return f, fmt.Errorf("unknown key %q: want agent, status or since", key)
		}
	}
	if len(f.FlowTypes) == 0 {
		for _, ft := range agents {
			if !slices.Contains(f.FlowTypes, ft) {
				f.FlowTypes = append(f.FlowTypes, ft)
			}
		}
		slices.Sort(f.FlowTypes)
	}
	if len(f.FlowTypes) == 0 {
		return f, fmt.Errorf("the config has no agents")
	}
	return f, nil
}

// ParseDuration reads a Go duration, or whole days as "7d".
func ParseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

func names(agents map[string]string) string {
	var out []string
	for n := range agents {
		out = append(out, n)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// Visibility is the filter as a visibility query at now. With runs, every
// run of a session that continued as new is listed too (each is a history
// of its own); without, a session is its latest run.
func (f Filter) Visibility(now time.Time, runs bool) string {
	quoted := make([]string, len(f.FlowTypes))
	for i, ft := range f.FlowTypes {
		quoted[i] = "'" + strings.ReplaceAll(ft, "'", "\\'") + "'"
	}
	conds := []string{"WorkflowType IN (" + strings.Join(quoted, ", ") + ")"}
	switch {
	case f.Status == StatusRunning:
		conds = append(conds, "ExecutionStatus = 'Running'")
	case f.Status == StatusClosed && runs:
		conds = append(conds, "ExecutionStatus != 'Running'")
	case f.Status == StatusClosed:
		conds = append(conds, "ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew'")
	case !runs:
		conds = append(conds, "ExecutionStatus != 'ContinuedAsNew'")
	}
	if f.Since > 0 {
		conds = append(conds, "StartTime > '"+now.Add(-f.Since).UTC().Format(time.RFC3339)+"'")
	}
	return strings.Join(conds, " AND ")
}
