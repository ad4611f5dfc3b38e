package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCancelTurn measures cancel_turn during a streaming model call.
// Each iteration sends a message whose scripted model streams text deltas
// until its context ends (the testrunner's slowstream), waits for the
// first text_delta at an SSE client, then POSTs /cancel for that turn. It
// reports the time from the cancel to turn_cancelled at the SSE client
// (p50-ms, p99-ms) and to the moment the runner's model call saw its
// context end (model-ctx-p50-ms, model-ctx-p99-ms, from the time the
// testrunner logs in its model_stream_cancelled record). An iteration ends
// once the runner's call ended, so no two model calls overlap.
func BenchmarkCancelTurn(b *testing.B) {
	x := newSSEBench(b)
	done := map[string]bool{} // turns that ended: their late deltas are skipped
	n := 0
	turn := func() (toEvent, toModel time.Duration) {
		n++
		text := fmt.Sprintf("slowstream cancel %d", n)
		body, _ := json.Marshal(map[string]string{"text": text})
		x.post("messages", string(body))
		first := x.wait("a text_delta of a new turn", func(e sseEvent) bool { return e.Type == "text_delta" && !done[e.TurnID] })
		start := time.Now()
		if got := string(x.post("cancel", `{"turn_id":"`+first.TurnID+`"}`)); !strings.Contains(got, `"accepted":true`) {
			b.Fatalf("cancel %s: %s", first.TurnID, got)
		}
		x.wait("turn_cancelled of "+first.TurnID, func(e sseEvent) bool { return e.Type == "turn_cancelled" && e.TurnID == first.TurnID })
		toEvent = time.Since(start)
		done[first.TurnID] = true
		at := x.modelCancelled(text)
		return toEvent, time.Unix(0, at).Sub(start)
	}
	turn() // warm up
	toEvent := make([]time.Duration, 0, b.N)
	toModel := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e, m := turn()
		toEvent = append(toEvent, e)
		toModel = append(toModel, m)
	}
	b.StopTimer()
	reportPercentiles(b, "", toEvent)
	reportPercentiles(b, "model-ctx-", toModel)
}

// modelCancelled waits for the runner's model_stream_cancelled record of
// the message text and returns its time in Unix nanoseconds.
func (x *sseBench) modelCancelled(text string) int64 {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		recs, err := x.s.Log().Read()
		if err != nil {
			x.b.Fatal(err)
		}
		for _, r := range recs {
			if ts, rest, ok := strings.Cut(r.Detail, " "); ok && r.Kind == "model_stream_cancelled" && rest == text {
				at, err := strconv.ParseInt(ts, 10, 64)
				if err != nil {
					x.b.Fatalf("model_stream_cancelled record %q: %v", r.Detail, err)
				}
				return at
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	x.b.Fatalf("the model call of %q did not see its context end within a minute", text)
	return 0
}
