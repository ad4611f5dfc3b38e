package events

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisKeyPrefix starts the names of the broker's Redis keys.
const DefaultRedisKeyPrefix = "dex:events:"

// MinTokenKeyBytes is the shortest token key a RedisBroker takes.
const MinTokenKeyBytes = 16

// RedisOptions configure a RedisBroker.
type RedisOptions struct {
	// Client reaches Redis. The broker closes it in Close. Each session
	// that readers of this process follow holds one of its connections in a
	// blocking read: size its pool for them (redis.Options.PoolSize).
	Client *redis.Client
	// KeyPrefix starts every key (default "dex:events:"), so deployments
	// can share a Redis.
	KeyPrefix string
	// MaxBytesPerSession bounds each session's retained events (default
	// 10 MiB); the oldest are trimmed first, and a token before them
	// answers ErrTrimmed.
	MaxBytesPerSession int
	// TTL drops a session's events when nothing was published to it for
	// this long (default 1h); its tokens then answer ErrExpired.
	TTL time.Duration
	// TokenKey signs resume tokens. Every process of a deployment must have
	// the same key, so that a token one API process issued resumes on
	// another and after a restart. At least 16 bytes.
	TokenKey []byte
	// QueueEvents bounds the events on their way to Redis (default 8192):
	// past it, Publish drops events rather than block the session.
	QueueEvents int
	// Logger receives warnings about dropped events; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// RedisBroker keeps events in Redis Streams, one stream per session, so
// that every worker process publishes to the same stream and every API
// process reads it. It is safe for concurrent use.
//
// A session's stream has a metadata hash beside it: the stream's epoch (a
// random name given when the stream is created, so a stream created again
// after its events expired, or after Redis lost its data, never continues
// an old token), the last sequence, the oldest retained sequence, the
// retained bytes and the newest turn_started. Every event gets the next
// sequence as its explicit entry ID ("<seq>-0") in one script with the
// append, the byte trimming and the de-duplication by Origin and Index,
// so a retried write is a no-op and the sequence has no gap.
//
// Publishing is asynchronous: one goroutine per broker pipelines the
// queued events to Redis in order. Reading is one blocking XREAD per
// followed session per process (a hub), whatever the number of readers;
// a reader behind the hub's buffer reads with one XRANGE.
type RedisBroker struct {
	opts   RedisOptions
	rdb    *redis.Client
	origin string // this process's writer name for events without Origin
	count  atomic.Uint64

	queue   chan queued
	wmu     sync.RWMutex // guards closed against Publish
	closed  bool
	flushed chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc

	mu   sync.Mutex
	hubs map[string]*hub

	changes      changeHub
	followOnce   sync.Once
	changesReady chan struct{} // closed once the Pub/Sub channels are subscribed
	onCancel     atomic.Pointer[func(sessionID, runID, turnID string)]
	unsubscribed atomic.Bool // a watch stopped waiting for the first subscription

	dropped   atomic.Int64
	lastWarn  atomic.Int64
	published atomic.Int64
	trimmed   atomic.Int64
}

// Stats returns what became of the events published so far.
func (b *RedisBroker) Stats() Stats {
	return Stats{Published: b.published.Load(), Dropped: b.dropped.Load(), Trimmed: b.trimmed.Load()}
}

// NewRedisBroker returns a broker on opts.Client. It does not reach Redis:
// Ping the client first to fail fast on a wrong address.
func NewRedisBroker(opts RedisOptions) (*RedisBroker, error) {
	if opts.Client == nil {
		return nil, errors.New("events: the Redis broker needs a client")
	}
	if len(opts.TokenKey) < MinTokenKeyBytes {
		return nil, fmt.Errorf("events: the resume token key must be at least %d bytes, got %d", MinTokenKeyBytes, len(opts.TokenKey))
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultRedisKeyPrefix
	}
	if opts.MaxBytesPerSession <= 0 {
		opts.MaxBytesPerSession = DefaultCapacityBytes
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultIdleTTL
	}
	if opts.QueueEvents <= 0 {
		opts.QueueEvents = 8192
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &RedisBroker{
		opts: opts, rdb: opts.Client, origin: "p:" + randomName(9),
		queue: make(chan queued, opts.QueueEvents), flushed: make(chan struct{}),
		ctx: ctx, cancel: cancel, hubs: map[string]*hub{}, changesReady: make(chan struct{}),
	}
	go b.writeLoop()
	return b, nil
}

func randomName(n int) string {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic(fmt.Sprintf("events: no randomness: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(buf)
}

// The keys of a session share a hash tag, so the scripts also run on a
// Redis Cluster.
func (b *RedisBroker) streamKey(sessionID string) string {
	return b.opts.KeyPrefix + "{" + sessionID + "}"
}
func (b *RedisBroker) metaKey(sessionID string) string { return b.streamKey(sessionID) + ":meta" }
func (b *RedisBroker) originKey(sessionID, origin string) string {
	return b.streamKey(sessionID) + ":origin:" + origin
}

// publishScript appends one event. KEYS: stream, meta, origin. ARGV:
// index (0: no de-duplication), the entry, its size, the byte bound, the
// TTL in ms, now in ms, the epoch for a new stream, and the turn ID of a
// turn_started event. It returns the event's sequence (0 for a repeat) and
// the number of events it trimmed.
var publishScript = redis.NewScript(`
local idx = tonumber(ARGV[1])
if idx > 0 then
  local last = redis.call('GET', KEYS[3])
  if last and tonumber(last) >= idx then return {0, 0} end
end
local ttl = tonumber(ARGV[5])
if redis.call('HSETNX', KEYS[2], 'epoch', ARGV[7]) == 1 then
  redis.call('HSET', KEYS[2], 'next', 0, 'first', 1, 'bytes', 0)
end
local seq = redis.call('HINCRBY', KEYS[2], 'next', 1)
local epoch = redis.call('HGET', KEYS[2], 'epoch')
redis.call('XADD', KEYS[1], seq .. '-0', 'e', ARGV[2], 'n', ARGV[3], 'g', epoch)
local bytes = redis.call('HINCRBY', KEYS[2], 'bytes', tonumber(ARGV[3]))
redis.call('HSET', KEYS[2], 'w', ARGV[6])
if ARGV[8] ~= '' then redis.call('HSET', KEYS[2], 'turn', ARGV[8], 'turn_seq', seq) end
local max = tonumber(ARGV[4])
local trimmed = 0
if bytes > max then
  local first = tonumber(redis.call('HGET', KEYS[2], 'first'))
  local moved = true
  local before = first
  while bytes > max and first < seq and moved do
    moved = false
    local rows = redis.call('XRANGE', KEYS[1], first .. '-0', '+', 'COUNT', 128)
    for _, r in ipairs(rows) do
      local s = tonumber(string.match(r[1], '^(%d+)'))
      if s >= seq or bytes <= max then break end
      local f = r[2]
      for i = 1, #f, 2 do
        if f[i] == 'n' then bytes = bytes - tonumber(f[i + 1]) end
      end
      first = s + 1
      moved = true
    end
  end
  redis.call('HSET', KEYS[2], 'first', first, 'bytes', bytes)
  redis.call('XTRIM', KEYS[1], 'MINID', '~', first .. '-0')
  trimmed = first - before
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
if idx > 0 then redis.call('SET', KEYS[3], idx, 'PX', ttl) end
return {seq, trimmed}
`)

// ensureScript returns a session's metadata, creating an empty stream's
// when it has none (so a head token names the stream later events join).
// KEYS: meta. ARGV: epoch, TTL in ms, now in ms.
var ensureScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], 'epoch', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'next', 0, 'first', 1, 'bytes', 0, 'w', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('HMGET', KEYS[1], 'epoch', 'next', 'first', 'w', 'turn', 'turn_seq')
`)

// readScript returns the metadata and up to ARGV[2] entries after
// sequence ARGV[1], read together. KEYS: stream, meta.
var readScript = redis.NewScript(`
local m = redis.call('HMGET', KEYS[2], 'epoch', 'next', 'first')
if not m[1] then return {} end
local after = tonumber(ARGV[1])
local rows = {}
if after < tonumber(m[2]) and after + 1 >= tonumber(m[3]) then
  rows = redis.call('XRANGE', KEYS[1], '(' .. after .. '-0', '+', 'COUNT', tonumber(ARGV[2]))
end
return {m[1], m[2], m[3], rows}
`)

// redisEntry is an event as stored: the session is the stream's, unless
// SessionID names another (a sub-agent's event in its parent's stream).
type redisEntry struct {
	SessionID       string          `json:"session_id,omitempty"`
	Type            string          `json:"type"`
	TurnID          string          `json:"turn_id,omitempty"`
	StepExecutionID string          `json:"step_execution_id,omitempty"`
	Attempt         int             `json:"attempt"`
	Payload         json.RawMessage `json:"payload"`
}

// Publish implements Sink: it queues e and returns at once. When the queue
// is full (Redis is slow or down), the event is dropped and counted.
func (b *RedisBroker) Publish(e Event) {
	if e.Origin == "" {
		e.Origin, e.Index = b.origin, b.count.Add(1)
	}
	b.wmu.RLock()
	defer b.wmu.RUnlock()
	if b.closed {
		return
	}
	select {
	case b.queue <- queued{e: e}:
	default:
		b.drop(1, "the queue to Redis is full")
	}
}

// queued is an event on its way to Redis, a change announced (change
// set), or (ack set) a flush marker.
type queued struct {
	e      Event
	change *Change
	ack    chan struct{}
}

// Announce implements ChangeFeed: the change goes to Redis after the
// events published before it. Every process's watchers get it.
func (b *RedisBroker) Announce(c Change) {
	b.wmu.RLock()
	defer b.wmu.RUnlock()
	if b.closed {
		return
	}
	select {
	case b.queue <- queued{change: &c}:
	default:
		// Watchers miss it; the lists they show catch up on their next read.
	}
}

// changesChannel is the Redis Pub/Sub channel of the change feed.
func (b *RedisBroker) changesChannel() string { return b.opts.KeyPrefix + "changes" }

// cancelsChannel is the Redis Pub/Sub channel of the turns' model-call
// cancels.
func (b *RedisBroker) cancelsChannel() string { return b.opts.KeyPrefix + "model-cancels" }

// modelCancel is a message of the cancels channel.
type modelCancel struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	TurnID    string `json:"turn_id"`
}

// BroadcastModelCancel tells every process of the deployment (this one
// too, through OnModelCancel) that a turn's model calls must end. It
// returns at once: the message goes in the background, best effort (the
// engine's activity cancel stays the guarantee).
func (b *RedisBroker) BroadcastModelCancel(sessionID, runID, turnID string) {
	data, _ := json.Marshal(modelCancel{SessionID: sessionID, RunID: runID, TurnID: turnID})
	go func() {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		defer cancel()
		if err := b.rdb.Publish(ctx, b.cancelsChannel(), data).Err(); err != nil && b.ctx.Err() == nil {
			b.opts.Logger.Debug("a model-call cancel was not published to Redis; the engine's cancel follows", "error", err)
		}
	}()
}

// OnModelCancel calls fn for each turn cancel broadcast by any process,
// for the broker's life. It waits a moment for the subscription.
func (b *RedisBroker) OnModelCancel(fn func(sessionID, runID, turnID string)) {
	b.onCancel.Store(&fn)
	b.follow()
}

// follow starts the Pub/Sub subscription once and waits a moment for it.
func (b *RedisBroker) follow() {
	b.followOnce.Do(func() { go b.followPubSub() })
	select {
	case <-b.changesReady:
	case <-b.ctx.Done():
	case <-time.After(3 * time.Second):
		// Redis is slow or down: watchers get a resync once it is back.
		b.unsubscribed.Store(true)
	}
}

// WatchChanges implements ChangeFeed. The first watch of the process
// subscribes to the feed's channel, for the broker's life, and waits a
// moment for the subscription, so that it sees the changes made after it
// returns.
func (b *RedisBroker) WatchChanges() (*ChangeWatch, func()) {
	w, stop := b.changes.watch()
	b.follow()
	return w, stop
}

// followPubSub relays the change feed's Redis channel to this process's
// watchers, and the cancels channel to OnModelCancel's func, until the
// broker closes. Pub/Sub keeps nothing: after a lost connection, watchers
// get a resync once the subscription is back.
func (b *RedisBroker) followPubSub() {
	ps := b.rdb.Subscribe(b.ctx, b.changesChannel(), b.cancelsChannel())
	defer ps.Close()
	subscribed, lost, ready := false, false, false
	wait := 100 * time.Millisecond
	for {
		msg, err := ps.Receive(b.ctx)
		if b.ctx.Err() != nil {
			return
		}
		if err != nil {
			// go-redis reconnects and subscribes again on the next
			// Receive; what was published meanwhile is lost.
			lost = lost || subscribed
			if subscribed {
				b.opts.Logger.Warn("the change feed lost its Redis subscription; resubscribing", "error", err)
			}
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
			continue
		}
		wait = 100 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == b.changesChannel() {
				if lost {
					b.changes.lost()
				}
				subscribed, lost = true, false
				if !ready {
					ready = true
					close(b.changesReady)
					if b.unsubscribed.Load() {
						// Watchers stopped waiting for Redis before it
						// answered: they missed what was published
						// meanwhile.
						b.changes.lost()
					}
				}
			}
		case *redis.Message:
			if m.Channel == b.cancelsChannel() {
				var c modelCancel
				if fn := b.onCancel.Load(); fn != nil && json.Unmarshal([]byte(m.Payload), &c) == nil && c.TurnID != "" {
					(*fn)(c.SessionID, c.RunID, c.TurnID)
				}
				continue
			}
			var c Change
			if json.Unmarshal([]byte(m.Payload), &c) == nil && c.Type != "" {
				b.changes.publish(c)
			}
		}
	}
}

// Flush waits until the events published before it were written to Redis
// (or dropped), or ctx ends.
func (b *RedisBroker) Flush(ctx context.Context) error {
	ack := make(chan struct{})
	b.wmu.RLock()
	if b.closed {
		b.wmu.RUnlock()
		return errors.New("events: the broker is closed")
	}
	select {
	case b.queue <- queued{ack: ack}:
	case <-ctx.Done():
		b.wmu.RUnlock()
		return ctx.Err()
	}
	b.wmu.RUnlock()
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drop counts lost events and warns at most every ten seconds.
func (b *RedisBroker) drop(n int, why string) {
	total := b.dropped.Add(int64(n))
	now := time.Now().UnixNano()
	last := b.lastWarn.Load()
	if now-last >= int64(10*time.Second) && b.lastWarn.CompareAndSwap(last, now) {
		b.opts.Logger.Warn("live events dropped; readers that miss them reload the snapshot", "reason", why, "dropped_total", total)
	}
}

// Dropped returns how many events never reached Redis.
func (b *RedisBroker) Dropped() int64 { return b.dropped.Load() }

// writeLoop sends the queued events in order, up to 256 in a pipeline.
func (b *RedisBroker) writeLoop() {
	defer close(b.flushed)
	batch := make([]Event, 0, 256)
	var acks []chan struct{}
	var changes []Change
	add := func(q queued) {
		switch {
		case q.ack != nil:
			acks = append(acks, q.ack)
		case q.change != nil:
			changes = append(changes, *q.change)
		default:
			batch = append(batch, q.e)
			if wire.IsChangeEvent(q.e.Type) && q.e.Stream == "" {
				changes = append(changes, Change{SessionID: q.e.SessionID, Type: q.e.Type})
			}
		}
	}
	for q := range b.queue {
		batch, acks, changes = batch[:0], acks[:0], changes[:0]
		add(q)
	more:
		for len(batch) < cap(batch) {
			select {
			case q, ok := <-b.queue:
				if !ok {
					break more
				}
				add(q)
			default:
				break more
			}
		}
		b.write(batch)
		b.publishChanges(changes)
		for _, a := range acks {
			close(a)
		}
	}
}

// publishChanges sends changes to the feed's channel, once: a change
// lost on the way costs a watcher a moment, never a session its events.
func (b *RedisBroker) publishChanges(changes []Change) {
	if len(changes) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pipe := b.rdb.Pipeline()
	for _, c := range changes {
		data, _ := json.Marshal(c)
		pipe.Publish(ctx, b.changesChannel(), data)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.opts.Logger.Debug("changes not published to Redis", "changes", len(changes), "error", err)
	}
}

// write sends a batch, retrying what failed a few times: the scripts
// de-duplicate, so an event Redis applied before a lost answer is not
// stored twice.
func (b *RedisBroker) write(batch []Event) {
	wait := 50 * time.Millisecond
	for attempt := 1; len(batch) > 0; attempt++ {
		failed, err := b.writeOnce(batch)
		if len(failed) == 0 {
			return
		}
		if attempt == 5 {
			b.drop(len(failed), "Redis: "+err.Error())
			return
		}
		batch = failed
		time.Sleep(wait)
		wait *= 2
	}
}

func (b *RedisBroker) writeOnce(batch []Event) ([]Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := strconv.FormatInt(b.opts.Now().UnixMilli(), 10)
	ttl := strconv.FormatInt(b.opts.TTL.Milliseconds(), 10)
	max := strconv.Itoa(b.opts.MaxBytesPerSession)
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, e := range batch {
		other := ""
		if e.Stream != "" && e.Stream != e.SessionID {
			other = e.SessionID
		}
		entry, err := json.Marshal(redisEntry{SessionID: other, Type: e.Type, TurnID: e.TurnID, StepExecutionID: e.StepExecutionID, Attempt: e.Attempt, Payload: e.Payload})
		if err != nil {
			entry, _ = json.Marshal(redisEntry{SessionID: other, Type: e.Type, TurnID: e.TurnID, StepExecutionID: e.StepExecutionID, Attempt: e.Attempt, Payload: json.RawMessage("null")})
		}
		turn := ""
		if e.Type == wire.EventTurnStarted && other == "" {
			turn = e.TurnID
		}
		stream := e.StreamID()
		keys := []string{b.streamKey(stream), b.metaKey(stream), b.originKey(stream, e.Origin)}
		cmds[i] = publishScript.EvalSha(ctx, pipe, keys,
			strconv.FormatUint(e.Index, 10), entry, strconv.Itoa(eventSize(e)), max, ttl, now, randomName(9), turn)
	}
	_, execErr := pipe.Exec(ctx)
	var failed []Event
	var firstErr error
	noScript := false
	for i, c := range cmds {
		// A pipeline that never reached Redis can leave its commands
		// without an error of their own: only a sequence is success.
		res, err := c.Int64Slice()
		if err == nil && len(res) != 2 {
			err = execErr
			if err == nil {
				err = fmt.Errorf("the publish script answered %v", c.Val())
			}
		}
		if err != nil {
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				noScript = true
			}
			failed = append(failed, batch[i])
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if res[0] > 0 {
			b.published.Add(1)
		}
		b.trimmed.Add(res[1])
	}
	if noScript {
		// Redis restarted (or flushed its scripts): load it again.
		if err := publishScript.Load(ctx, b.rdb).Err(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return failed, firstErr
}

// token renders the position after seq in the stream of that epoch.
func (b *RedisBroker) token(sessionID, epoch string, seq uint64) string {
	return "r." + epoch + "." + strconv.FormatUint(seq, 10) + "." + b.mac(sessionID, epoch, seq)
}

func (b *RedisBroker) mac(sessionID, epoch string, seq uint64) string {
	m := hmac.New(sha256.New, b.opts.TokenKey)
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], seq)
	m.Write([]byte("dex-redis-token\x00"))
	m.Write([]byte(epoch))
	m.Write([]byte{0})
	m.Write([]byte(sessionID))
	m.Write([]byte{0})
	m.Write(buf[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// ParseToken returns the stream epoch and the position a token names for
// a session, after checking its signature.
func (b *RedisBroker) ParseToken(sessionID, token string) (epoch string, seq uint64, err error) {
	parts := strings.Split(token, ".")
	if len(token) > 160 || len(parts) != 4 || parts[0] != "r" || parts[1] == "" {
		return "", 0, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	seq, err = strconv.ParseUint(parts[2], 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != parts[2] {
		return "", 0, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	if !hmac.Equal([]byte(parts[3]), []byte(b.mac(sessionID, parts[1], seq))) {
		return "", 0, fmt.Errorf("%w: not issued for this session (or signed with another key)", ErrInvalidToken)
	}
	return parts[1], seq, nil
}

// meta is a session stream's metadata.
type meta struct {
	epoch       string
	next, first uint64 // last sequence given; oldest retained
	written     time.Time
	turn        string
	turnSeq     uint64
}

func (b *RedisBroker) ensure(ctx context.Context, sessionID string) (meta, error) {
	vals, err := ensureScript.Run(ctx, b.rdb, []string{b.metaKey(sessionID)},
		randomName(9), b.opts.TTL.Milliseconds(), b.opts.Now().UnixMilli()).Slice()
	if err != nil {
		return meta{}, fmt.Errorf("events: redis: %w", err)
	}
	str := func(i int) string {
		if i < len(vals) {
			if s, ok := vals[i].(string); ok {
				return s
			}
		}
		return ""
	}
	num := func(i int) uint64 { n, _ := strconv.ParseUint(str(i), 10, 64); return n }
	m := meta{epoch: str(0), next: num(1), first: num(2), turn: str(4), turnSeq: num(5)}
	if ms, err := strconv.ParseInt(str(3), 10, 64); err == nil {
		m.written = time.UnixMilli(ms)
	}
	if m.epoch == "" {
		return meta{}, errors.New("events: redis: the stream's metadata has no epoch")
	}
	return m, nil
}

// Head implements Broker.
func (b *RedisBroker) Head(ctx context.Context, sessionID string) (string, error) {
	m, err := b.ensure(ctx, sessionID)
	if err != nil {
		return "", err
	}
	return b.token(sessionID, m.epoch, m.next), nil
}

// Oldest implements Broker.
func (b *RedisBroker) Oldest(ctx context.Context, sessionID string) (string, error) {
	m, err := b.ensure(ctx, sessionID)
	if err != nil {
		return "", err
	}
	return b.token(sessionID, m.epoch, m.first-1), nil
}

// TurnStart implements Broker: only the newest turn_started is kept.
func (b *RedisBroker) TurnStart(ctx context.Context, sessionID, turnID string) (string, bool, error) {
	m, err := b.ensure(ctx, sessionID)
	if err != nil {
		return "", false, err
	}
	if m.turn != turnID || m.turnSeq < m.first {
		return "", false, nil
	}
	return b.token(sessionID, m.epoch, m.turnSeq-1), true, nil
}

// KeptUntil implements Broker: the last write plus the TTL.
func (b *RedisBroker) KeptUntil(ctx context.Context, sessionID string) (time.Time, error) {
	m, err := b.ensure(ctx, sessionID)
	if err != nil {
		return time.Time{}, err
	}
	return m.written.Add(b.opts.TTL), nil
}

// Check implements Broker.
func (b *RedisBroker) Check(ctx context.Context, sessionID, token string) error {
	epoch, after, err := b.ParseToken(sessionID, token)
	if err != nil {
		return err
	}
	_, err = b.readRedis(ctx, sessionID, epoch, after, 0)
	return err
}

var errExpiredStream = fmt.Errorf("%w: the session's events expired (idle past the TTL, or Redis lost them)", ErrExpired)

// readRedis reads up to max events after a position (none for max 0),
// checking the position against the stream.
func (b *RedisBroker) readRedis(ctx context.Context, sessionID, epoch string, after uint64, max int) ([]Delivered, error) {
	vals, err := readScript.Run(ctx, b.rdb, []string{b.streamKey(sessionID), b.metaKey(sessionID)}, after, max).Slice()
	if err != nil {
		return nil, fmt.Errorf("events: redis: %w", err)
	}
	if len(vals) < 4 {
		return nil, errExpiredStream
	}
	if s, _ := vals[0].(string); s != epoch {
		return nil, errExpiredStream
	}
	next, _ := strconv.ParseUint(fmt.Sprint(vals[1]), 10, 64)
	first, _ := strconv.ParseUint(fmt.Sprint(vals[2]), 10, 64)
	if after > next {
		return nil, fmt.Errorf("%w: names an event this session does not have yet", ErrInvalidToken)
	}
	if after+1 < first {
		return nil, ErrTrimmed
	}
	rows, _ := vals[3].([]any)
	out := make([]Delivered, 0, len(rows))
	for _, r := range rows {
		d, err := b.parseRow(sessionID, epoch, r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if len(out) > 0 && out[0].Sequence != after+1 {
		return nil, ErrTrimmed
	}
	return out, nil
}

// parseRow decodes an XRANGE row: [id, [field, value, ...]].
func (b *RedisBroker) parseRow(sessionID, epoch string, r any) (Delivered, error) {
	row, ok := r.([]any)
	if !ok || len(row) != 2 {
		return Delivered{}, errors.New("events: redis: a stream entry is not [id, fields]")
	}
	id, _ := row[0].(string)
	fields, _ := row[1].([]any)
	values := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		v, _ := fields[i+1].(string)
		values[k] = v
	}
	return b.decode(sessionID, epoch, id, values)
}

func (b *RedisBroker) decode(sessionID, epoch, id string, values map[string]string) (Delivered, error) {
	seqText, _, _ := strings.Cut(id, "-")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return Delivered{}, fmt.Errorf("events: redis: entry ID %q is not a sequence", id)
	}
	var en redisEntry
	if err := json.Unmarshal([]byte(values["e"]), &en); err != nil {
		return Delivered{}, fmt.Errorf("events: redis: entry %s: %w", id, err)
	}
	owner := sessionID
	if en.SessionID != "" {
		owner = en.SessionID
	}
	return Delivered{
		Token: b.token(sessionID, epoch, seq), Sequence: seq,
		Event: Event{SessionID: owner, Type: en.Type, TurnID: en.TurnID, StepExecutionID: en.StepExecutionID, Attempt: en.Attempt, Payload: en.Payload},
	}, nil
}

// Read implements Broker. A reader at the stream's head waits on the
// session's hub; one behind reads from the hub's buffer, or from Redis
// when the buffer does not reach back to it.
func (b *RedisBroker) Read(ctx context.Context, sessionID, token string, max int, wait time.Duration) ([]Delivered, error) {
	epoch, after, err := b.ParseToken(sessionID, token)
	if err != nil {
		return nil, err
	}
	if max <= 0 {
		max = 256
	}
	h := b.subscribe(sessionID)
	defer b.unsubscribe(h)
	timer, stop := waitTimer(wait)
	defer stop()
	for {
		out, atHead, changed := h.take(epoch, after, max)
		if len(out) > 0 {
			return out, nil
		}
		if !atHead {
			out, err := b.readRedis(ctx, sessionID, epoch, after, max)
			if err != nil || len(out) > 0 {
				return out, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer:
			return nil, nil
		case <-changed:
		}
	}
}

// Ping reports whether Redis answers (readiness of an API process).
func (b *RedisBroker) Ping(ctx context.Context) error {
	if err := b.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("events: redis: %w", err)
	}
	return nil
}

// Close implements Broker: it sends the queued events (for up to five
// seconds), stops the hubs and closes the client.
func (b *RedisBroker) Close() error {
	b.wmu.Lock()
	if b.closed {
		b.wmu.Unlock()
		return nil
	}
	b.closed = true
	close(b.queue)
	b.wmu.Unlock()
	select {
	case <-b.flushed:
	case <-time.After(5 * time.Second):
		b.opts.Logger.Warn("live events still on their way to Redis were dropped at shutdown")
	}
	b.cancel()
	b.changes.close()
	return b.rdb.Close()
}

// hubBufferEvents and hubBufferBytes bound a hub's buffer of recent
// events.
const (
	hubBufferEvents = 2048
	hubBufferBytes  = 4 << 20
	hubLinger       = 30 * time.Second
	hubBlock        = 2 * time.Second
)

// hub follows one session's stream for every reader of this process with
// one blocking XREAD, and keeps its newest events.
type hub struct {
	b   *RedisBroker
	sid string

	mu        sync.Mutex
	epoch     string // "" until the hub knows the stream
	last      uint64 // newest sequence the hub has seen
	buf       []Delivered
	bufBytes  int
	changed   chan struct{}
	subs      int
	idleSince time.Time
}

func (b *RedisBroker) subscribe(sessionID string) *hub {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.hubs[sessionID]
	if h == nil {
		h = &hub{b: b, sid: sessionID, changed: make(chan struct{})}
		b.hubs[sessionID] = h
		go h.run()
	}
	h.mu.Lock()
	h.subs++
	h.mu.Unlock()
	return h
}

func (b *RedisBroker) unsubscribe(h *hub) {
	h.mu.Lock()
	h.subs--
	if h.subs == 0 {
		h.idleSince = time.Now()
	}
	h.mu.Unlock()
}

// Hubs returns the number of sessions this process follows in Redis.
func (b *RedisBroker) Hubs() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.hubs)
}

// take returns the buffered events after a position of the stream of
// epoch; atHead when the hub knows that stream has nothing after it yet
// (the reader waits on changed instead of reading Redis).
func (h *hub) take(epoch string, after uint64, max int) (out []Delivered, atHead bool, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	changed = h.changed
	if h.epoch != epoch || h.epoch == "" {
		return nil, false, changed
	}
	if after == h.last {
		return nil, true, changed
	}
	if n := len(h.buf); n > 0 && h.buf[0].Sequence <= after+1 && after < h.last {
		i := int(after + 1 - h.buf[0].Sequence)
		end := min(i+max, n)
		return append([]Delivered(nil), h.buf[i:end]...), false, changed
	}
	return nil, false, changed
}

// wake tells the waiting readers to look again; call with h.mu held.
func (h *hub) wake() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// reset forgets the stream (Redis lost it, or it expired).
func (h *hub) reset() {
	h.mu.Lock()
	h.epoch, h.last, h.buf, h.bufBytes = "", 0, nil, 0
	h.wake()
	h.mu.Unlock()
}

// idle removes the hub when nobody read it for hubLinger.
func (h *hub) idle() bool {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs > 0 || time.Since(h.idleSince) < hubLinger {
		return false
	}
	delete(h.b.hubs, h.sid)
	return true
}

func (h *hub) run() {
	b := h.b
	ctx := b.ctx
	key := b.streamKey(h.sid)
	backoff := 100 * time.Millisecond
	pause := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
		return true
	}
	defer func() {
		h.b.mu.Lock()
		if h.b.hubs[h.sid] == h {
			delete(h.b.hubs, h.sid)
		}
		h.b.mu.Unlock()
		h.reset()
	}()
	for ctx.Err() == nil {
		h.mu.Lock()
		epoch, last := h.epoch, h.last
		h.mu.Unlock()
		if epoch == "" {
			vals, err := b.rdb.HMGet(ctx, b.metaKey(h.sid), "epoch", "next").Result()
			if err != nil || len(vals) < 2 || vals[0] == nil {
				// Redis is down, or the stream is gone: readers get their
				// answer from Redis; look again soon.
				if h.idle() || !pause() {
					return
				}
				continue
			}
			next, _ := strconv.ParseUint(fmt.Sprint(vals[1]), 10, 64)
			h.mu.Lock()
			h.epoch, h.last = vals[0].(string), next
			h.wake()
			h.mu.Unlock()
			backoff = 100 * time.Millisecond
			continue
		}
		res, err := b.rdb.XRead(ctx, &redis.XReadArgs{
			Streams: []string{key, strconv.FormatUint(last, 10) + "-0"}, Count: 512, Block: hubBlock,
		}).Result()
		switch {
		case errors.Is(err, redis.Nil):
			// Nothing new: check the stream is still the one we follow.
			cur, err := b.rdb.HGet(ctx, b.metaKey(h.sid), "epoch").Result()
			if err != nil || cur != epoch {
				h.reset()
			}
			if h.idle() {
				return
			}
			continue
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			h.reset()
			if !pause() {
				return
			}
			continue
		}
		backoff = 100 * time.Millisecond
		stale := false
		h.mu.Lock()
		for _, s := range res {
			for _, m := range s.Messages {
				values := map[string]string{}
				for k, v := range m.Values {
					values[k], _ = v.(string)
				}
				if values["g"] != epoch {
					// A stream created again under the same key (Redis
					// lost its data while this read was retried): its
					// events never continue the tokens of the old one.
					stale = true
					break
				}
				d, err := b.decode(h.sid, epoch, m.ID, values)
				if err != nil {
					b.opts.Logger.Warn("skipped an undecodable event in Redis", "session_id", h.sid, "error", err)
					continue
				}
				if d.Sequence != h.last+1 {
					// Trimmed under us: the buffer restarts here.
					h.buf, h.bufBytes = nil, 0
				}
				h.buf = append(h.buf, d)
				h.bufBytes += eventSize(d.Event)
				h.last = d.Sequence
			}
		}
		if stale {
			h.mu.Unlock()
			h.reset()
			continue
		}
		for len(h.buf) > 1 && (len(h.buf) > hubBufferEvents || h.bufBytes > hubBufferBytes) {
			h.bufBytes -= eventSize(h.buf[0].Event)
			h.buf = h.buf[1:]
		}
		h.wake()
		h.mu.Unlock()
	}
}

// Interface guards
var _ Broker = (*RedisBroker)(nil)
