package steps

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestModelCallsEndTheCancelledTurnOnly(t *testing.T) {
	m := NewModelCalls()
	ctx := context.Background()
	a, releaseA := m.track(ctx, "s1", "r1", "turn-1")
	defer releaseA()
	b, releaseB := m.track(ctx, "s1", "r1", "turn-2")
	defer releaseB()
	other, releaseO := m.track(ctx, "s2", "r1", "turn-1")
	defer releaseO()
	if n := m.Cancel("s1", "r1", "turn-1"); n != 1 {
		t.Fatalf("Cancel ended %d calls, want 1", n)
	}
	if !errors.Is(context.Cause(a), ErrTurnCancelled) || !cancelledFast(a, ctx) {
		t.Fatalf("the cancelled turn's call: err %v, cause %v", a.Err(), context.Cause(a))
	}
	if b.Err() != nil || other.Err() != nil {
		t.Fatalf("another turn's call ended: %v, another session's: %v", b.Err(), other.Err())
	}
	if m.Running() != 2 {
		t.Fatalf("running = %d, want 2", m.Running())
	}
	// A new session under the same ID (a new run) numbers its turns anew:
	// the old run's cancel of turn-1 does not end its turn-1.
	again, release := m.track(ctx, "s1", "r2", "turn-1")
	defer release()
	if again.Err() != nil {
		t.Fatalf("another run's turn-1 ended: %v", context.Cause(again))
	}
}

// A model Step of the cancelled turn that registers after the cancel (it
// was starting when the cancel came) ends at once; after two minutes the
// turn is forgotten.
func TestModelCallsRememberACancelledTurn(t *testing.T) {
	m := NewModelCalls()
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	if n := m.Cancel("s", "r", "t"); n != 0 {
		t.Fatalf("Cancel ended %d calls with none running", n)
	}
	late, release := m.track(context.Background(), "s", "r", "t")
	release()
	if !errors.Is(context.Cause(late), ErrTurnCancelled) {
		t.Fatalf("a call of a cancelled turn started: cause %v", context.Cause(late))
	}
	now = now.Add(cancelledTTL)
	again, release := m.track(context.Background(), "s", "r", "t")
	if again.Err() != nil {
		t.Fatalf("the turn was remembered past its time: %v", context.Cause(again))
	}
	release()
	if m.Running() != 0 {
		t.Fatalf("running = %d after release", m.Running())
	}
}

// A call that ended normally, or whose Step the engine cancelled, is not
// a fast cancel; a nil registry tracks nothing.
func TestCancelledFastOnlyForTheFastPath(t *testing.T) {
	m := NewModelCalls()
	step, cancelStep := context.WithCancel(context.Background())
	call, release := m.track(step, "s", "r", "t")
	release()
	if cancelledFast(call, step) {
		t.Fatal("a released call counts as a fast cancel")
	}
	call, release = m.track(step, "s", "r", "u")
	defer release()
	cancelStep()
	if cancelledFast(call, step) {
		t.Fatal("the engine's cancel counts as a fast cancel")
	}
	var none *ModelCalls
	if c, r := none.track(step, "s", "r", "t"); c != step {
		t.Fatal("a nil registry wrapped the context")
	} else {
		r()
	}
	if none.Cancel("s", "r", "t") != 0 {
		t.Fatal("a nil registry cancelled something")
	}
}

// Many cancelled turns stay bounded.
func TestModelCallsBoundTheCancelledTurns(t *testing.T) {
	m := NewModelCalls()
	for i := range maxCancelled + 10 {
		m.Cancel("s", "r", string(rune('a'+i%26))+time.Duration(i).String())
	}
	if len(m.cancelled) > maxCancelled {
		t.Fatalf("%d cancelled turns kept, max %d", len(m.cancelled), maxCancelled)
	}
}
