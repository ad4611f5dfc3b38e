// Package replaycheck replays recorded session histories against the
// session workflow of this build, with Temporal's replayer, before an
// upgrade: a history that does not replay is a running session the new
// build would break (a nondeterminism), named with its session and the
// event where the replay parted from the record.
package replaycheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/sessionflow"
)

// History is one recorded run of a session.
type History struct {
	// Name says where it came from: a file, or a session's ID and run.
	Name string
	// SessionID is the workflow ID it ran under, when known; else the
	// one its commands show (sessionflow.RecordedSessionID).
	SessionID string
	History   *historypb.History
}

// Result is one history's replay.
type Result struct {
	Name         string `json:"name"`
	SessionID    string `json:"session_id,omitempty"`
	WorkflowType string `json:"workflow_type"`
	Events       int    `json:"events"`
	// Error is why it did not replay; "" when it did.
	Error string `json:"error,omitempty"`
	// EventID is the recorded event where the replay parted from the
	// record, when the replayer names it.
	EventID int64 `json:"event_id,omitempty"`
}

// OK reports a history that replayed.
func (r Result) OK() bool { return r.Error == "" }

// Checker replays histories against this build's session workflows, as a
// worker of its config registers them.
type Checker struct {
	replayer worker.WorkflowReplayer
	types    []string
}

// New registers cfg's agents' session workflows on a replayer.
func New(cfg *config.Config) *Checker {
	r := worker.NewWorkflowReplayer()
	return &Checker{replayer: r, types: daemon.RegisterSessionWorkflows(r, cfg)}
}

// quiet keeps the replayer's own report of a nondeterminism out of the
// output: Check returns it.
var quiet = log.NewStructuredLogger(slog.New(slog.DiscardHandler))

// Check replays one history.
func (c *Checker) Check(h History) Result {
	res := Result{Name: h.Name, SessionID: h.SessionID, Events: len(h.History.GetEvents())}
	if res.Events == 0 {
		res.Error = "the history has no events"
		return res
	}
	start := h.History.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	if start == nil {
		res.Error = "the history does not begin with WorkflowExecutionStarted: it is not a whole run"
		return res
	}
	res.WorkflowType = start.GetWorkflowType().GetName()
	if !slices.Contains(c.types, res.WorkflowType) {
		res.Error = fmt.Sprintf("workflow type %s is no agent's flow type in the config (%s): its sessions would find no worker", res.WorkflowType, strings.Join(c.types, ", "))
		return res
	}
	id := h.SessionID
	if recorded := sessionflow.RecordedSessionID(h.History); recorded != "" {
		id = recorded
	}
	var opts worker.ReplayWorkflowHistoryOptions
	opts.OriginalExecution.ID = id
	if err := c.replayer.ReplayWorkflowHistoryWithOptions(quiet, h.History, opts); err != nil {
		res.Error = err.Error()
		res.EventID = c.partedAt(h.History, opts)
	}
	return res
}

// partedAt finds where a history that does not replay parted from the
// record: the WorkflowTaskCompleted event of the first workflow task whose
// recorded commands the code no longer makes. It replays prefixes that end
// at a WorkflowTaskStarted, as a worker gets them; the replayer checks a
// task's commands once a later task completed, so in the first prefix that
// fails, the task before its last completed one is the one that parted.
// 0 when every prefix replays (the whole history failed for another
// reason).
func (c *Checker) partedAt(h *historypb.History, opts worker.ReplayWorkflowHistoryOptions) int64 {
	events := h.GetEvents()
	var cuts []int // prefix lengths: through each WorkflowTaskStarted, and the whole
	for i, e := range events {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED {
			cuts = append(cuts, i+1)
		}
	}
	cuts = append(cuts, len(events))
	k := sort.Search(len(cuts), func(k int) bool {
		return c.replayer.ReplayWorkflowHistoryWithOptions(quiet, &historypb.History{Events: events[:cuts[k]]}, opts) != nil
	})
	if k == len(cuts) {
		return 0
	}
	var completed []int64
	for _, e := range events[:cuts[k]] {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			completed = append(completed, e.GetEventId())
		}
	}
	switch {
	case len(completed) >= 2 && cuts[k] < len(events):
		return completed[len(completed)-2]
	case len(completed) >= 1:
		return completed[len(completed)-1]
	}
	return 0
}

// ReadDir reads every *.json history in dir (the JSON of `temporal
// workflow show --output json`, or of the Temporal Web UI's download),
// in name order.
func ReadDir(dir string) ([]History, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s holds no *.json history", dir)
	}
	sort.Strings(paths)
	out := make([]History, 0, len(paths))
	for _, p := range paths {
		h, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// ReadFile reads one history file.
func ReadFile(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return History{}, err
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return History{}, fmt.Errorf("%s: not a workflow history in JSON: %w", path, err)
	}
	return History{Name: path, History: h}, nil
}

// FromVisibility fetches the histories of up to limit runs that the
// visibility query lists, newest first.
func FromVisibility(ctx context.Context, c client.Client, namespace, query string, limit int) ([]History, error) {
	var out []History
	var token []byte
	for len(out) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: query, PageSize: int32(min(limit-len(out), 100)), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the sessions (%s): %w", query, err)
		}
		for _, e := range resp.GetExecutions() {
			if len(out) == limit {
				break
			}
			id, run := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
			h, err := RunHistory(ctx, c, id, run)
			if err != nil {
				return nil, err
			}
			out = append(out, History{Name: id + " (run " + run + ")", SessionID: id, History: h})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return out, nil
}

// RunHistory reads the whole history of one run of a workflow.
func RunHistory(ctx context.Context, c client.Client, id, run string) (*historypb.History, error) {
	it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("read the history of %s (run %s): %w", id, run, err)
		}
		h.Events = append(h.Events, e)
	}
	if len(h.Events) == 0 {
		return nil, errors.New("the history of " + id + " is empty")
	}
	return h, nil
}
