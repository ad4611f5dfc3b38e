package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func ev(session, typ, turn string, n int) Event {
	return Event{SessionID: session, Type: typ, TurnID: turn, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
}

func payloadN(t *testing.T, d Delivered) int {
	var p struct{ N int }
	if err := json.Unmarshal(d.Event.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p.N
}

func TestResumeContinuesWithoutRepeatsOrGaps(t *testing.T) {
	b := NewMemoryBroker(MemoryOptions{})
	ctx := context.Background()
	start := b.Head("s1")
	for i := 1; i <= 10; i++ {
		b.Publish(ev("s1", "text_delta", "turn-1", i))
		b.Publish(ev("s2", "text_delta", "turn-1", 100+i))
	}
	token := start
	var got []int
	for len(got) < 10 {
		batch, err := b.Read(ctx, "s1", token, 3, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range batch {
			got = append(got, payloadN(t, d))
			token = d.Token
		}
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("events = %v, want 1..10 in order", got)
		}
	}
	// Nothing more: a read with a short wait returns empty, not an error.
	if batch, err := b.Read(ctx, "s1", token, 0, 10*time.Millisecond); err != nil || len(batch) != 0 {
		t.Fatalf("read at head = %v, %v", batch, err)
	}
	if b.Head("s1") != token {
		t.Errorf("head %q != last token %q", b.Head("s1"), token)
	}
}

func TestReadWaitsForTheNextEvent(t *testing.T) {
	b := NewMemoryBroker(MemoryOptions{})
	head := b.Head("s")
	var wg sync.WaitGroup
	wg.Add(1)
	var got []Delivered
	var err error
	go func() {
		defer wg.Done()
		got, err = b.Read(context.Background(), "s", head, 0, 10*time.Second)
	}()
	time.Sleep(20 * time.Millisecond) // let the reader block; the result does not depend on it
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
		{"another session's token", b.Head("s2")},
		{"another process's token", other.Head("s1")},
		{"forged sequence", strings.Replace(b.Head("s1"), ".1.", ".0.", 1)},
		{"future event", b.token("s1", 5)},
		{"too long", strings.Repeat("a", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := b.Check("s1", tt.token); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Check = %v, want ErrInvalidToken", err)
			}
			if _, err := b.Read(context.Background(), "s1", tt.token, 0, 0); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Read = %v, want ErrInvalidToken", err)
			}
		})
	}
	if err := b.Check("s1", b.Head("s1")); err != nil {
		t.Errorf("valid head token: %v", err)
	}
}

func TestCapacityTrimsOldestAndReportsTheGap(t *testing.T) {
	b := NewMemoryBroker(MemoryOptions{CapacityBytes: 1000})
	first := b.Head("s")
	b.Publish(ev("s", "turn_started", "turn-1", 0))
	for i := 1; i <= 50; i++ {
		b.Publish(Event{SessionID: "s", Type: "text_delta", TurnID: "turn-1", Payload: json.RawMessage(`{"text":"` + strings.Repeat("x", 50) + `"}`)})
	}
	if _, err := b.Read(context.Background(), "s", first, 0, 0); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("read from a trimmed position = %v, want ErrTrimmed", err)
	}
	if _, ok := b.TurnStart("s", "turn-1"); ok {
		t.Errorf("turn start kept after its event was trimmed")
	}
	b.mu.Lock()
	bytes := b.sessions["s"].bytes
	b.mu.Unlock()
	if bytes > 1000 {
		t.Errorf("retained %d bytes, capacity 1000", bytes)
	}
}

func TestTurnStartReplaysTheTurn(t *testing.T) {
	b := NewMemoryBroker(MemoryOptions{})
	b.Publish(ev("s", "turn_started", "turn-1", 1))
	b.Publish(ev("s", "turn_completed", "turn-1", 2))
	b.Publish(ev("s", "turn_started", "turn-2", 3))
	b.Publish(ev("s", "text_delta", "turn-2", 4))
	tok, ok := b.TurnStart("s", "turn-2")
	if !ok {
		t.Fatal("no turn start")
	}
	got, err := b.Read(context.Background(), "s", tok, 0, 0)
	if err != nil || len(got) != 2 || got[0].Event.Type != "turn_started" || payloadN(t, got[1]) != 4 {
		t.Fatalf("replay = %+v, %v", got, err)
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

func FuzzParseToken(f *testing.F) {
	b := NewMemoryBroker(MemoryOptions{})
	b.Publish(ev("s", "x.y", "", 1))
	f.Add(b.Head("s"))
	f.Add("")
	f.Add("a.b.c")
	f.Add(b.epoch + ".18446744073709551615.x")
	f.Fuzz(func(t *testing.T, token string) {
		seq, err := b.ParseToken("s", token)
		if err == nil && token != b.token("s", seq) {
			t.Fatalf("accepted %q, which the broker did not issue", token)
		}
	})
}
