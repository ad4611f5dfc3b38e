package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
)

// TestModelQueueRateLimit: an agent whose run_model_limit names a model
// queue schedules every RunModel Step on that queue's task queue, which a
// second Temporal worker of the process polls; the queue's
// activities_per_second, which the Temporal server enforces for every
// worker of the queue, spaces the model calls of sessions that run at
// once. The check is a floor on the time they took (a loaded machine is
// slower, never faster), so it does not depend on the machine's speed.
func TestModelQueueRateLimit(t *testing.T) {
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
	it := s.Client.GetWorkflowHistory(ctx(t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == client.StepRunModel {
			scheduled[e.GetEventId()] = true
			queues = append(queues, a.GetTaskQueue().GetName())
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			started = append(started, e.GetEventTime().AsTime())
		}
	}
	return queues, started
}
