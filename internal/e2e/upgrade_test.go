package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

const upgradeDeployment = "dex-agents"

// TestUpgradeAtTurnBoundary deploys a new worker build while a session
// waits for an approval, on one engine with Worker Deployment versioning.
// The new build (tag dexupgradeprobe) has other workflow code: it records
// one more marker at each turn start, so it could not replay the old run's
// history. Build v1 starts the session and its turn; v2 starts and makes
// itself current; the approval then still runs on v1, which finishes the
// turn and continues the session as new at the turn boundary, onto v2,
// where the next turn runs. A session idle when v2 came takes its next
// message on v1 and runs that turn on v2. No workflow task fails, the tool
// ran once, and a v1 worker that starts again does not make v1 current.
func TestUpgradeAtTurnBoundary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	oldBin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	newBin := agenttest.BuildBinaryWithTags(t, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker", "dexupgradeprobe")
	s := agenttest.NewStack(t, testConfig(plugin))
	cfg := strings.Replace(testConfig(plugin), "temporal: {namespace: default, task_queue: dex-agents}",
		fmt.Sprintf("temporal:\n  address: %s\n  namespace: default\n  task_queue: dex-agents\n  deployment: {name: %s, build_id: \"${DEX_BUILD_ID}\", set_current: true}\n"+
			"message_store: {driver: sqlite, path: messages.db}", s.Address(), upgradeDeployment), 1)
	cfgPath := filepath.Join(s.Dir, "versioned.yaml")
	if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(cfg, "{{DIR}}", s.Dir)), 0o644); err != nil {
		t.Fatal(err)
	}

	startBuild(t, s, oldBin, cfgPath, "v1")
	waitCurrent(t, s, "v1")
	id, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, InitialMessage: "call:approve_write:u1"})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.WaitForSnapshot("the approval", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	firstRun := describe(t, s, id).GetWorkflowExecutionInfo().GetExecution().GetRunId()
	// An idle session, between turns when v2 comes.
	idle, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, InitialMessage: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	s.WaitForSnapshot("the idle session's answer", idle, idleWithAnswer)
	idleFirstRun := describe(t, s, idle).GetWorkflowExecutionInfo().GetExecution().GetRunId()
	// And one that gets no message: `session upgrade` moves it.
	sleeper, err := s.Sessions.StartSession(ctx(t), client.StartSessionOptions{FlowType: flowType, InitialMessage: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	s.WaitForSnapshot("the sleeping session's answer", sleeper, idleWithAnswer)
	sleeperFirstRun := describe(t, s, sleeper).GetWorkflowExecutionInfo().GetExecution().GetRunId()

	startBuild(t, s, newBin, cfgPath, "v2")
	waitCurrent(t, s, "v2")
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, wire.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	s.WaitForSnapshot("the first turn's answer", id, idleWithAnswer)
	var secondRun string
	err = agenttest.WaitFor(ctx(t), "the session continued as new", time.Minute, func() (bool, error) {
		secondRun = describe(t, s, id).GetWorkflowExecutionInfo().GetExecution().GetRunId()
		return secondRun != firstRun, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "second"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the second turn's answer", id, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && s.State.TurnCount == 2
	})
	wantAnswer(t, snap, "echo: second")

	// The idle session's next message is taken on v1, which continues
	// the session as new before any turn starts; the turn runs on v2.
	if ok, err := s.Sessions.SendUserMessage(ctx(t), idle, "again"); err != nil || !ok {
		t.Fatalf("send to the idle session: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the idle session's second answer", idle, func(s wire.Snapshot) bool {
		return idleWithAnswer(s) && s.State.TurnCount == 2
	})
	wantAnswer(t, snap, "echo: again")
	ih1 := runHistory(t, s, idle, idleFirstRun)
	ih2 := runHistory(t, s, idle, describe(t, s, idle).GetWorkflowExecutionInfo().GetExecution().GetRunId())
	if b1, b2 := taskBuilds(ih1), taskBuilds(ih2); strings.Join(b1, ",") != "v1" || strings.Join(b2, ",") != "v2" {
		t.Errorf("the idle session's runs ran on %v, then %v; want v1, then v2", b1, b2)
	}
	if n1, n2 := probeMarkers(ih1), probeMarkers(ih2); n1 != 0 || n2 != 1 {
		t.Errorf("the idle session's runs have %d, then %d markers of the new code; want 0, then 1 (turn-2)", n1, n2)
	}

	// Run 1 ran on v1 alone, and ended at the turn boundary.
	h1 := runHistory(t, s, id, firstRun)
	if got := taskBuilds(h1); strings.Join(got, ",") != "v1" {
		t.Errorf("the first run's workflow tasks ran on builds %v; want v1 alone", got)
	}
	if last := h1[len(h1)-1]; last.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		t.Errorf("the first run ended with %v; want continued-as-new", last.GetEventType())
	}
	if n := probeMarkers(h1); n != 0 {
		t.Errorf("the first run has %d markers of the new code; want none", n)
	}
	// Run 2 ran on v2 alone, with the new code's marker for its turn.
	h2 := runHistory(t, s, id, secondRun)
	if got := taskBuilds(h2); strings.Join(got, ",") != "v2" {
		t.Errorf("the second run's workflow tasks ran on builds %v; want v2 alone", got)
	}
	if n := probeMarkers(h2); n != 1 {
		t.Errorf("the second run has %d markers of the new code; want one, for turn-2", n)
	}
	for _, h := range [][]*historypb.HistoryEvent{h1, h2, ih1, ih2} {
		if n := countEvents(h, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED); n != 0 {
			t.Errorf("%d workflow tasks failed; a run must never reach code that cannot replay it", n)
		}
	}
	info := describe(t, s, id).GetWorkflowExecutionInfo().GetVersioningInfo()
	if info.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED || info.GetDeploymentVersion().GetBuildId() != "v2" {
		t.Errorf("the session's versioning: %v on %v; want pinned to v2", info.GetBehavior(), info.GetDeploymentVersion())
	}
	// `session upgrade` signals the one session left on v1, which
	// continues as new onto v2 without a message.
	cli := exec.Command(oldBin, "session", "upgrade", "--config", cfgPath, "--address", s.Address())
	cli.Env = append(os.Environ(), "DEX_BUILD_ID=v1")
	out, err := cli.Output()
	if err != nil {
		t.Fatalf("session upgrade: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != sleeper {
		t.Errorf("session upgrade signalled %q; want the sleeping session %s alone", got, sleeper)
	}
	var sleeperRun string
	err = agenttest.WaitFor(ctx(t), "the sleeping session on v2", time.Minute, func() (bool, error) {
		info := describe(t, s, sleeper).GetWorkflowExecutionInfo()
		sleeperRun = info.GetExecution().GetRunId()
		return sleeperRun != sleeperFirstRun && info.GetVersioningInfo().GetDeploymentVersion().GetBuildId() == "v2", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b1, b2 := taskBuilds(runHistory(t, s, sleeper, sleeperFirstRun)), taskBuilds(runHistory(t, s, sleeper, sleeperRun)); strings.Join(b1, ",") != "v1" || strings.Join(b2, ",") != "v2" {
		t.Errorf("the sleeping session's runs ran on %v, then %v; want v1, then v2", b1, b2)
	}
	if snap := s.WaitForSnapshot("the sleeping session idle", sleeper, idleWithAnswer); snap.State.TurnCount != 1 {
		t.Errorf("the sleeping session has %d turns; want its one", snap.State.TurnCount)
	}

	// The query docs/operations.md gives for the sessions pinned to a version.
	for build, want := range map[string]int64{"v1": 0, "v2": 3} {
		q := fmt.Sprintf(`TemporalWorkerDeploymentVersion="%s:%s" AND ExecutionStatus="Running"`, upgradeDeployment, build)
		err := agenttest.WaitFor(ctx(t), "visibility of the sessions on "+build, 30*time.Second, func() (bool, error) {
			r, err := s.Client.CountWorkflow(ctx(t), &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: q})
			if err != nil {
				return false, err
			}
			return r.GetCount() == want, nil
		})
		if err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times, want 1", n)
	}

	// A v1 worker that starts again (a crash, a rolling restart) with
	// set_current does not take the deployment back.
	const activatedBefore = "this version was current or ramping before"
	waitLogged(t, startBuild(t, s, oldBin, cfgPath, "v1"), activatedBefore)
	waitCurrent(t, s, "v2")
	// An operator rolls back to v1 by hand; a v2 worker that starts again
	// leaves the rollback as it is.
	if _, err := s.Client.WorkerDeploymentClient().GetHandle(upgradeDeployment).SetCurrentVersion(ctx(t),
		temporalclient.WorkerDeploymentSetCurrentVersionOptions{BuildID: "v1"}); err != nil {
		t.Fatal(err)
	}
	waitCurrent(t, s, "v1")
	waitLogged(t, startBuild(t, s, newBin, cfgPath, "v2"), activatedBefore)
	waitCurrent(t, s, "v1")
}

// waitLogged waits until the log at path has text.
func waitLogged(t *testing.T, path, text string) {
	t.Helper()
	err := agenttest.WaitFor(ctx(t), "the log line "+strconv.Quote(text), time.Minute, func() (bool, error) {
		b, err := os.ReadFile(path)
		return strings.Contains(string(b), text), err
	})
	if err != nil {
		t.Error(err)
	}
}

// startBuild runs bin as a worker of build buildID on cfgPath, waits
// until its probes answer, and returns its log's path. It is SIGKILLed at
// cleanup.
func startBuild(t *testing.T, s *agenttest.Stack, bin, cfgPath, buildID string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", agenttest.FreePort(t))
	logf, err := os.CreateTemp(s.Dir, "worker-"+buildID+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfgPath, "--role", "worker", "--http", addr, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "DEX_BUILD_ID="+buildID)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("--- worker %s log (tail) ---\n%s", buildID, tailString(string(b), 6000))
		}
	})
	waitOK(t, "worker "+buildID+" ready", "http://"+addr+"/readyz", time.Minute, func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	})
	return logf.Name()
}

// waitCurrent waits until buildID is the deployment's current version and
// the engine has passed that to the task queues (a workflow task learns of
// a new current version from its task queue).
func waitCurrent(t *testing.T, s *agenttest.Stack, buildID string) {
	t.Helper()
	err := agenttest.WaitFor(ctx(t), buildID+" current on the task queues", time.Minute, func() (bool, error) {
		d, err := s.Client.WorkflowService().DescribeWorkerDeployment(ctx(t), &workflowservice.DescribeWorkerDeploymentRequest{
			Namespace: "default", DeploymentName: upgradeDeployment,
		})
		if err != nil {
			return false, err
		}
		info := d.GetWorkerDeploymentInfo()
		return info.GetRoutingConfig().GetCurrentDeploymentVersion().GetBuildId() == buildID &&
			info.GetRoutingConfigUpdateState() == enumspb.ROUTING_CONFIG_UPDATE_STATE_COMPLETED, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func describe(t *testing.T, s *agenttest.Stack, id string) *workflowservice.DescribeWorkflowExecutionResponse {
	t.Helper()
	d, err := s.Client.DescribeWorkflowExecution(ctx(t), id, "")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func runHistory(t *testing.T, s *agenttest.Stack, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	it := s.Client.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// taskBuilds lists the build IDs of the workers that completed the
// history's workflow tasks, each once, in order.
func taskBuilds(h []*historypb.HistoryEvent) []string {
	var out []string
	for _, e := range h {
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			b := a.GetDeploymentVersion().GetBuildId()
			if len(out) == 0 || out[len(out)-1] != b {
				out = append(out, b)
			}
		}
	}
	return out
}

func countEvents(h []*historypb.HistoryEvent, typ enumspb.EventType) int {
	n := 0
	for _, e := range h {
		if e.GetEventType() == typ {
			n++
		}
	}
	return n
}

// probeMarkers counts the markers the new build's workflow code records.
func probeMarkers(h []*historypb.HistoryEvent) int {
	n := 0
	for _, e := range h {
		for _, p := range e.GetMarkerRecordedEventAttributes().GetDetails() {
			for _, d := range p.GetPayloads() {
				if strings.Contains(string(d.GetData()), "dexupgradeprobe") {
					n++
				}
			}
		}
	}
	return n
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
