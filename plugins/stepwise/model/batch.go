package model

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// FlushInterval is the longest a streamed delta waits in a batch.
const FlushInterval = 50 * time.Millisecond

// maxBatchBytes flushes a batch that grew this large at once.
const maxBatchBytes = 4096

// clock is the time source of a batcher; tests use a fake one.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

type deltaKind int

const (
	textDelta deltaKind = iota
	reasoningDelta
)

// batcher turns a provider's tiny stream deltas into fewer text_delta and
// reasoning_delta events: a batch is written through a sentence end (or a
// line break) as soon as one arrives, when it is FlushInterval old, when it reaches maxBatchBytes, when
// the other kind of delta arrives (so the order of text and reasoning is
// kept), and on Close. It is safe for concurrent use; after Close it writes
// nothing.
type batcher struct {
	out   stepwise.ModelOutput
	clock clock

	mu      sync.Mutex
	kind    deltaKind
	buf     strings.Builder
	stop    func() bool // the pending timer
	closed  bool
	written int // events written, for tests
	beats   int // heartbeats written, for tests
	lastOut time.Time
}

// PulseEvery is how often a stream that writes no text still heartbeats
// (Pulse): a host bounds the gaps between a call's chunks
// (run_model_limit.chunk_gap_timeout, at least 1 s), and a stream of tool
// call arguments or encrypted reasoning writes nothing else.
const PulseEvery = 500 * time.Millisecond

// Pulse records that the provider's stream delivered an event: when
// nothing was written for PulseEvery, the output (if it takes heartbeats,
// as a runner's event writer does) gets one.
func (b *batcher) Pulse() {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.out.(interface{ Heartbeat() })
	if b.closed || !ok {
		return
	}
	now := b.clock.Now()
	if !b.lastOut.IsZero() && now.Sub(b.lastOut) < PulseEvery {
		return
	}
	b.lastOut = now
	b.beats++
	h.Heartbeat()
}

func newBatcher(out stepwise.ModelOutput, c clock) *batcher {
	if c == nil {
		c = realClock{}
	}
	return &batcher{out: out, clock: c}
}

// Text adds visible text.
func (b *batcher) Text(s string) { b.add(textDelta, s) }

// Reasoning adds reasoning (a summary or thinking).
func (b *batcher) Reasoning(s string) { b.add(reasoningDelta, s) }

func (b *batcher) add(kind deltaKind, s string) {
	if s == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.out == nil {
		return
	}
	if b.buf.Len() > 0 && b.kind != kind {
		b.flushLocked()
	}
	b.kind = kind
	b.buf.WriteString(s)
	if b.buf.Len() >= maxBatchBytes {
		b.flushLocked()
		return
	}
	if cut := sentenceCut(s); cut > 0 {
		// Write through the last sentence end; keep the rest batched.
		all := b.buf.String()
		at := len(all) - len(s) + cut
		b.buf.Reset()
		b.buf.WriteString(all[:at])
		b.flushLocked()
		b.buf.WriteString(all[at:])
	}
	if b.buf.Len() > 0 && b.stop == nil {
		b.stop = b.clock.AfterFunc(FlushInterval, b.timerFlush)
	}
}

func (b *batcher) timerFlush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.flushLocked()
	}
}

func (b *batcher) flushLocked() {
	if b.stop != nil {
		b.stop()
		b.stop = nil
	}
	if b.buf.Len() == 0 {
		return
	}
	s := b.buf.String()
	b.buf.Reset()
	b.written++
	b.lastOut = b.clock.Now()
	if b.kind == textDelta {
		b.out.WriteTextDelta(s)
	} else {
		b.out.WriteReasoningDelta(s)
	}
}

// Flush writes what is batched.
func (b *batcher) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.flushLocked()
	}
}

// Close writes what is batched and stops the batcher.
func (b *batcher) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.flushLocked()
		b.closed = true
	}
}

// sentenceCut returns the index in s just after its last sentence end, or
// 0: after a line break, after . ! ? or … followed by closing quotes or
// brackets and then white space (kept with the sentence) or the end of s,
// and right after 。！？.
func sentenceCut(s string) int {
	cut := 0
	for i, r := range s {
		switch {
		case r == '\n':
			cut = i + 1
		case strings.ContainsRune("。！？", r):
			cut = i + utf8.RuneLen(r)
		case strings.ContainsRune(".!?…", r):
			j := i + utf8.RuneLen(r)
			for j < len(s) && strings.IndexByte(`"')]}`, s[j]) >= 0 {
				j++
			}
			if rest := s[j:]; strings.HasPrefix(rest, "”") || strings.HasPrefix(rest, "’") || strings.HasPrefix(rest, "»") {
				_, size := utf8.DecodeRuneInString(rest)
				j += size
			}
			if j == len(s) {
				cut = j
				continue
			}
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			if k > j {
				cut = k
			}
		}
	}
	return cut
}
