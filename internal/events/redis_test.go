package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dex-agents/dex-agent-worker/internal/events/redistest"
	"github.com/dex-agents/dex-agent-worker/wire"
)

var testTokenKey = []byte("a test key of at least sixteen bytes")

func newRedisBroker(t *testing.T, srv *redistest.Server, opts RedisOptions) *RedisBroker {
	t.Helper()
	opts.Client = redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: 1,
		MinRetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond})
	if opts.TokenKey == nil {
		opts.TokenKey = testTokenKey
	}
	if opts.KeyPrefix == "" {
		// Each test its own keys on a shared server.
		opts.KeyPrefix = "t:" + strings.ReplaceAll(t.Name(), "/", ":") + ":"
	}
	b, err := NewRedisBroker(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func flushRedis(t *testing.T, b Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.(*RedisBroker).Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRedisBroker(t *testing.T) {
	srv := redistest.Start(t)
	testBrokers(t, backend{
		name: "redis",
		new: func(t *testing.T, maxBytes int) Broker {
			return newRedisBroker(t, srv, RedisOptions{MaxBytesPerSession: maxBytes})
		},
		flush: flushRedis,
	})
}

// Two processes of a deployment: one publishes, the other serves the
// tokens the first issued, since both sign with the config's key. A
// process with another key refuses them.
func TestRedisTokenOfOneProcessResumesOnAnother(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	b := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	start := head(a, "s")
	for i := 1; i <= 3; i++ {
		a.Publish(ev("s", "text_delta", "t", i))
	}
	flushRedis(t, a)
	got, err := b.Read(ctx, "s", start, 2, time.Second)
	if err != nil || len(got) != 2 {
		t.Fatalf("read on the other process = %v, %v", got, err)
	}
	// The token the second process gave resumes on the first.
	rest, err := a.Read(ctx, "s", got[1].Token, 0, time.Second)
	if err != nil || len(rest) != 1 || payloadN(t, rest[0]) != 3 || rest[0].Sequence != 3 {
		t.Fatalf("resumed on the first process = %v, %v", rest, err)
	}
	other := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:", TokenKey: []byte("another key, also sixteen bytes")})
	if err := other.Check(ctx, "s", start); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("a process with another key: Check = %v, want ErrInvalidToken", err)
	}
}

// The change feed crosses processes: a worker publishes, an API process
// watches. After Redis restarts, the watcher gets a resync (what was
// published meanwhile is lost) and then the changes again.
func TestRedisChangesCrossProcessesAndResyncAfterARestart(t *testing.T) {
	srv := redistest.Start(t)
	worker := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	api := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	other := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "other:"}) // another deployment
	w, stop := api.WatchChanges()
	defer stop()
	ow, ostop := other.WatchChanges()
	defer ostop()
	worker.Publish(ev("s1", wire.EventInterruptRaised, "t", 1))
	worker.Announce(Change{SessionID: "s2", Type: wire.ChangeSessionEnded})
	flushRedis(t, worker)
	want := []Change{ch("s1", wire.EventInterruptRaised), ch("s2", wire.ChangeSessionEnded)}
	if got := readChanges(t, w, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the API process read %v, want %v", got, want)
	}
	srv.Restart(t)
	if got := readChanges(t, w, 1); got[0].Type != wire.ChangeResync {
		t.Fatalf("after a restart: %v, want a resync first", got)
	}
	// Published until the subscription is back: the watcher reads it
	// once the feed follows again.
	err := pollUntil(10*time.Second, func() bool {
		worker.Publish(ev("s3", wire.EventTurnStarted, "t", 1))
		flushRedis(t, worker)
		select {
		case <-w.Ready():
			got, _ := w.Next()
			for _, c := range got {
				if c.SessionID == "s3" {
					return true
				}
			}
		case <-time.After(200 * time.Millisecond):
		}
		return false
	})
	if err != nil {
		t.Fatal("no change arrived after Redis restarted")
	}
	select {
	case <-ow.Ready():
		if got, _ := ow.Next(); len(got) > 0 && got[0].Type != wire.ChangeResync {
			t.Fatalf("another deployment's watcher read %v", got)
		}
	default:
	}
}

// A watch that starts while Redis is down stops waiting for it, and gets a
// resync once the subscription is made: what was published meanwhile is
// lost.
func TestRedisWatchWhileRedisIsDownGetsAResync(t *testing.T) {
	srv := redistest.Start(t)
	b := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	srv.Stop()
	w, stop := b.WatchChanges()
	defer stop()
	srv.Restart(t)
	select {
	case <-w.Ready():
		if got, _ := w.Next(); len(got) == 0 || got[0].Type != wire.ChangeResync {
			t.Fatalf("after Redis came up: %v, want a resync", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no resync once Redis came up")
	}
}

// A turn's model-call cancel reaches every process of the deployment, and
// no other deployment's.
func TestRedisModelCancelReachesEveryProcess(t *testing.T) {
	srv := redistest.Start(t)
	workflowWorker := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	stepWorker := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	other := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "other:"})
	got := make(chan string, 4)
	stepWorker.OnModelCancel(func(s, run, turn string) { got <- s + "/" + run + "/" + turn })
	other.OnModelCancel(func(s, run, turn string) { got <- "other deployment: " + s + "/" + run + "/" + turn })
	workflowWorker.BroadcastModelCancel("s1", "run-a", "turn-3")
	select {
	case c := <-got:
		if c != "s1/run-a/turn-3" {
			t.Fatalf("the Step's worker got %q", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel never reached the other process")
	}
	select {
	case c := <-got:
		t.Fatalf("then %q", c)
	case <-time.After(100 * time.Millisecond):
	}
}

// pollUntil polls cond until it holds or d passes.
func pollUntil(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
	}
	return errors.New("timed out")
}

// A write repeated with the same origin and index (a client retrying after
// a lost answer, a workflow task run again on another worker) is stored
// once, and the sequence keeps no hole for it.
func TestRedisRepeatedWriteIsStoredOnce(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	b := newRedisBroker(t, srv, RedisOptions{KeyPrefix: "dep:"})
	start := head(a, "s")
	for i := 1; i <= 4; i++ {
		e := ev("s", "text_delta", "t", i)
		e.Origin, e.Index = "wf:run-1", uint64(i)
		a.Publish(e)
		if i <= 3 {
			b.Publish(e) // worker 2 runs the same workflow task again
		}
	}
	flushRedis(t, a)
	flushRedis(t, b)
	got, err := a.Read(ctx, "s", start, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("stored %d events, want 4 (each once)", len(got))
	}
	// The two processes race; whichever wrote an event first stored it.
	if sa, sb := a.Stats(), b.Stats(); sa.Published+sb.Published != 4 {
		t.Fatalf("published %d and %d, want 4 in all (the repeats are not stored)", sa.Published, sb.Published)
	}
	for i, d := range got {
		if payloadN(t, d) != i+1 || d.Sequence != uint64(i+1) {
			t.Fatalf("event %d = n %d sequence %d", i, payloadN(t, d), d.Sequence)
		}
	}
}

// Redis restarted without its data: the old tokens answer ErrExpired (the
// reader reloads the snapshot), and the new head token follows the new
// stream, even though its sequences start at 1 again.
func TestRedisRestartExpiresTheOldTokens(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	b := newRedisBroker(t, srv, RedisOptions{})
	for i := 1; i <= 5; i++ {
		b.Publish(ev("s", "text_delta", "t", i))
	}
	flushRedis(t, b)
	old := head(b, "s")
	// A reader waits at the head while Redis restarts.
	done := make(chan error, 1)
	go func() {
		for {
			got, err := b.Read(ctx, "s", old, 0, 500*time.Millisecond)
			if err != nil || len(got) > 0 {
				if err == nil {
					err = errors.New("the old token read events of the new stream")
				}
				done <- err
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	srv.Restart(t)
	var tok string
	waitFor(t, "Redis back", func() bool {
		var err error
		tok, err = b.Head(ctx, "s")
		return err == nil
	})
	for i := 1; i <= 7; i++ {
		b.Publish(ev("s", "text_delta", "t", 100+i))
	}
	flushRedis(t, b)
	select {
	case err := <-done:
		if !errors.Is(err, ErrExpired) && !strings.Contains(err.Error(), "redis") {
			t.Fatalf("the waiting reader ended with %v, want ErrExpired or a Redis error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the reader of the lost stream still waits")
	}
	if err := b.Check(ctx, "s", old); !errors.Is(err, ErrExpired) {
		t.Fatalf("Check(old token) = %v, want ErrExpired", err)
	}
	got, err := b.Read(ctx, "s", tok, 0, time.Second)
	if err != nil || len(got) != 7 || payloadN(t, got[0]) != 101 || got[0].Sequence != 1 {
		t.Fatalf("new stream = %v, %v", got, err)
	}
}

// Many readers of one session share one blocking XREAD.
func TestRedisOneBlockingReadPerSession(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	b := newRedisBroker(t, srv, RedisOptions{})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	tok := head(b, "s")
	const readers = 20
	var wg sync.WaitGroup
	counts := make([]int, readers)
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := tok
			for counts[i] < 50 {
				got, err := b.Read(ctx, "s", at, 0, 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				for _, d := range got {
					if d.Sequence != uint64(counts[i]+1) {
						t.Errorf("reader %d: sequence %d after %d events", i, d.Sequence, counts[i])
						return
					}
					counts[i]++
					at = d.Token
				}
			}
		}()
	}
	waitFor(t, "the readers to block", func() bool { return blockedClients(t, admin) >= 1 })
	time.Sleep(300 * time.Millisecond)
	if n := blockedClients(t, admin); n != 1 {
		t.Fatalf("%d clients blocked in Redis for %d readers of one session, want 1", n, readers)
	}
	for i := 1; i <= 50; i++ {
		b.Publish(ev("s", "text_delta", "t", i))
	}
	wg.Wait()
	if b.Hubs() != 1 {
		t.Fatalf("%d hubs for one session", b.Hubs())
	}
}

func blockedClients(t *testing.T, rdb *redis.Client) int {
	info, err := rdb.Info(context.Background(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			n := 0
			for _, c := range v {
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	t.Fatalf("no blocked_clients in INFO clients:\n%s", info)
	return 0
}

// A session nobody writes to expires with its TTL, in Redis itself.
func TestRedisTTLExpiresTheStream(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	b := newRedisBroker(t, srv, RedisOptions{TTL: 300 * time.Millisecond})
	tok := head(b, "s")
	b.Publish(ev("s", "text_delta", "t", 1))
	flushRedis(t, b)
	if err := b.Check(ctx, "s", tok); err != nil {
		t.Fatal(err)
	}
	until := keptUntil(b, "s")
	if d := time.Until(until); d > time.Second {
		t.Fatalf("kept until %s from now, want about 300ms", d)
	}
	waitFor(t, "the stream to expire", func() bool { return errors.Is(b.Check(ctx, "s", tok), ErrExpired) })
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	keys, err := admin.Keys(ctx, b.opts.KeyPrefix+"*").Result()
	if err != nil || len(keys) != 0 {
		t.Fatalf("keys left after the TTL: %v, %v", keys, err)
	}
}

// Redis down: Publish never blocks the session; the events are dropped and
// counted; reads fail with an error that is not a token rejection.
func TestRedisDownDropsEventsWithoutBlocking(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	b := newRedisBroker(t, srv, RedisOptions{QueueEvents: 16})
	tok := head(b, "s")
	srv.Stop()
	start := time.Now()
	for i := range 1000 {
		b.Publish(ev("s", "text_delta", "t", i))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("1000 publishes took %s with Redis down", d)
	}
	waitFor(t, "dropped events", func() bool { return b.Dropped() == 1000 })
	_, err := b.Read(ctx, "s", tok, 0, 0)
	if err == nil || Rejected(err) {
		t.Fatalf("read with Redis down = %v, want a Redis error", err)
	}
}

// FuzzParseRedisToken: a token from outside (a browser's Last-Event-ID) is
// accepted only as the broker renders it, and never panics the parser.
func FuzzParseRedisToken(f *testing.F) {
	b, err := NewRedisBroker(RedisOptions{Client: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), TokenKey: testTokenKey})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = b.Close() })
	f.Add(b.token("s", "AbCdEfGhIjKl", 7))
	f.Add("")
	f.Add("r...")
	f.Add("r.e.18446744073709551615.x")
	f.Add("r.e.-1." + strings.Repeat("A", 22))
	f.Fuzz(func(t *testing.T, token string) {
		epoch, seq, err := b.ParseToken("s", token)
		if err == nil && token != b.token("s", epoch, seq) {
			t.Fatalf("accepted %q, which the broker did not issue", token)
		}
		if err != nil && !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("ParseToken(%q) = %v, not ErrInvalidToken", token, err)
		}
	})
}
