package daemon

import (
	"context"
	"time"

	deploymentpb "go.temporal.io/api/deployment/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

// deploymentOptions are the Worker Deployment options of every Temporal
// worker of the process: versioned, and sessions pinned to the version
// that runs them (they move at turn boundaries by themselves; see
// sessionflow.Workflow). Nil d: an unversioned worker.
func deploymentOptions(d *config.WorkerDeployment) worker.DeploymentOptions {
	if d == nil {
		return worker.DeploymentOptions{}
	}
	return worker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   worker.WorkerDeploymentVersion{DeploymentName: d.Name, BuildID: d.BuildID},
		DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
	}
}

// promoteTimeout bounds how long a worker with set_current tries to make
// its version current (its pollers must reach the engine first).
const promoteTimeout = 2 * time.Minute

// promote makes this worker's version the deployment's current version,
// in the background, if it is the deployment's newest version and has
// never been current or ramping: an older build that restarts (a crash, a
// rolling deploy) never takes the deployment back, and a build the
// operator rolled back from stays rolled back when it restarts. It
// returns at once; Stop cancels it.
func (d *Daemon) promote(c temporalclient.Client, namespace string, dep *config.WorkerDeployment) {
	ctx, cancel := context.WithTimeout(context.Background(), promoteTimeout)
	d.stopPromote = cancel
	log := d.log.With("deployment", dep.Name, "build_id", dep.BuildID)
	go func() {
		defer cancel()
		var last error
		for {
			outcome, err := promoteOnce(ctx, c, namespace, dep)
			if err == nil {
				switch outcome {
				case promoted:
					log.Info("this worker's version is the deployment's current version")
				case newerExists:
					log.Info("a newer version of the deployment exists; this one stays as it is")
				case activatedBefore:
					log.Info("this version was current or ramping before and the deployment moved off it; it stays as it is (set it current by hand to roll forward)")
				}
				return
			}
			last = err
			select {
			case <-ctx.Done():
				log.Warn("could not make this version current", "error", last)
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// promoteOutcome is what promoteOnce did.
type promoteOutcome int

const (
	promoted promoteOutcome = iota // the version is current
	newerExists
	activatedBefore
)

// promoteOnce sets the worker's version current unless the deployment has
// a newer version or this one was current or ramping before.
func promoteOnce(ctx context.Context, c temporalclient.Client, namespace string, dep *config.WorkerDeployment) (promoteOutcome, error) {
	resp, err := c.WorkflowService().DescribeWorkerDeployment(ctx, &workflowservice.DescribeWorkerDeploymentRequest{
		Namespace: namespace, DeploymentName: dep.Name,
	})
	if err != nil {
		return 0, err // the deployment exists once our pollers reached the engine
	}
	info := resp.GetWorkerDeploymentInfo()
	if info.GetRoutingConfig().GetCurrentDeploymentVersion().GetBuildId() == dep.BuildID {
		return promoted, nil
	}
	var ours *deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary
	for _, v := range info.GetVersionSummaries() {
		if v.GetDeploymentVersion().GetBuildId() == dep.BuildID {
			ours = v
		}
	}
	if ours == nil {
		return 0, errVersionNotRegistered
	}
	switch ours.GetStatus() {
	case enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT, enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING,
		enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING, enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED:
		return activatedBefore, nil
	}
	if ours.GetFirstActivationTime() != nil {
		return activatedBefore, nil
	}
	for _, v := range info.GetVersionSummaries() {
		if v.GetCreateTime().AsTime().After(ours.GetCreateTime().AsTime()) {
			return newerExists, nil
		}
	}
	_, err = c.WorkerDeploymentClient().GetHandle(dep.Name).SetCurrentVersion(ctx, temporalclient.WorkerDeploymentSetCurrentVersionOptions{
		BuildID: dep.BuildID, ConflictToken: resp.GetConflictToken(),
	})
	if err != nil {
		return 0, err
	}
	return promoted, nil
}

type versionError string

func (e versionError) Error() string { return string(e) }

const errVersionNotRegistered = versionError("the engine does not list this worker's version yet")
