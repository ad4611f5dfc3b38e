package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// TestModelQueueRateLimit: an agent whose run_model_limit names a model
// queue schedules every RunModel Step on that queue's task queue, which a
// second Temporal worker of the process polls; the queue's
// activities_per_second, which the Temporal server enforces for every
// worker of the queue, spaces the model calls of sessions that run at
// once. The check is a floor on the time they took (a loaded machine is
// slower, never faster), so it does not depend on the machine's speed.
func TestModelQueueRateLimit(t *testing.T) {
	t.Parallel()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	const rate = 1.0 // model call attempts per second, all workers together
	cfg := strings.Replace(testConfig(plugin), "schedule_to_close_timeout: 5m}", "schedule_to_close_timeout: 5m, queue: limited}", 1)
	if !strings.Contains(cfg, "queue: limited") {
		t.Fatal("testConfig's run_model_limit changed: the test could not name the queue")
	}
	s := agenttest.NewStack(t, cfg+fmt.Sprintf(`model_queues:
  limited: {activities_per_second: %v, max_concurrent_per_worker: 4}
`, rate))
	s.StartWorker()
	const sessions = 4
	var ids []string
	for i := range sessions {
		ids = append(ids, start(t, s, fmt.Sprintf("call:noop:n%d", i)))
	}
	var all []time.Time
	for _, id := range ids {
		s.WaitForSnapshot("the turn", id, idleWithAnswer)
		queues, started := runModelStarts(t, s, id)
		if len(queues) != 2 || len(started) != 2 {
			t.Fatalf("session %s: %d RunModel Steps scheduled, %d started; want 2 (the call, the answer)", id, len(queues), len(started))
		}
		for _, q := range queues {
			if q != "dex-agents-model-limited" {
				t.Fatalf("session %s: a RunModel Step on task queue %q, want dex-agents-model-limited", id, q)
			}
		}
		all = append(all, started...)
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	span := all[len(all)-1].Sub(all[0])
	// n starts at rate r take at least (n-1)/r, less the engine's burst of
	// one second's worth.
	floor := time.Duration(float64(len(all)-1-int(rate))/rate*float64(time.Second)) - 100*time.Millisecond
	t.Logf("%d model calls started over %v (rate limit %v/s; floor %v)", len(all), span.Round(time.Millisecond), rate, floor)
	if span < floor {
		t.Errorf("%d model calls started within %v: faster than the queue's %v per second allows (floor %v)", len(all), span, rate, floor)
	}
}

// runModelStarts returns the task queues of a session's RunModel Steps and
// when each started.
func runModelStarts(t *testing.T, s *agenttest.Stack, id string) (queues []string, started []time.Time) {
	t.Helper()
	for _, c := range runModelSteps(t, s, id) {
		queues = append(queues, c.queue)
		if !c.started.IsZero() {
			started = append(started, c.started)
		}
	}
	return queues, started
}

// TestModelQueueConcurrencyAcrossTheDeployment: Temporal bounds a task
// queue's calls by count per worker only, so a deployment bounds a model
// queue's concurrent calls by polling it from a fixed set of processes
// (--model-queues). Here one worker polls no model queue and the other
// polls the queue with max_concurrent_per_worker 1. Three sessions start
// on the first alone, so their model calls wait in the queue; once the
// second starts they run one at a time, each held at a gate, all on it.
func TestModelQueueConcurrencyAcrossTheDeployment(t *testing.T) {
	t.Parallel()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	cfg := strings.Replace(testConfig(plugin), "schedule_to_close_timeout: 5m}", "schedule_to_close_timeout: 5m, queue: limited}", 1)
	if !strings.Contains(cfg, "queue: limited") {
		t.Fatal("testConfig's run_model_limit changed: the test could not name the queue")
	}
	s := agenttest.NewStack(t, cfg+`model_queues:
  limited: {max_concurrent_per_worker: 1}
`)
	general := s.StartWorkerWith(agenttest.WorkerOptions{ModelQueues: "none"})
	const sessions = 3
	var ids []string
	var gates []agenttest.FileGate
	for i := range sessions {
		g := s.Gate(fmt.Sprintf("model-q%d", i))
		if err := g.Arm(); err != nil {
			t.Fatal(err)
		}
		gates = append(gates, g)
		ids = append(ids, start(t, s, fmt.Sprintf("modelgate:q%d hello", i)))
	}
	// With no process polling the queue, the model calls wait in it.
	for _, id := range ids {
		err := agenttest.WaitFor(ctx(t), "session "+id+"'s RunModel scheduled", time.Minute, func() (bool, error) {
			return len(runModelSteps(t, s, id)) > 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range gates {
		if _, ok := g.Reached(); ok {
			t.Fatalf("session %s's model call ran though no process polls the queue", ids[i])
		}
	}
	pool := s.StartWorkerWith(agenttest.WorkerOptions{ModelQueues: "limited"})
	// Each round one call reaches its gate. While it holds the queue's one
	// slot for a second, no other call may start; then it is let go.
	released := map[int]bool{}
	for range sessions {
		var holding []int
		err := agenttest.WaitFor(ctx(t), "a model call at its gate", time.Minute, func() (bool, error) {
			holding = holding[:0]
			for i, g := range gates {
				if _, ok := g.Reached(); ok && !released[i] {
					holding = append(holding, i)
				}
			}
			return len(holding) > 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		for i, g := range gates {
			if _, ok := g.Reached(); ok && !released[i] && !slices.Contains(holding, i) {
				holding = append(holding, i)
			}
		}
		if len(holding) > 1 {
			t.Fatalf("model calls of sessions %v ran at once; the deployment polls the queue with one slot", holding)
		}
		released[holding[0]] = true
		if err := gates[holding[0]].Release(); err != nil {
			t.Fatal(err)
		}
	}
	var calls []modelCall
	for i, id := range ids {
		snap := s.WaitForSnapshot("the turn", id, idleWithAnswer)
		if got, want := snap.Messages[len(snap.Messages)-1].Text, fmt.Sprintf("echo: modelgate:q%d hello", i); got != want {
			t.Fatalf("session %s answered %q, want %q", id, got, want)
		}
		calls = append(calls, runModelSteps(t, s, id)...)
	}
	if len(calls) != sessions {
		t.Fatalf("%d RunModel Steps ran, want %d", len(calls), sessions)
	}
	slices.SortFunc(calls, func(a, b modelCall) int { return a.started.Compare(b.started) })
	for i, c := range calls {
		if c.closed.IsZero() {
			t.Fatalf("a RunModel Step on %q did not complete", c.identity)
		}
		if !strings.HasPrefix(c.identity, fmt.Sprintf("%d@", pool.PID())) {
			t.Errorf("a RunModel Step ran on %q, not on the worker that polls the queue (pid %d; the other is %d)", c.identity, pool.PID(), general.PID())
		}
		if i > 0 && c.started.Before(calls[i-1].closed) {
			t.Errorf("RunModel Steps overlapped: one started at %v, before the one of %v closed at %v",
				c.started.Format(time.StampMilli), calls[i-1].started.Format(time.StampMilli), calls[i-1].closed.Format(time.StampMilli))
		}
	}
	others := 0
	for _, id := range ids {
		others += tasksOn(t, s, id, fmt.Sprintf("%d@", general.PID()))
	}
	if others == 0 {
		t.Error("the worker that polls no model queue ran none of the sessions' workflow tasks, though it was alone before the pool started")
	}
	t.Logf("%d model calls ran one at a time on worker %d; worker %d ran %d of their workflow tasks and other Steps", len(calls), pool.PID(), general.PID(), others)
}

// modelCall is one RunModel Step as the history records it: its task
// queue, the worker that ran its last attempt, and when that started and
// the Step closed (zero while it did not).
type modelCall struct {
	queue, identity string
	started, closed time.Time
}

// runModelSteps returns a session's RunModel Steps in the order they were
// scheduled.
func runModelSteps(t *testing.T, s *agenttest.Stack, id string) []modelCall {
	t.Helper()
	it := s.Client.GetWorkflowHistory(ctx(t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	index := map[int64]int{}
	var out []modelCall
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == wire.StepRunModel {
			index[e.GetEventId()] = len(out)
			out = append(out, modelCall{queue: a.GetTaskQueue().GetName()})
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			if i, ok := index[a.GetScheduledEventId()]; ok {
				out[i].identity, out[i].started = a.GetIdentity(), e.GetEventTime().AsTime()
			}
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
			if i, ok := index[a.GetScheduledEventId()]; ok {
				out[i].closed = e.GetEventTime().AsTime()
			}
		}
	}
	return out
}

// tasksOn counts a session's workflow tasks and Steps that a worker whose
// identity starts with prefix ran.
func tasksOn(t *testing.T, s *agenttest.Stack, id, prefix string) int {
	t.Helper()
	it := s.Client.GetWorkflowHistory(ctx(t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && strings.HasPrefix(a.GetIdentity(), prefix) {
			n++
		}
		if a := e.GetWorkflowTaskStartedEventAttributes(); a != nil && strings.HasPrefix(a.GetIdentity(), prefix) {
			n++
		}
	}
	return n
}
