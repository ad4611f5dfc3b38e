package events

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// DefaultCapacityBytes is a session's default event capacity: 10 MiB.
const DefaultCapacityBytes = 10 * 1024 * 1024

// DefaultMaxTotalBytes is the default cap on the events of all sessions
// together: 256 MiB.
const DefaultMaxTotalBytes = 256 * 1024 * 1024

// DefaultIdleTTL is how long an idle session's events are kept by default.
const DefaultIdleTTL = time.Hour

// streamOverhead is what a session's stream counts against
// MaxTotalBytes besides its events, so that many empty streams are bounded
// too.
const streamOverhead = 256

// ErrInvalidToken reports a resume token that this broker never issued for
// the session: forged, of another session, from before a restart, or
// malformed. Answer it with 400 so the reader reloads the snapshot.
var ErrInvalidToken = errors.New("invalid resume token")

// ErrTrimmed reports a token whose next event was trimmed: the reader fell
// behind the session's capacity and must reload the snapshot.
var ErrTrimmed = errors.New("events after this resume token were trimmed")

// ErrExpired reports a token of a session whose events the broker dropped
// (idle for IdleTTL, or evicted to stay under MaxTotalBytes). Events the
// session publishes later form a new stream that such a token never names:
// the reader must reload the snapshot.
var ErrExpired = errors.New("this resume token's events expired")

// MemoryOptions configure a MemoryBroker.
type MemoryOptions struct {
	// CapacityBytes bounds each session's retained events (default 10 MiB);
	// the oldest are trimmed first.
	CapacityBytes int
	// MaxTotalBytes bounds the retained events of all sessions together
	// (default 256 MiB). Past it, the broker drops whole sessions' events,
	// least recently written first, sessions nobody reads before those
	// with a reader; the session being written loses its oldest events last
	// (its newest event is always kept). A dropped session's tokens answer
	// ErrExpired.
	MaxTotalBytes int
	// IdleTTL drops a session's events when nothing was published to it for
	// this long and nobody reads it (default 1h; checked at most once a
	// minute). A dropped session's tokens answer ErrExpired.
	IdleTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// MemoryBroker keeps events in this process's memory: right for one worker
// process serving its own HTTP API. It is safe for concurrent use.
//
// A token names a position in one stream of one session: the broker's
// random epoch, the stream's generation, the sequence of the event before
// the position, and a MAC over all of them and the session ID. A session
// whose events are dropped gets a new generation when it publishes again,
// so an old token never names the new stream's events.
type MemoryBroker struct {
	opts  MemoryOptions
	key   []byte
	epoch string

	mu        sync.Mutex
	sessions  map[string]*stream
	lru       *list.List // of *stream, least recently written first
	total     int        // bytes of all streams, with their overhead
	nextGen   uint64
	lastSweep time.Time
	stats     Stats

	changes changeHub
}

// Stats returns what became of the events published so far.
func (b *MemoryBroker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

type entry struct {
	seq   uint64
	size  int
	event Event
}

type stream struct {
	id         string
	gen        uint64
	entries    []entry // oldest first
	next       uint64  // seq of the next event; the first event is 1
	bytes      int
	turnStarts map[string]uint64
	changed    chan struct{} // closed and replaced on every publish, closed when dropped
	lastWrite  time.Time
	readers    int
	elem       *list.Element // in MemoryBroker.lru
}

// NewMemoryBroker returns an empty in-memory broker. Tokens carry a random
// epoch, so tokens from another process or an earlier run are rejected.
func NewMemoryBroker(opts MemoryOptions) *MemoryBroker {
	if opts.CapacityBytes <= 0 {
		opts.CapacityBytes = DefaultCapacityBytes
	}
	if opts.MaxTotalBytes <= 0 {
		opts.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if opts.IdleTTL <= 0 {
		opts.IdleTTL = DefaultIdleTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Sprintf("events: no randomness for token keys: %v", err))
	}
	epoch := make([]byte, 6)
	_, _ = rand.Read(epoch)
	return &MemoryBroker{opts: opts, key: key, epoch: base64.RawURLEncoding.EncodeToString(epoch),
		sessions: map[string]*stream{}, lru: list.New()}
}

// stream returns the session's stream, creating it (with a new
// generation) if it has none.
func (b *MemoryBroker) stream(sessionID string) *stream {
	s := b.sessions[sessionID]
	if s == nil {
		b.nextGen++
		s = &stream{id: sessionID, gen: b.nextGen, next: 1, turnStarts: map[string]uint64{},
			changed: make(chan struct{}), lastWrite: b.opts.Now()}
		s.elem = b.lru.PushBack(s)
		b.sessions[sessionID] = s
		b.total += streamOverhead
	}
	return s
}

// drop forgets a stream and wakes its readers, who then see ErrExpired.
func (b *MemoryBroker) drop(s *stream) {
	delete(b.sessions, s.id)
	b.lru.Remove(s.elem)
	b.total -= s.bytes + streamOverhead
	close(s.changed)
}

// trimOldest drops a stream's oldest event.
func (b *MemoryBroker) trimOldest(s *stream) {
	old := s.entries[0]
	b.stats.Trimmed++
	s.entries = s.entries[1:]
	s.bytes -= old.size
	b.total -= old.size
	if old.event.Type == wire.EventTurnStarted && s.turnStarts[old.event.TurnID] == old.seq {
		delete(s.turnStarts, old.event.TurnID)
	}
}

// eventSize is what an event counts against the capacities.
func eventSize(e Event) int {
	return len(e.Payload) + len(e.Type) + len(e.TurnID) + len(e.StepExecutionID) + 64
}

// Publish implements Sink.
func (b *MemoryBroker) Publish(e Event) {
	size := eventSize(e)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.opts.Now()
	b.sweep(now)
	s := b.stream(e.StreamID())
	seq := s.next
	s.next++
	b.stats.Published++
	s.entries = append(s.entries, entry{seq: seq, size: size, event: e})
	s.bytes += size
	b.total += size
	s.lastWrite = now
	b.lru.MoveToBack(s.elem)
	if e.Type == wire.EventTurnStarted && e.TurnID != "" && (e.Stream == "" || e.Stream == e.SessionID) {
		s.turnStarts[e.TurnID] = seq
	}
	for s.bytes > b.opts.CapacityBytes && len(s.entries) > 1 {
		b.trimOldest(s)
	}
	b.enforceTotal(s)
	close(s.changed)
	s.changed = make(chan struct{})
	if wire.IsChangeEvent(e.Type) && e.Stream == "" {
		b.changes.publish(Change{SessionID: e.SessionID, Type: e.Type})
	}
}

// Announce implements ChangeFeed.
func (b *MemoryBroker) Announce(c Change) { b.changes.publish(c) }

// ChangeWatchers returns how many watch the change feed now.
func (b *MemoryBroker) ChangeWatchers() int { return b.changes.count() }

// WatchChanges implements ChangeFeed.
func (b *MemoryBroker) WatchChanges() (*ChangeWatch, func()) {
	w, stop := b.changes.watch()
	return w, stop
}

// enforceTotal brings the total under MaxTotalBytes: it drops the streams
// written least recently, those without readers first, then trims the
// oldest events of current, the stream just written.
func (b *MemoryBroker) enforceTotal(current *stream) {
	for _, withReaders := range []bool{false, true} {
		for el := b.lru.Front(); el != nil && b.total > b.opts.MaxTotalBytes; {
			next := el.Next()
			if s := el.Value.(*stream); s != current && (s.readers > 0) == withReaders {
				b.drop(s)
			}
			el = next
		}
	}
	for b.total > b.opts.MaxTotalBytes && len(current.entries) > 1 {
		b.trimOldest(current)
	}
}

// sweep drops idle sessions, at most once a minute.
func (b *MemoryBroker) sweep(now time.Time) {
	if now.Sub(b.lastSweep) < time.Minute {
		return
	}
	b.lastSweep = now
	// The list is in write order, so the idle streams are at its front.
	for el := b.lru.Front(); el != nil; {
		next := el.Next()
		s := el.Value.(*stream)
		if now.Sub(s.lastWrite) <= b.opts.IdleTTL {
			break
		}
		if s.readers == 0 {
			b.drop(s)
		}
		el = next
	}
}

// token renders the position after seq in generation gen of a session's
// stream.
func (b *MemoryBroker) token(sessionID string, gen, seq uint64) string {
	return b.epoch + "." + strconv.FormatUint(gen, 10) + "." + strconv.FormatUint(seq, 10) + "." + b.mac(sessionID, gen, seq)
}

func (b *MemoryBroker) mac(sessionID string, gen, seq uint64) string {
	m := hmac.New(sha256.New, b.key)
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], gen)
	binary.BigEndian.PutUint64(buf[8:], seq)
	m.Write([]byte(b.epoch))
	m.Write([]byte{0})
	m.Write([]byte(sessionID))
	m.Write([]byte{0})
	m.Write(buf[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:12])
}

// ParseToken returns the stream generation and the position a token
// names for a session.
func (b *MemoryBroker) ParseToken(sessionID, token string) (gen, seq uint64, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || len(token) > 128 {
		return 0, 0, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	if parts[0] != b.epoch {
		return 0, 0, fmt.Errorf("%w: issued by another worker process or before a restart", ErrInvalidToken)
	}
	gen, err1 := strconv.ParseUint(parts[1], 10, 64)
	seq, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	if !hmac.Equal([]byte(parts[3]), []byte(b.mac(sessionID, gen, seq))) {
		return 0, 0, fmt.Errorf("%w: not issued for this session", ErrInvalidToken)
	}
	return gen, seq, nil
}

// Head implements Broker. It starts the session's stream if it has none,
// so that the token names the stream later events join.
func (b *MemoryBroker) Head(_ context.Context, sessionID string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stream(sessionID)
	return b.token(sessionID, s.gen, s.next-1), nil
}

// KeptUntil implements Broker: the last write plus the idle TTL (the sweep
// runs once a minute, so the events may live up to a minute longer).
func (b *MemoryBroker) KeptUntil(_ context.Context, sessionID string) (time.Time, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stream(sessionID).lastWrite.Add(b.opts.IdleTTL), nil
}

// Oldest implements Broker. Like Head, it starts a stream.
func (b *MemoryBroker) Oldest(_ context.Context, sessionID string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stream(sessionID)
	if len(s.entries) == 0 {
		return b.token(sessionID, s.gen, s.next-1), nil
	}
	return b.token(sessionID, s.gen, s.entries[0].seq-1), nil
}

// TurnStart implements Broker.
func (b *MemoryBroker) TurnStart(_ context.Context, sessionID, turnID string) (string, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[sessionID]
	if s == nil {
		return "", false, nil
	}
	seq, ok := s.turnStarts[turnID]
	if !ok {
		return "", false, nil
	}
	return b.token(sessionID, s.gen, seq-1), true, nil
}

// Check implements Broker.
func (b *MemoryBroker) Check(_ context.Context, sessionID, token string) error {
	gen, after, err := b.ParseToken(sessionID, token)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.live(sessionID, gen)
	if err != nil {
		return err
	}
	_, err = s.position(after)
	return err
}

// live returns the session's stream of generation gen, or ErrExpired.
func (b *MemoryBroker) live(sessionID string, gen uint64) (*stream, error) {
	s := b.sessions[sessionID]
	if s == nil || s.gen != gen {
		return nil, fmt.Errorf("%w: the session's events were dropped (idle, or over the memory cap)", ErrExpired)
	}
	return s, nil
}

// position finds the index of the first entry after seq.
func (s *stream) position(after uint64) (int, error) {
	if after >= s.next {
		return 0, fmt.Errorf("%w: names an event this session does not have yet", ErrInvalidToken)
	}
	if len(s.entries) == 0 {
		if after == s.next-1 {
			return 0, nil
		}
		return 0, ErrTrimmed
	}
	oldest := s.entries[0].seq
	if after+1 < oldest {
		return 0, ErrTrimmed
	}
	return int(after + 1 - oldest), nil
}

// Read implements Broker.
func (b *MemoryBroker) Read(ctx context.Context, sessionID, token string, max int, wait time.Duration) ([]Delivered, error) {
	gen, after, err := b.ParseToken(sessionID, token)
	if err != nil {
		return nil, err
	}
	if max <= 0 {
		max = 256
	}
	b.mu.Lock()
	s, err := b.live(sessionID, gen)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	s.readers++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		s.readers--
		b.mu.Unlock()
	}()
	timer, stop := waitTimer(wait)
	defer stop()
	for {
		b.mu.Lock()
		if b.sessions[sessionID] != s {
			b.mu.Unlock()
			return nil, fmt.Errorf("%w: the session's events were dropped (idle, or over the memory cap)", ErrExpired)
		}
		i, err := s.position(after)
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		changed := s.changed
		if i < len(s.entries) {
			end := min(i+max, len(s.entries))
			out := make([]Delivered, 0, end-i)
			for _, e := range s.entries[i:end] {
				out = append(out, Delivered{Token: b.token(sessionID, s.gen, e.seq), Sequence: e.seq, Event: e.event})
			}
			b.mu.Unlock()
			return out, nil
		}
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer:
			return nil, nil
		case <-changed:
		}
	}
}

// Close implements Broker; a memory broker holds nothing to flush.
func (b *MemoryBroker) Close() error {
	b.changes.close()
	return nil
}

// Interface guards
var _ Broker = (*MemoryBroker)(nil)
