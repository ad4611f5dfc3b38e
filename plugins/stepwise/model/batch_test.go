package model

import (
	"sync"
	"testing"
	"time"
)

// fakeClock runs timers when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, tm)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// Advance moves time on and runs the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, tm := range c.timers {
		if !tm.stopped && !tm.at.After(c.now) {
			tm.stopped = true
			due = append(due, tm)
		}
	}
	c.mu.Unlock()
	for _, tm := range due {
		tm.f()
	}
}

func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, tm := range c.timers {
		if !tm.stopped {
			n++
		}
	}
	return n
}

func TestBatcher(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	rec := &recorder{}
	b := newBatcher(rec, clk)

	// Tokens within 50 ms and no sentence end: one event when the timer fires.
	for _, tok := range []string{"Hel", "lo", " wor", "ld"} {
		b.Text(tok)
		clk.Advance(10 * time.Millisecond)
	}
	if len(rec.events) != 0 {
		t.Fatalf("written before 50 ms: %+v", rec.events)
	}
	clk.Advance(10 * time.Millisecond) // 50 ms after the first token
	if len(rec.events) != 1 || rec.events[0].text != "Hello world" {
		t.Fatalf("after 50 ms: %+v", rec.events)
	}

	// A sentence end flushes at once, and stops the timer.
	b.Text(", and")
	b.Text(" more.")
	if len(rec.events) != 2 || rec.events[1].text != ", and more." || clk.pending() != 0 {
		t.Fatalf("after a sentence: %+v, %d timers", rec.events, clk.pending())
	}
	// A sentence end inside a chunk: written through it, the rest waits.
	b.Text("Line one\nLine")
	if len(rec.events) != 3 || rec.events[2].text != "Line one\n" || clk.pending() != 1 {
		t.Fatalf("after a line break: %+v", rec.events)
	}
	b.Text(` two. He said "hi!" Then`)
	if len(rec.events) != 4 || rec.events[3].text != `Line two. He said "hi!" ` {
		t.Fatalf("a sentence end before a closing quote: %+v", rec.events)
	}
	clk.Advance(FlushInterval)
	if len(rec.events) != 5 || rec.events[4].text != "Then" {
		t.Fatalf("the rest after 50 ms: %+v", rec.events)
	}

	// Reasoning, then text: the reasoning batch is written first.
	b.Reasoning("thinking")
	b.Reasoning(" hard")
	b.Text("Answer")
	if len(rec.events) != 6 || !rec.events[5].reasoning || rec.events[5].text != "thinking hard" {
		t.Fatalf("kind switch: %+v", rec.events)
	}

	// Close writes the rest and stops everything.
	b.Close()
	if len(rec.events) != 7 || rec.events[6].text != "Answer" || rec.events[6].reasoning {
		t.Fatalf("after Close: %+v", rec.events)
	}
	b.Text("late")
	clk.Advance(time.Second)
	if len(rec.events) != 7 {
		t.Fatalf("written after Close: %+v", rec.events)
	}

	// 1,000 one-character tokens over 200 ms: about one event per 50 ms.
	rec2 := &recorder{}
	b2 := newBatcher(rec2, clk)
	for i := 0; i < 1000; i++ {
		b2.Text("x")
		if i%5 == 4 {
			clk.Advance(time.Millisecond)
		}
	}
	b2.Close()
	if n := len(rec2.events); n < 4 || n > 6 || rec2.joined(false) != string(make([]byte, 0))+repeat("x", 1000) {
		t.Fatalf("%d events for 1000 tokens in 200 ms", n)
	}
}

func repeat(s string, n int) string {
	out := make([]byte, 0, n*len(s))
	for i := 0; i < n; i++ {
		out = append(out, s...)
	}
	return string(out)
}

func TestSentenceCut(t *testing.T) {
	for s, want := range map[string]int{
		"Done.": 5, "Really? Yes": 8, "Wow! ": 5, `"Yes." he`: 7, "a\nb": 2, "所以。然后": len("所以。"),
		"3.5": 0, "word": 0, "": 0, "(see note)": 0, "e.g.x": 0, "One. Two. Thr": 10, `She said “no.” Ok`: len(`She said “no.” `),
	} {
		if got := sentenceCut(s); got != want {
			t.Errorf("sentenceCut(%q) = %d, want %d", s, got, want)
		}
	}
}

type beatRecorder struct {
	recorder
	beats int
}

func (r *beatRecorder) Heartbeat() { r.beats++ }

// TestBatcherPulse: stream events that write nothing heartbeat at most
// every PulseEvery; a text write counts as liveness too; an output without
// heartbeats gets none.
func TestBatcherPulse(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	rec := &beatRecorder{}
	b := newBatcher(rec, clk)
	for range 10 { // 10 events over 900 ms
		b.Pulse()
		clk.Advance(100 * time.Millisecond)
	}
	if rec.beats != 2 {
		t.Errorf("%d heartbeats over 900 ms of silent events, want 2 (at 0 and 500 ms)", rec.beats)
	}
	b.Text("Done.") // a sentence end writes at once
	b.Pulse()
	if rec.beats != 2 || len(rec.events) != 1 {
		t.Errorf("a pulse right after a write heartbeated: %d beats, %d events", rec.beats, len(rec.events))
	}
	b.Close()
	clk.Advance(time.Second)
	b.Pulse()
	if rec.beats != 2 {
		t.Error("a heartbeat after Close")
	}
	plain := newBatcher(&recorder{}, clk)
	plain.Pulse() // no Heartbeat method: nothing, no panic
}
