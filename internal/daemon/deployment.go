package daemon

import (
	"context"
	"time"

	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

// deploymentOptions are the Worker Deployment options of every Temporal
// worker of the process: versioned, and sessions pinned to the version
// that runs them (they move at turn boundaries by themselves; see
// session.Workflow). Nil d: an unversioned worker.
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
// in the background, if it is the deployment's newest version: an older
// build that restarts (a crash, a rolling deploy) never takes the
// deployment back; roll back by hand. It returns at once; Stop cancels it.
func (d *Daemon) promote(c temporalclient.Client, dep *config.WorkerDeployment) {
	ctx, cancel := context.WithTimeout(context.Background(), promoteTimeout)
	d.stopPromote = cancel
	log := d.log.With("deployment", dep.Name, "build_id", dep.BuildID)
	go func() {
		defer cancel()
		h := c.WorkerDeploymentClient().GetHandle(dep.Name)
		var last error
		for {
			done, err := promoteOnce(ctx, h, dep.BuildID)
			switch {
			case err == nil && done:
				log.Info("this worker's version is the deployment's current version")
				return
			case err == nil:
				log.Info("a newer version of the deployment exists; this one stays as it is")
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

// promoteOnce sets buildID current unless the deployment has a newer
// version; done reports that buildID is current.
func promoteOnce(ctx context.Context, h temporalclient.WorkerDeploymentHandle, buildID string) (done bool, err error) {
	desc, err := h.Describe(ctx, temporalclient.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return false, err // the deployment exists once our pollers reached the engine
	}
	if cur := desc.Info.RoutingConfig.CurrentVersion; cur != nil && cur.BuildID == buildID {
		return true, nil
	}
	var ours *temporalclient.WorkerDeploymentVersionSummary
	for i, v := range desc.Info.VersionSummaries {
		if v.Version.BuildID == buildID {
			ours = &desc.Info.VersionSummaries[i]
		}
	}
	if ours == nil {
		return false, errVersionNotRegistered
	}
	for _, v := range desc.Info.VersionSummaries {
		if v.CreateTime.After(ours.CreateTime) {
			return false, nil
		}
	}
	_, err = h.SetCurrentVersion(ctx, temporalclient.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID, ConflictToken: desc.ConflictToken})
	return err == nil, err
}

type versionError string

func (e versionError) Error() string { return string(e) }

const errVersionNotRegistered = versionError("the engine does not list this worker's version yet")
