package steps

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

func TestStreamWatch(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	lim := ModelLiveness{FirstChunk: 10 * time.Second, Gap: 3 * time.Second, Call: time.Minute}
	tests := []struct {
		name   string
		frames []time.Duration // after t0
		at     time.Duration
		want   string // "" for no stall
	}{
		{"waiting for the first chunk", nil, 9 * time.Second, ""},
		{"no first chunk", nil, 11 * time.Second, "no chunk within first_chunk_timeout (10s)"},
		{"streaming", []time.Duration{time.Second, 3 * time.Second}, 5 * time.Second, ""},
		{"a gap", []time.Duration{time.Second, 3 * time.Second}, 6500 * time.Millisecond, "no chunk for 3.5s, past chunk_gap_timeout (3s)"},
		{"a long call that streams", []time.Duration{59 * time.Second}, 61 * time.Second, "the call passed call_timeout (1m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &streamWatch{lim: lim, start: t0}
			for _, f := range tt.frames {
				w.touch(t0.Add(f))
			}
			err := w.check(t0.Add(tt.at))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("stall %v, want none", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrModelCallStalled) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("stall %v, want %q", err, tt.want)
			}
		})
	}
	if (ModelLiveness{}).off() != true || (ModelLiveness{Gap: time.Second}).tick() != 250*time.Millisecond || (ModelLiveness{Call: time.Millisecond}).tick() != 20*time.Millisecond {
		t.Error("off or tick")
	}
}

type nopWriter struct{ pluginapi.EventWriter }

func (nopWriter) WriteTextDelta(string) {}
func (nopWriter) Heartbeat()            {}

// TestWatchModelCallCancelsAStalledCall: frames keep a call alive; once
// they stop for the gap, its context ends with the stall as its cause.
func TestWatchModelCallCancelsAStalledCall(t *testing.T) {
	ctx, w, stop := watchModelCall(context.Background(), ModelLiveness{Gap: 200 * time.Millisecond, FirstChunk: 5 * time.Second}, nopWriter{})
	defer stop()
	w.WriteTextDelta("a")
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), ErrModelCallStalled) {
			t.Fatalf("cause %v", context.Cause(ctx))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled call was not cancelled")
	}
	// Off: the same context, never cancelled by a watch.
	parent := context.Background()
	ctx2, w2, stop2 := watchModelCall(parent, ModelLiveness{}, nopWriter{})
	defer stop2()
	if ctx2 != parent || w2 != (nopWriter{}) {
		t.Error("an off watch wrapped the call")
	}
}
