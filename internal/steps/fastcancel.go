package steps

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/dex-agents/dex-agent-worker/internal/session"
)

// ErrTurnCancelled is the cause of a model call's context that a turn's
// cancel ended through the fast path (ModelCalls.Cancel).
var ErrTurnCancelled = errors.New("the turn was cancelled")

// cancelledTTL is how long a cancelled turn is remembered, so that a
// model Step of it that registers after the cancel (it was starting when
// the cancel came) ends at once too.
const cancelledTTL = 2 * time.Minute

// fastCancelWait is how long a Step whose model call the fast path ended
// waits for the engine's cancel.
const fastCancelWait = 30 * time.Second

// maxCancelled bounds the cancelled turns remembered.
const maxCancelled = 10_000

// ModelCalls is the fast path of a turn's cancel: it holds the contexts
// of the model calls (RunModel and CompactContext Steps) running in this
// process, by session and turn, and ends them at once when the session
// records the cancel. Without it, a model call learns of the cancel
// through its next heartbeat, about a second later, while the provider
// keeps generating tokens.
//
// It is only a fast path: the engine's activity cancel stays the
// guarantee, and the Step still ends as cancelled through it. A model
// Step of a cancelled turn never runs again, so the session's run and the
// turn name it (the run, because a raw Temporal client may start a new
// session under a closed one's ID, whose turns are numbered anew).
type ModelCalls struct {
	mu        sync.Mutex
	running   map[string]map[*modelCall]struct{}
	cancelled map[string]time.Time
	now       func() time.Time
}

type modelCall struct{ cancel context.CancelCauseFunc }

// NewModelCalls returns an empty registry.
func NewModelCalls() *ModelCalls {
	return &ModelCalls{running: map[string]map[*modelCall]struct{}{}, cancelled: map[string]time.Time{}, now: time.Now}
}

func turnKey(sessionID, runID, turnID string) string {
	return sessionID + "\x00" + runID + "\x00" + turnID
}

// track returns a context for a model call of the turn that Cancel ends,
// and the func that forgets it. On a nil registry, ctx is returned.
func (m *ModelCalls) track(ctx context.Context, sessionID, runID, turnID string) (context.Context, func()) {
	if m == nil || turnID == "" {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	key := turnKey(sessionID, runID, turnID)
	c := &modelCall{cancel: cancel}
	m.mu.Lock()
	if at, ok := m.cancelled[key]; ok && m.now().Sub(at) < cancelledTTL {
		m.mu.Unlock()
		cancel(ErrTurnCancelled)
		return ctx, func() {}
	}
	calls := m.running[key]
	if calls == nil {
		calls = map[*modelCall]struct{}{}
		m.running[key] = calls
	}
	calls[c] = struct{}{}
	m.mu.Unlock()
	return ctx, func() {
		m.mu.Lock()
		delete(m.running[key], c)
		if len(m.running[key]) == 0 {
			delete(m.running, key)
		}
		m.mu.Unlock()
		cancel(nil)
	}
}

// Cancel ends the model calls of a turn of a session's run that run in
// this process, and those that start in the next two minutes; it returns
// how many ran.
func (m *ModelCalls) Cancel(sessionID, runID, turnID string) int {
	if m == nil {
		return 0
	}
	key := turnKey(sessionID, runID, turnID)
	m.mu.Lock()
	now := m.now()
	if len(m.cancelled) >= maxCancelled {
		for k, at := range m.cancelled {
			if now.Sub(at) >= cancelledTTL {
				delete(m.cancelled, k)
			}
		}
		if len(m.cancelled) >= maxCancelled {
			clear(m.cancelled) // a burst: forget the oldest with the rest
		}
	}
	m.cancelled[key] = now
	calls := m.running[key]
	delete(m.running, key)
	m.mu.Unlock()
	for c := range calls {
		c.cancel(ErrTurnCancelled)
	}
	return len(calls)
}

// Running returns how many model calls are tracked.
func (m *ModelCalls) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, calls := range m.running {
		n += len(calls)
	}
	return n
}

// modelCall runs a model call Step's work under a context the turn's fast
// cancel ends; when it did, the Step waits for the engine's cancel, so it
// ends as the engine's cancel alone would end it.
func (a *Activities) modelCall(ctx context.Context, sessionID, turnID string, run func(context.Context) error) error {
	call, release := a.ModelCalls.track(ctx, sessionID, activity.GetInfo(ctx).WorkflowExecution.RunID, turnID)
	err := run(call)
	release()
	if err != nil && cancelledFast(call, ctx) {
		return awaitStepCancel(ctx, int(activity.GetInfo(ctx).Attempt), fastCancelWait)
	}
	return err
}

// cancelledFast reports that the fast path ended a model call's context
// while the engine has not cancelled the Step yet.
func cancelledFast(call, step context.Context) bool {
	return step.Err() == nil && errors.Is(context.Cause(call), ErrTurnCancelled)
}

// awaitStepCancel waits, heartbeating, until the engine cancels the Step
// whose model call the fast path ended (its next heartbeat brings the
// cancel), so that the Step ends as cancelled, as the engine's cancel
// alone would end it. After wait it gives up with an error that retries
// the Step: a cancel the session never recorded.
func awaitStepCancel(ctx context.Context, attempt int, wait time.Duration) error {
	every := min(heartbeatInterval(ctx), ModelHeartbeatInterval)
	t := time.NewTicker(every)
	defer t.Stop()
	deadline := time.After(wait)
	activity.RecordHeartbeat(ctx, session.StepHeartbeat{Attempt: attempt})
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			activity.RecordHeartbeat(ctx, session.StepHeartbeat{Attempt: attempt})
		case <-deadline:
			return errors.New("the model call was stopped for a cancel of its turn that the engine never confirmed")
		}
	}
}
