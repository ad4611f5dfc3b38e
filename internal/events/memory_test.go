package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func ev(session, typ, turn string, n int) Event {
	return Event{SessionID: session, Type: typ, TurnID: turn, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
}

// The test helpers drop the errors a memory broker never returns.
func head(b Broker, sid string) string {
	tok, err := b.Head(context.Background(), sid)
	if err != nil {
		panic(err)
	}
	return tok
}

func oldest(b Broker, sid string) string {
	tok, err := b.Oldest(context.Background(), sid)
	if err != nil {
		panic(err)
	}
	return tok
}

func keptUntil(b Broker, sid string) time.Time {
	at, err := b.KeptUntil(context.Background(), sid)
	if err != nil {
		panic(err)
	}
	return at
}

func turnStart(b Broker, sid, turn string) (string, bool) {
	tok, ok, err := b.TurnStart(context.Background(), sid, turn)
	if err != nil {
		panic(err)
	}
	return tok, ok
}

func payloadN(t *testing.T, d Delivered) int {
	var p struct{ N int }
	if err := json.Unmarshal(d.Event.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p.N
}

func TestReadWaitsForTheNextEvent(t *testing.T) {
	b := NewMemoryBroker(MemoryOptions{})
	head := head(b, "s")
	var wg sync.WaitGroup
	wg.Add(1)
	var got []Delivered
	var err error
	go func() {
		defer wg.Done()
		got, err = b.Read(context.Background(), "s", head, 0, 10*time.Second)
	}()
	waitFor(t, "the reader", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.sessions["s"].readers == 1
	})
	b.Publish(ev("s", "turn_started", "turn-1", 1))
	wg.Wait()
	if err != nil || len(got) != 1 || got[0].Event.Type != "turn_started" {
		t.Fatalf("read = %+v, %v", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Read(ctx, "s", got[0].Token, 0, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read = %v", err)
	}
}

func TestInvalidTokens(t *testing.T) {
	b := NewMemoryBroker(MemoryOptions{})
	b.Publish(ev("s1", "x.y", "", 1))
	other := NewMemoryBroker(MemoryOptions{})
	tests := []struct {
		name, token string
	}{
		{"empty", ""},
		{"garbage", "not-a-token"},
		{"another session's token", head(b, "s2")},
		{"another process's token", head(other, "s1")},
		{"forged sequence", forge(head(b, "s1"), 2, "0")},
		{"forged generation", forge(head(b, "s1"), 1, "7")},
		{"future event", b.token("s1", 1, 5)},
		{"too long", strings.Repeat("a", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := b.Check(context.Background(), "s1", tt.token); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Check = %v, want ErrInvalidToken", err)
			}
			if _, err := b.Read(context.Background(), "s1", tt.token, 0, 0); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Read = %v, want ErrInvalidToken", err)
			}
		})
	}
	if err := b.Check(context.Background(), "s1", head(b, "s1")); err != nil {
		t.Errorf("valid head token: %v", err)
	}
}

// forge replaces part i of a token.
func forge(token string, i int, part string) string {
	parts := strings.Split(token, ".")
	parts[i] = part
	return strings.Join(parts, ".")
}

func TestCapacityTrimsOldestAndReportsTheGap(t *testing.T) {
	b := NewMemoryBroker(MemoryOptions{CapacityBytes: 1000})
	first := head(b, "s")
	b.Publish(ev("s", "turn_started", "turn-1", 0))
	for i := 1; i <= 50; i++ {
		b.Publish(Event{SessionID: "s", Type: "text_delta", TurnID: "turn-1", Payload: json.RawMessage(`{"text":"` + strings.Repeat("x", 50) + `"}`)})
	}
	if _, err := b.Read(context.Background(), "s", first, 0, 0); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("read from a trimmed position = %v, want ErrTrimmed", err)
	}
	if _, ok := turnStart(b, "s", "turn-1"); ok {
		t.Errorf("turn start kept after its event was trimmed")
	}
	b.mu.Lock()
	bytes := b.sessions["s"].bytes
	b.mu.Unlock()
	if bytes > 1000 {
		t.Errorf("retained %d bytes, capacity 1000", bytes)
	}
}

func TestIdleSessionsAreDropped(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := NewMemoryBroker(MemoryOptions{IdleTTL: time.Hour, Now: func() time.Time { return now }})
	b.Publish(ev("old", "x.y", "", 1))
	now = now.Add(2 * time.Hour)
	b.Publish(ev("new", "x.y", "", 1))
	b.mu.Lock()
	_, kept := b.sessions["old"]
	b.mu.Unlock()
	if kept {
		t.Error("idle session kept")
	}
}

// TestSweptSessionRejectsOldTokens drops an idle session's events, lets
// the session publish again, and checks that a token of the dropped stream
// is rejected instead of naming the new stream's events.
func TestSweptSessionRejectsOldTokens(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := NewMemoryBroker(MemoryOptions{IdleTTL: time.Hour, Now: func() time.Time { return now }})
	for i := 1; i <= 5; i++ {
		b.Publish(ev("s", "text_delta", "turn-1", i))
	}
	batch, err := b.Read(context.Background(), "s", oldest(b, "s"), 3, 0)
	if err != nil || len(batch) != 3 {
		t.Fatalf("read = %v, %v", batch, err)
	}
	old := batch[2].Token // after event 3
	head := head(b, "s")

	now = now.Add(2 * time.Hour)
	b.Publish(ev("other", "x.y", "", 1)) // sweeps "s"
	for i := 101; i <= 110; i++ {
		b.Publish(ev("s", "text_delta", "turn-2", i)) // a new stream from sequence 1
	}
	for name, token := range map[string]string{"mid-stream token": old, "head token": head} {
		if err := b.Check(context.Background(), "s", token); !errors.Is(err, ErrExpired) {
			t.Errorf("%s: Check = %v, want ErrExpired", name, err)
		}
		got, err := b.Read(context.Background(), "s", token, 0, 0)
		if !errors.Is(err, ErrExpired) || len(got) != 0 {
			t.Errorf("%s: Read = %d events, %v; want ErrExpired", name, len(got), err)
		}
	}
	// The new stream's own tokens work.
	got, err := b.Read(context.Background(), "s", oldest(b, "s"), 0, 0)
	if err != nil || len(got) != 10 || payloadN(t, got[0]) != 101 {
		t.Fatalf("new stream: %d events, %v", len(got), err)
	}
}

// TestTotalCapDropsLeastRecentlyWrittenIdleSessionsFirst fills the broker
// past MaxTotalBytes: the sessions written least recently lose their events
// first, a session with a reader only once no idle one is left, and the
// session being written keeps its newest event.
func TestTotalCapDropsLeastRecentlyWrittenIdleSessionsFirst(t *testing.T) {
	perSession := streamOverhead + 4*eventSize(ev("a", "text_delta", "turn-1", 100000000))
	b := NewMemoryBroker(MemoryOptions{MaxTotalBytes: 3 * perSession})
	kept := func() []string {
		b.mu.Lock()
		defer b.mu.Unlock()
		var ids []string
		for el := b.lru.Front(); el != nil; el = el.Next() {
			ids = append(ids, el.Value.(*stream).id)
		}
		if b.total > b.opts.MaxTotalBytes {
			t.Errorf("total %d bytes > cap %d", b.total, b.opts.MaxTotalBytes)
		}
		return ids
	}
	publish := func(id string, n int) {
		for i := range n {
			b.Publish(ev(id, "text_delta", "turn-1", 100000000+i))
		}
	}
	publish("a", 4)
	publish("b", 4)
	publish("c", 4)
	if got := kept(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("sessions = %v, want a, b, c (exactly at the cap)", got)
	}
	// A reader holds "a", the least recently written.
	readA := head(b, "a")
	done := make(chan error, 1)
	go func() {
		_, err := b.Read(context.Background(), "a", readA, 0, time.Minute)
		done <- err
	}()
	waitFor(t, "the reader of a", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.sessions["a"].readers == 1
	})
	publish("d", 1) // over the cap: b, the oldest idle session, goes
	if got := kept(); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Fatalf("sessions = %v, want a (read), c, d", got)
	}
	if err := b.Check(context.Background(), "b", b.token("b", 2, 4)); !errors.Is(err, ErrExpired) {
		t.Errorf("a token of the dropped session: %v, want ErrExpired", err)
	}
	publish("c", 4) // c is written again: d is now the oldest idle session
	if got := kept(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("sessions = %v, want a, c", got)
	}
	publish("e", 4) // c, the only idle session, goes
	if got := kept(); !slices.Equal(got, []string{"a", "e"}) {
		t.Fatalf("sessions = %v, want a (read), e", got)
	}
	publish("f", 8) // e goes; then a fits beside f
	if got := kept(); !slices.Equal(got, []string{"a", "f"}) {
		t.Fatalf("sessions = %v, want a (read), f", got)
	}
	publish("f", 4) // no idle session is left: a goes, though read
	if got := kept(); !slices.Equal(got, []string{"f"}) {
		t.Fatalf("sessions = %v, want f", got)
	}
	// The dropped reader of a is woken and told to reload.
	if err := <-done; !errors.Is(err, ErrExpired) {
		t.Errorf("the reader of the dropped session: %v, want ErrExpired", err)
	}
	// Alone and still growing, f loses its oldest events.
	publish("f", 20)
	if got := kept(); !slices.Equal(got, []string{"f"}) {
		t.Fatalf("sessions = %v, want f", got)
	}
	if _, err := b.Read(context.Background(), "f", b.token("f", b.sessions["f"].gen, 0), 0, 0); !errors.Is(err, ErrTrimmed) {
		t.Errorf("f's first event was not trimmed: %v", err)
	}
	// One event larger than the cap is still kept: the newest always is.
	b.Publish(Event{SessionID: "g", Type: "text_delta", Payload: json.RawMessage(`"` + strings.Repeat("x", 4*perSession) + `"`)})
	if got, err := b.Read(context.Background(), "g", oldest(b, "g"), 0, 0); err != nil || len(got) != 1 {
		t.Errorf("the newest event: %d, %v", len(got), err)
	}
}

// waitFor polls cond until it holds (the test's deadline bounds it).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("waiting for %s: %v", what, t.Context().Err())
		case <-time.After(time.Millisecond):
		}
	}
}

func FuzzParseToken(f *testing.F) {
	b := NewMemoryBroker(MemoryOptions{})
	b.Publish(ev("s", "x.y", "", 1))
	f.Add(head(b, "s"))
	f.Add("")
	f.Add("a.b.c.d")
	f.Add(b.epoch + ".1.18446744073709551615.x")
	f.Fuzz(func(t *testing.T, token string) {
		gen, seq, err := b.ParseToken("s", token)
		if err == nil && token != b.token("s", gen, seq) {
			t.Fatalf("accepted %q, which the broker did not issue", token)
		}
	})
}

// TestKeptUntil: a session's tokens resume until its idle TTL after its
// last event; a new event moves that time.
func TestKeptUntil(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := NewMemoryBroker(MemoryOptions{IdleTTL: 30 * time.Minute, Now: func() time.Time { return now }})
	b.Publish(ev("s", "text_delta", "turn-1", 1))
	if got, want := keptUntil(b, "s"), now.Add(30*time.Minute); !got.Equal(want) {
		t.Errorf("KeptUntil = %v, want %v", got, want)
	}
	now = now.Add(10 * time.Minute)
	b.Publish(ev("s", "text_delta", "turn-1", 2))
	if got, want := keptUntil(b, "s"), now.Add(30*time.Minute); !got.Equal(want) {
		t.Errorf("KeptUntil after a new event = %v, want %v", got, want)
	}
}
