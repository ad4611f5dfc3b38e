package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dex-agents/dex-agent-worker/wire"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// MoveResult is what MoveSessionsToCurrentVersion did.
type MoveResult struct {
	// Current is the deployment's current build ID.
	Current string
	// Woken are the sessions signalled: running, pinned to another build
	// of the deployment.
	Woken []string
}

// MoveSessionsToCurrentVersion signals every running session pinned to a
// build of deployment other than its current one (wire.SignalCheckWorkerVersion),
// so that idle sessions move to the current build now instead of at their
// next message, and the old build's workers can stop once none is left.
// With dryRun it only lists them. The engine's visibility may lag by a
// second or so: run it again to be sure none is left.
func (s *AgentSessionClient) MoveSessionsToCurrentVersion(ctx context.Context, deployment string, dryRun bool) (MoveResult, error) {
	d, err := s.c.WorkflowService().DescribeWorkerDeployment(ctx, &workflowservice.DescribeWorkerDeploymentRequest{Namespace: s.namespace, DeploymentName: deployment})
	if err != nil {
		return MoveResult{}, fmt.Errorf("describe worker deployment %s: %w", deployment, err)
	}
	cur := d.GetWorkerDeploymentInfo().GetRoutingConfig().GetCurrentDeploymentVersion().GetBuildId()
	if cur == "" {
		return MoveResult{}, fmt.Errorf("worker deployment %s has no current version", deployment)
	}
	res := MoveResult{Current: cur}
	var builds []string
	for _, v := range d.GetWorkerDeploymentInfo().GetVersionSummaries() {
		if b := v.GetDeploymentVersion().GetBuildId(); b != "" && b != cur {
			builds = append(builds, b)
		}
	}
	for _, b := range builds {
		q := "ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion = " + strconv.Quote(deployment+":"+b)
		var token []byte
		for {
			resp, err := s.c.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: s.namespace, Query: q, NextPageToken: token, PageSize: 500,
			})
			if err != nil {
				return res, fmt.Errorf("list the sessions on %s:%s: %w", deployment, b, err)
			}
			for _, e := range resp.GetExecutions() {
				if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
					continue
				}
				id := e.GetExecution().GetWorkflowId()
				if !dryRun {
					err := s.c.SignalWorkflow(ctx, id, "", wire.SignalCheckWorkerVersion, nil)
					var gone *serviceerror.NotFound
					if errors.As(err, &gone) {
						continue // it ended since the list: nothing to move
					}
					if err != nil {
						return res, fmt.Errorf("signal session %s: %w", id, err)
					}
				}
				res.Woken = append(res.Woken, id)
			}
			if token = resp.GetNextPageToken(); len(token) == 0 {
				break
			}
		}
	}
	return res, nil
}
