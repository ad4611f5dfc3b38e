package evals

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/dex-agents/dex-agent-worker/internal/replaycheck"
)

// MaxRuns bounds the runs read of one session (continue-as-new makes a
// run every few hundred turns).
const MaxRuns = 1000

// FetchSession reads every run of session id from Temporal, oldest first:
// the latest run, then each run before it that its start names.
func FetchSession(ctx context.Context, c client.Client, id string) (Session, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	s := Session{ID: id, FlowType: info.GetType().GetName(),
		Status: strings.ToLower(strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))}
	run := info.GetExecution().GetRunId()
	for run != "" {
		if len(s.Runs) == MaxRuns {
			return s, fmt.Errorf("session %s has more than %d runs", id, MaxRuns)
		}
		h, err := replaycheck.RunHistory(ctx, c, id, run)
		if err != nil {
			return s, err
		}
		s.Runs = append(s.Runs, h)
		run = h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
	}
	slices.Reverse(s.Runs)
	return s, nil
}

// ListSessions returns the IDs of up to limit sessions a visibility query
// lists, newest first.
func ListSessions(ctx context.Context, c client.Client, namespace, query string, limit int) ([]string, error) {
	var ids []string
	var token []byte
	for len(ids) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: query, PageSize: int32(min(limit-len(ids), 100)), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the sessions (%s): %w", query, err)
		}
		for _, e := range resp.GetExecutions() {
			if id := e.GetExecution().GetWorkflowId(); len(ids) < limit && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return ids, nil
}
