package events

import (
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
)

// DefaultCapacityBytes is a session's default event capacity: 10 MiB.
const DefaultCapacityBytes = 10 * 1024 * 1024

// ErrInvalidToken reports a resume token that this broker never issued for
// the session: forged, of another session, from before a restart, or
// malformed. Answer it with 400 so the reader reloads the snapshot.
var ErrInvalidToken = errors.New("invalid resume token")

// ErrTrimmed reports a token whose next event was trimmed: the reader fell
// behind the session's capacity and must reload the snapshot.
var ErrTrimmed = errors.New("events after this resume token were trimmed")

// Delivered is an event with the resume token that continues after it.
type Delivered struct {
	Token string
	Event Event
}

// Broker stores each session's recent events and serves them to readers
// from resume tokens. Publishing never blocks on readers.
type Broker interface {
	Sink
	// Head returns the token after the newest event of a session (the start
	// of an empty stream for a session with no events).
	Head(sessionID string) string
	// TurnStart returns the token just before the turn_started event of a
	// turn, so a reader replays that turn's events; false when the broker no
	// longer holds it.
	TurnStart(sessionID, turnID string) (string, bool)
	// Oldest returns the token before the oldest retained event.
	Oldest(sessionID string) string
	// Check validates a token for a session without reading.
	Check(sessionID, token string) error
	// Read waits until events after token exist, or ctx ends or wait
	// passes, and returns up to max of them. It returns ErrInvalidToken or
	// ErrTrimmed for a token it cannot continue.
	Read(ctx context.Context, sessionID, token string, max int, wait time.Duration) ([]Delivered, error)
}

// MemoryOptions configure a MemoryBroker.
type MemoryOptions struct {
	// CapacityBytes bounds each session's retained events (default 10 MiB);
	// the oldest are trimmed first.
	CapacityBytes int
	// IdleTTL drops a session's events when nothing was published to it for
	// this long (default 1h). A dropped session's old tokens then read as
	// trimmed.
	IdleTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// MemoryBroker keeps events in this process's memory: right for one worker
// process serving its own HTTP API. It is safe for concurrent use.
type MemoryBroker struct {
	opts  MemoryOptions
	key   []byte
	epoch string

	mu        sync.Mutex
	sessions  map[string]*stream
	lastSweep time.Time
}

type entry struct {
	seq   uint64
	size  int
	event Event
}

type stream struct {
	entries    []entry // oldest first
	next       uint64  // seq of the next event; the first event is 1
	bytes      int
	turnStarts map[string]uint64
	changed    chan struct{} // closed and replaced on every publish
	lastWrite  time.Time
	readers    int
}

// NewMemoryBroker returns an empty in-memory broker. Tokens carry a random
// epoch, so tokens from another process or an earlier run are rejected.
func NewMemoryBroker(opts MemoryOptions) *MemoryBroker {
	if opts.CapacityBytes <= 0 {
		opts.CapacityBytes = DefaultCapacityBytes
	}
	if opts.IdleTTL <= 0 {
		opts.IdleTTL = time.Hour
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
	return &MemoryBroker{opts: opts, key: key, epoch: base64.RawURLEncoding.EncodeToString(epoch), sessions: map[string]*stream{}}
}

func (b *MemoryBroker) stream(sessionID string) *stream {
	s := b.sessions[sessionID]
	if s == nil {
		s = &stream{next: 1, turnStarts: map[string]uint64{}, changed: make(chan struct{}), lastWrite: b.opts.Now()}
		b.sessions[sessionID] = s
	}
	return s
}

// Publish implements Sink.
func (b *MemoryBroker) Publish(e Event) {
	size := len(e.Payload) + len(e.Type) + len(e.TurnID) + len(e.StepExecutionID) + 64
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.opts.Now()
	b.sweep(now)
	s := b.stream(e.SessionID)
	seq := s.next
	s.next++
	s.entries = append(s.entries, entry{seq: seq, size: size, event: e})
	s.bytes += size
	s.lastWrite = now
	if e.Type == "turn_started" && e.TurnID != "" {
		s.turnStarts[e.TurnID] = seq
	}
	for s.bytes > b.opts.CapacityBytes && len(s.entries) > 1 {
		old := s.entries[0]
		s.entries = s.entries[1:]
		s.bytes -= old.size
		if old.event.Type == "turn_started" && s.turnStarts[old.event.TurnID] == old.seq {
			delete(s.turnStarts, old.event.TurnID)
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// sweep drops idle sessions, at most once a minute.
func (b *MemoryBroker) sweep(now time.Time) {
	if now.Sub(b.lastSweep) < time.Minute {
		return
	}
	b.lastSweep = now
	for id, s := range b.sessions {
		if s.readers == 0 && now.Sub(s.lastWrite) > b.opts.IdleTTL {
			delete(b.sessions, id)
		}
	}
}

// token renders the position after seq.
func (b *MemoryBroker) token(sessionID string, seq uint64) string {
	return b.epoch + "." + strconv.FormatUint(seq, 10) + "." + b.mac(sessionID, seq)
}

func (b *MemoryBroker) mac(sessionID string, seq uint64) string {
	m := hmac.New(sha256.New, b.key)
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], seq)
	m.Write([]byte(b.epoch))
	m.Write([]byte{0})
	m.Write([]byte(sessionID))
	m.Write([]byte{0})
	m.Write(buf[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:12])
}

// ParseToken returns the position a token names for a session.
func (b *MemoryBroker) ParseToken(sessionID, token string) (uint64, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(token) > 128 {
		return 0, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	if parts[0] != b.epoch {
		return 0, fmt.Errorf("%w: issued by another worker process or before a restart", ErrInvalidToken)
	}
	seq, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	if !hmac.Equal([]byte(parts[2]), []byte(b.mac(sessionID, seq))) {
		return 0, fmt.Errorf("%w: not issued for this session", ErrInvalidToken)
	}
	return seq, nil
}

// Head implements Broker.
func (b *MemoryBroker) Head(sessionID string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[sessionID]
	if s == nil {
		return b.token(sessionID, 0)
	}
	return b.token(sessionID, s.next-1)
}

// Oldest implements Broker.
func (b *MemoryBroker) Oldest(sessionID string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[sessionID]
	switch {
	case s == nil:
		return b.token(sessionID, 0)
	case len(s.entries) == 0:
		return b.token(sessionID, s.next-1)
	}
	return b.token(sessionID, s.entries[0].seq-1)
}

// TurnStart implements Broker.
func (b *MemoryBroker) TurnStart(sessionID, turnID string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[sessionID]
	if s == nil {
		return "", false
	}
	seq, ok := s.turnStarts[turnID]
	if !ok {
		return "", false
	}
	return b.token(sessionID, seq-1), true
}

// Check implements Broker.
func (b *MemoryBroker) Check(sessionID, token string) error {
	after, err := b.ParseToken(sessionID, token)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	_, _, err = b.position(sessionID, after)
	return err
}

// position finds the index of the first entry after seq; ch is closed
// when a new event arrives.
func (b *MemoryBroker) position(sessionID string, after uint64) (int, chan struct{}, error) {
	s := b.stream(sessionID)
	if after >= s.next {
		return 0, nil, fmt.Errorf("%w: names an event this session does not have yet", ErrInvalidToken)
	}
	if len(s.entries) == 0 {
		if after == s.next-1 {
			return 0, s.changed, nil
		}
		return 0, nil, ErrTrimmed
	}
	oldest := s.entries[0].seq
	if after+1 < oldest {
		return 0, nil, ErrTrimmed
	}
	return int(after + 1 - oldest), s.changed, nil
}

// Read implements Broker.
func (b *MemoryBroker) Read(ctx context.Context, sessionID, token string, max int, wait time.Duration) ([]Delivered, error) {
	after, err := b.ParseToken(sessionID, token)
	if err != nil {
		return nil, err
	}
	if max <= 0 {
		max = 256
	}
	b.mu.Lock()
	b.stream(sessionID).readers++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if s := b.sessions[sessionID]; s != nil {
			s.readers--
		}
		b.mu.Unlock()
	}()
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	for {
		b.mu.Lock()
		i, changed, err := b.position(sessionID, after)
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		s := b.sessions[sessionID]
		if i < len(s.entries) {
			end := i + max
			if end > len(s.entries) {
				end = len(s.entries)
			}
			out := make([]Delivered, 0, end-i)
			for _, e := range s.entries[i:end] {
				out = append(out, Delivered{Token: b.token(sessionID, e.seq), Event: e.event})
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

// Interface guards
var _ Broker = (*MemoryBroker)(nil)
