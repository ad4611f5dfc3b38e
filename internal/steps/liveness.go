package steps

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// ModelLiveness bounds one model call of a RunModel Step by what its
// runner streams (text, reasoning, events or heartbeats): the first frame
// must come within FirstChunk, no gap between frames may pass Gap, and the
// call may not pass Call. A zero bound is off. A call past a bound is
// cancelled and its attempt fails as retryable; the next attempt streams
// again, and readers drop the failed attempt's text by the attempt rule.
type ModelLiveness struct {
	FirstChunk, Gap, Call time.Duration
}

func (l ModelLiveness) off() bool { return l.FirstChunk <= 0 && l.Gap <= 0 && l.Call <= 0 }

// ErrModelCallStalled is the cause of a model call that liveness stopped.
var ErrModelCallStalled = errors.New("model call stalled")

// streamWatch tracks a model call's frames.
type streamWatch struct {
	lim   ModelLiveness
	start time.Time
	last  atomic.Int64 // unix nanoseconds of the latest frame; 0 before the first
}

// touch records a frame.
func (w *streamWatch) touch(now time.Time) { w.last.Store(now.UnixNano()) }

// check returns the stall at now, or nil.
func (w *streamWatch) check(now time.Time) error {
	if w.lim.Call > 0 && now.Sub(w.start) > w.lim.Call {
		return fmt.Errorf("%w: the call passed call_timeout (%s)", ErrModelCallStalled, w.lim.Call)
	}
	last := w.last.Load()
	if last == 0 {
		if w.lim.FirstChunk > 0 && now.Sub(w.start) > w.lim.FirstChunk {
			return fmt.Errorf("%w: no chunk within first_chunk_timeout (%s)", ErrModelCallStalled, w.lim.FirstChunk)
		}
		return nil
	}
	if gap := now.Sub(time.Unix(0, last)); w.lim.Gap > 0 && gap > w.lim.Gap {
		return fmt.Errorf("%w: no chunk for %s, past chunk_gap_timeout (%s)", ErrModelCallStalled, gap.Round(time.Millisecond), w.lim.Gap)
	}
	return nil
}

// tick is how often a watch checks: a quarter of its smallest bound, at
// least 20 ms.
func (l ModelLiveness) tick() time.Duration {
	d := time.Duration(0)
	for _, b := range []time.Duration{l.FirstChunk, l.Gap, l.Call} {
		if b > 0 && (d == 0 || b < d) {
			d = b
		}
	}
	return max(d/4, 20*time.Millisecond)
}

// watchModelCall returns a context that is cancelled, with a stall as its
// cause, when the call's frames (written to the returned writer) break
// lim. Call stop when the call returns.
func watchModelCall(ctx context.Context, lim ModelLiveness, w pluginapi.EventWriter) (context.Context, pluginapi.EventWriter, func()) {
	if lim.off() {
		return ctx, w, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	watch := &streamWatch{lim: lim, start: time.Now()}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(lim.tick())
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				if err := watch.check(now); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return ctx, watchedWriter{w, watch}, func() {
		close(done)
		cancel(nil)
	}
}

// watchedWriter touches its watch on every frame.
type watchedWriter struct {
	pluginapi.EventWriter
	watch *streamWatch
}

func (w watchedWriter) WriteTextDelta(text string) {
	w.watch.touch(time.Now())
	w.EventWriter.WriteTextDelta(text)
}

func (w watchedWriter) WriteReasoningDelta(text string) {
	w.watch.touch(time.Now())
	w.EventWriter.WriteReasoningDelta(text)
}

func (w watchedWriter) WriteEvent(eventType string, payload any) error {
	w.watch.touch(time.Now())
	return w.EventWriter.WriteEvent(eventType, payload)
}

func (w watchedWriter) Heartbeat() {
	w.watch.touch(time.Now())
	w.EventWriter.Heartbeat()
}
