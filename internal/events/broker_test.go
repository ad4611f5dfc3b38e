package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// backend is a broker under test, with a way to wait for its writes.
type backend struct {
	name  string
	new   func(t *testing.T, maxBytes int) Broker
	flush func(t *testing.T, b Broker)
}

var memoryBackend = backend{
	name: "memory",
	new: func(t *testing.T, maxBytes int) Broker {
		return NewMemoryBroker(MemoryOptions{CapacityBytes: maxBytes})
	},
	flush: func(*testing.T, Broker) {},
}

// testBrokers runs the tests every broker must pass.
func testBrokers(t *testing.T, bk backend) {
	ctx := context.Background()
	t.Run("ResumeWithoutRepeatsOrGaps", func(t *testing.T) {
		b := bk.new(t, 0)
		start := head(b, "s1")
		for i := 1; i <= 10; i++ {
			b.Publish(ev("s1", "text_delta", "turn-1", i))
			b.Publish(ev("s2", "text_delta", "turn-1", 100+i))
		}
		bk.flush(t, b)
		token := start
		var got []int
		var seqs []uint64
		for len(got) < 10 {
			batch, err := b.Read(ctx, "s1", token, 3, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range batch {
				got = append(got, payloadN(t, d))
				seqs = append(seqs, d.Sequence)
				token = d.Token
			}
		}
		for i, n := range got {
			if n != i+1 || seqs[i] != uint64(i+1) {
				t.Fatalf("events = %v with sequences %v, want 1..10 in order", got, seqs)
			}
		}
		if batch, err := b.Read(ctx, "s1", token, 0, 10*time.Millisecond); err != nil || len(batch) != 0 {
			t.Fatalf("read at head = %v, %v", batch, err)
		}
		if h := head(b, "s1"); h != token {
			t.Errorf("head %q != last token %q", h, token)
		}
	})
	t.Run("ReadWaitsForTheNextEvent", func(t *testing.T) {
		b := bk.new(t, 0)
		tok := head(b, "s")
		var wg sync.WaitGroup
		got := make([][]Delivered, 5)
		errs := make([]error, 5)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = b.Read(ctx, "s", tok, 0, 20*time.Second)
			}()
		}
		time.Sleep(100 * time.Millisecond)
		b.Publish(ev("s", "turn_started", "turn-1", 1))
		wg.Wait()
		for i := range got {
			if errs[i] != nil || len(got[i]) != 1 || got[i][0].Event.Type != "turn_started" {
				t.Fatalf("reader %d got %v, %v", i, got[i], errs[i])
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := b.Read(cctx, "s", got[0][0].Token, 0, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("read past a cancelled context = %v", err)
		}
	})
	t.Run("InvalidTokens", func(t *testing.T) {
		b := bk.new(t, 0)
		b.Publish(ev("s1", "text_delta", "t", 1))
		bk.flush(t, b)
		good := head(b, "s1")
		for _, tok := range []string{"", "garbage", "a.b.c.d", head(b, "s2"), forgeLast(good), strings.Repeat("x", 500)} {
			if err := b.Check(ctx, "s1", tok); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Check(%q) = %v, want ErrInvalidToken", tok, err)
			}
			if _, err := b.Read(ctx, "s1", tok, 0, 0); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Read(%q) = %v, want ErrInvalidToken", tok, err)
			}
		}
		if err := b.Check(ctx, "s1", good); err != nil {
			t.Errorf("Check(head) = %v", err)
		}
	})
	t.Run("TrimsOldestAndReportsTheGap", func(t *testing.T) {
		b := bk.new(t, 64*1024)
		first := head(b, "s")
		big := strings.Repeat("x", 10*1024)
		for i := 1; i <= 20; i++ {
			e := ev("s", "text_delta", "t", i)
			e.Payload = []byte(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, big))
			b.Publish(e)
		}
		bk.flush(t, b)
		if err := b.Check(ctx, "s", first); !errors.Is(err, ErrTrimmed) {
			t.Fatalf("Check(first) = %v, want ErrTrimmed", err)
		}
		if _, err := b.Read(ctx, "s", first, 0, 0); !errors.Is(err, ErrTrimmed) {
			t.Fatalf("Read(first) = %v, want ErrTrimmed", err)
		}
		got, err := b.Read(ctx, "s", oldest(b, "s"), 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < 4 || len(got) > 7 || payloadN(t, got[len(got)-1]) != 20 {
			t.Fatalf("kept %d events ending with %d, want the newest 4 to 7 (64 KiB of 10 KiB events)", len(got), payloadN(t, got[len(got)-1]))
		}
		for i := 1; i < len(got); i++ {
			if got[i].Sequence != got[i-1].Sequence+1 {
				t.Fatalf("a gap in the kept events: %d then %d", got[i-1].Sequence, got[i].Sequence)
			}
		}
		st := b.(interface{ Stats() Stats }).Stats()
		if st.Published != 20 || st.Trimmed != int64(20-len(got)) || st.Dropped != 0 {
			t.Fatalf("stats %+v, want 20 published, %d trimmed", st, 20-len(got))
		}
	})
	t.Run("TurnStartReplaysTheTurn", func(t *testing.T) {
		b := bk.new(t, 0)
		b.Publish(ev("s", "turn_started", "turn-1", 1))
		b.Publish(ev("s", "text_delta", "turn-1", 2))
		b.Publish(ev("s", "turn_started", "turn-2", 3))
		b.Publish(ev("s", "text_delta", "turn-2", 4))
		bk.flush(t, b)
		tok, ok := turnStart(b, "s", "turn-2")
		if !ok {
			t.Fatal("no turn start for turn-2")
		}
		got, err := b.Read(ctx, "s", tok, 0, 0)
		if err != nil || len(got) != 2 || payloadN(t, got[0]) != 3 {
			t.Fatalf("turn-2 replay = %v, %v", got, err)
		}
		if _, ok := turnStart(b, "s", "turn-9"); ok {
			t.Fatal("a turn start for a turn that never started")
		}
	})

	t.Run("ChangeFeed", func(t *testing.T) {
		b := bk.new(t, 0)
		feed := b.(ChangeFeed)
		b.Publish(ev("s0", wire.EventInterruptRaised, "turn-1", 1)) // before the watch: not seen
		bk.flush(t, b)
		w, stop := feed.WatchChanges()
		defer stop()
		w2, stop2 := feed.WatchChanges()
		b.Publish(ev("s1", wire.EventTurnStarted, "turn-1", 1))
		b.Publish(ev("s1", wire.EventTextDelta, "turn-1", 2)) // not a change
		b.Publish(ev("s2", wire.EventInterruptRaised, "turn-1", 3))
		feed.Announce(Change{SessionID: "s3", Type: wire.ChangeSessionStarted})
		b.Publish(ev("s2", wire.EventInterruptResolved, "turn-1", 4))
		b.Publish(ev("s1", wire.EventTurnCompleted, "turn-1", 5))
		bk.flush(t, b)
		want := []Change{ch("s1", wire.EventTurnStarted), ch("s2", wire.EventInterruptRaised), ch("s3", wire.ChangeSessionStarted),
			ch("s2", wire.EventInterruptResolved), ch("s1", wire.EventTurnCompleted)}
		for i, w := range []*ChangeWatch{w, w2} {
			if got := readChanges(t, w, len(want)); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("watcher %d got %v, want %v", i, got, want)
			}
		}
		// A stopped watch gets nothing more and says so.
		stop2()
		b.Publish(ev("s1", wire.EventTurnStarted, "turn-2", 6))
		bk.flush(t, b)
		if got := readChanges(t, w, 1); fmt.Sprint(got) != fmt.Sprint([]Change{ch("s1", wire.EventTurnStarted)}) {
			t.Fatalf("after the other watch stopped: %v", got)
		}
		if got, open := w2.Next(); len(got) != 0 || open {
			t.Fatalf("a stopped watch read %v, open %v", got, open)
		}
	})
	t.Run("SubAgentEventsInTheParentsStream", func(t *testing.T) {
		// A sub-agent writes its own stream quietly (Stream: itself) and
		// its parent's (Stream: the parent), keeping its session ID; the
		// change feed hears neither.
		b := bk.new(t, 0)
		w, stop := b.(ChangeFeed).WatchChanges()
		defer stop()
		parentStart, childStart := head(b, "p"), head(b, "p.sub-1")
		b.Publish(ev("p", wire.EventTurnStarted, "turn-1", 1))
		for i, typ := range []string{wire.EventTurnStarted, wire.EventInterruptRaised} {
			e := ev("p.sub-1", typ, "turn-1", 10+i)
			e.Stream = "p.sub-1"
			b.Publish(e)
			e.Stream = "p"
			b.Publish(e)
		}
		b.Publish(ev("p", wire.EventTurnCompleted, "turn-1", 2))
		bk.flush(t, b)
		batch, err := b.Read(ctx, "p", parentStart, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range batch {
			got = append(got, fmt.Sprintf("%s:%s:%d", d.Event.SessionID, d.Event.Type, payloadN(t, d)))
		}
		if want := "[p:turn_started:1 p.sub-1:turn_started:10 p.sub-1:interrupt_raised:11 p:turn_completed:2]"; fmt.Sprint(got) != want {
			t.Fatalf("the parent's stream: %v, want %s", got, want)
		}
		batch, err = b.Read(ctx, "p.sub-1", childStart, 10, time.Second)
		if err != nil || len(batch) != 2 || batch[0].Event.SessionID != "p.sub-1" {
			t.Fatalf("the child's stream: %+v %v", batch, err)
		}
		// The parent's turn_started is the parent's; the child's is its own.
		if tok, ok, err := b.TurnStart(ctx, "p", "turn-1"); err != nil || !ok || tok != parentStart {
			t.Fatalf("the parent's turn start: %q %v %v (want %q)", tok, ok, err, parentStart)
		}
		if _, ok, err := b.TurnStart(ctx, "p.sub-1", "turn-1"); err != nil || !ok {
			t.Fatalf("the child's turn start: %v %v", ok, err)
		}
		if got := readChanges(t, w, 2); fmt.Sprint(got) != fmt.Sprint([]Change{ch("p", wire.EventTurnStarted), ch("p", wire.EventTurnCompleted)}) {
			t.Fatalf("changes: %v", got)
		}
	})
	t.Run("ChangeFeedEndsWhenTheBrokerCloses", func(t *testing.T) {
		b := bk.new(t, 0)
		w, stop := b.(ChangeFeed).WatchChanges()
		defer stop()
		_ = b.Close()
		select {
		case <-w.Ready():
		case <-time.After(5 * time.Second):
			t.Fatal("the watch was not told that the broker closed")
		}
		if _, open := w.Next(); open {
			t.Fatal("the watch is open after the broker closed")
		}
	})
}

// ch is a change.
func ch(sessionID, typ string) Change { return Change{SessionID: sessionID, Type: typ} }

// readChanges reads n changes from w, failing after 5 s.
func readChanges(t *testing.T, w *ChangeWatch, n int) []Change {
	t.Helper()
	var got []Change
	deadline := time.After(5 * time.Second)
	for len(got) < n {
		select {
		case <-w.Ready():
			more, _ := w.Next()
			got = append(got, more...)
		case <-deadline:
			t.Fatalf("read %v, want %d changes", got, n)
		}
	}
	return got
}

// A watcher that falls behind loses what it did not read and gets one
// resync in its place; it then reads what comes after.
func TestChangeWatchFallsBehind(t *testing.T) {
	b := NewMemoryBroker(MemoryOptions{})
	w, stop := b.WatchChanges()
	defer stop()
	for i := range watchBuffer + 10 {
		b.Announce(Change{SessionID: fmt.Sprint("s", i), Type: wire.ChangeSessionStarted})
	}
	b.Announce(Change{SessionID: "last", Type: wire.ChangeSessionEnded})
	got, open := w.Next()
	if !open || len(got) == 0 || got[0].Type != wire.ChangeResync || got[len(got)-1].SessionID != "last" || len(got) > watchBuffer+1 {
		t.Fatalf("behind: %d changes, first %v, open %v", len(got), got[:min(len(got), 2)], open)
	}
	if got, _ := w.Next(); len(got) != 0 {
		t.Fatalf("read again: %v", got)
	}
}

func TestMemoryBroker(t *testing.T) { testBrokers(t, memoryBackend) }

// forgeLast changes the last character of a token's MAC.
func forgeLast(tok string) string {
	c := byte('A')
	if tok[len(tok)-1] == 'A' {
		c = 'B'
	}
	return tok[:len(tok)-1] + string(c)
}
