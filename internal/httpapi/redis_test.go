package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/internal/events/redistest"
)

// The API on the Redis broker: a token older than the trimmed head answers
// 400 with the reset path (reload the snapshot), whose new token streams
// the kept events; a Redis that is down answers 503 (retry), not 400.
func TestRedisEventsTrimmedAndUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	broker, err := events.NewRedisBroker(events.RedisOptions{
		Client:   redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: 1}),
		TokenKey: []byte("an httpapi test key of sixteen bytes"), MaxBytesPerSession: 64 * 1024,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	a := newTestAPI(t, func(o *Options) { o.Broker = broker })
	a.temporal.addWorkflow("s-1", "TestAgent")
	snapshotToken := func() string {
		t.Helper()
		code, _, body := a.do("GET", "/v1/sessions/s-1/snapshot", testTokenAll, "")
		var snap struct {
			ResumeToken string `json:"resume_token"`
		}
		if err := json.Unmarshal(body, &snap); err != nil || code != 200 || snap.ResumeToken == "" {
			t.Fatalf("snapshot: %d %s", code, body)
		}
		return snap.ResumeToken
	}
	old := snapshotToken()
	pad := strings.Repeat("x", 10*1024)
	for i := 1; i <= 30; i++ {
		broker.Publish(events.Event{SessionID: "s-1", Type: "text_delta", TurnID: "turn-1",
			Payload: json.RawMessage(fmt.Sprintf(`{"text":"%d %s"}`, i, pad))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := broker.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	code, _, body := a.do("GET", "/v1/sessions/s-1/events?resume_token="+url.QueryEscape(old), testTokenAll, "")
	if e := decodeError(t, body); code != 400 || !strings.Contains(e.Error.Message, "trimmed") || !strings.Contains(e.Error.Message, "reload the snapshot") {
		t.Fatalf("events from a trimmed token: %d %s, want 400 saying so and to reload the snapshot", code, body)
	}
	// The reset: the snapshot's new token is the head; the oldest kept
	// events stream from the stream's start.
	fresh := snapshotToken()
	if err := broker.Check(ctx, "s-1", fresh); err != nil {
		t.Fatalf("the new snapshot's token: %v", err)
	}
	kept, err := broker.Read(ctx, "s-1", mustOldest(t, broker), 100, 0)
	if err != nil || len(kept) == 0 || len(kept) > 7 || kept[len(kept)-1].Sequence != 30 {
		t.Fatalf("kept events: %d, %v (want the newest few, ending with sequence 30)", len(kept), err)
	}
	frame := string(Frame(kept[0]))
	if !strings.Contains(frame, fmt.Sprintf(`"sequence":%d`, kept[0].Sequence)) || !strings.HasPrefix(frame, "id: "+kept[0].Token+"\n") {
		t.Fatalf("frame %q lacks its sequence or token", frame[:min(len(frame), 200)])
	}

	if code, _, body := a.do("GET", "/readyz", "", ""); code != 200 {
		t.Fatalf("readyz with Redis up: %d %s", code, body)
	}
	srv.Stop()
	if code, _, body := a.do("GET", "/readyz", "", ""); code != 503 || !strings.Contains(string(body), "event store") {
		t.Fatalf("readyz with Redis down: %d %s, want 503 naming the event store", code, body)
	}
	code, _, body = a.do("GET", "/v1/sessions/s-1/snapshot", testTokenAll, "")
	if e := decodeError(t, body); code != 503 || e.Error.Code != "unavailable" {
		t.Fatalf("snapshot with Redis down: %d %s, want 503 unavailable", code, body)
	}
	code, _, body = a.do("GET", "/v1/sessions/s-1/events?resume_token="+url.QueryEscape(fresh), testTokenAll, "")
	if e := decodeError(t, body); code != 503 || e.Error.Code != "unavailable" {
		t.Fatalf("events with Redis down: %d %s, want 503 unavailable", code, body)
	}
}

func mustOldest(t *testing.T, b events.Broker) string {
	t.Helper()
	tok, err := b.Oldest(context.Background(), "s-1")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
