package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// slowResponses is a model provider that speaks the OpenAI Responses API's
// streaming wire and never finishes: it writes one output_text.delta every
// 10 ms (a model generating 100 tokens a second) until the client closes
// the stream, and records when it wrote each delta and when it saw the
// close.
type slowResponses struct {
	mu      sync.Mutex
	streams []*slowStream
}

type slowStream struct {
	deltas []time.Time
	closed time.Time
}

func (p *slowResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	st := &slowStream{}
	p.mu.Lock()
	p.streams = append(p.streams, st)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		st.closed = time.Now()
		p.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	send := func(event, data string) bool {
		seq++
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, fmt.Sprintf(data, seq))
		w.(http.Flusher).Flush()
		return err == nil
	}
	if !send("response.created", `{"type":"response.created","sequence_number":%d,"response":{"id":"resp_slow","object":"response","created_at":1,"status":"in_progress","model":"gpt-bench","output":[]}}`) ||
		!send("response.output_item.added", `{"type":"response.output_item.added","sequence_number":%d,"output_index":0,"item":{"id":"msg_slow","type":"message","status":"in_progress","role":"assistant","content":[]}}`) ||
		!send("response.content_part.added", `{"type":"response.content_part.added","sequence_number":%d,"item_id":"msg_slow","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`) {
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		if !send("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_slow","output_index":0,"content_index":0,"delta":"word "}`) {
			return
		}
		p.mu.Lock()
		st.deltas = append(st.deltas, time.Now())
		p.mu.Unlock()
	}
}

// stream returns the newest stream once it wrote n deltas and is open.
func (p *slowResponses) stream(n int) *slowStream {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.streams) == 0 {
		return nil
	}
	st := p.streams[len(p.streams)-1]
	if len(st.deltas) < n || !st.closed.IsZero() {
		return nil
	}
	return st
}

// after counts a stream's deltas written after t, and says when it closed.
func (p *slowResponses) after(st *slowStream, t time.Time) (int, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, d := range st.deltas {
		if d.After(t) {
			n++
		}
	}
	return n, st.closed
}

// BenchmarkCancelProviderStream: Stepwise streams an answer from a model
// speaking the OpenAI Responses API at 100 tokens a second, and never
// ending; after its first deltas, cancel_turn. It reports the deltas the
// provider still generated after the cancel and the time until the
// provider saw its stream closed, as percentiles: a cancel stops the
// spend.
func BenchmarkCancelProviderStream(b *testing.B) {
	provider := &slowResponses{}
	srv := httptest.NewServer(provider)
	b.Cleanup(srv.Close)
	orders := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/examples/orders")
	s := agenttest.NewStack(b, fmt.Sprintf(`
plugins:
  orders: {command: %s, env: [%s]}
agents:
  - name: orders
    flow_type: OrdersCancel
    runner: orders
    runner_config:
      store_path: "{{DIR}}/orders.json"
      model: {provider: openai, name: gpt-bench, api_base: "%s/v1", api_key_env: %s}
`, orders, benchKeyEnv, srv.URL, benchKeyEnv))
	s.Setenv(benchKeyEnv, "sk-bench-0123456789")
	s.StartWorker()
	ctx := context.Background()
	id := "cancel-stream"
	if _, err := s.Sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersCancel", SessionID: id}); err != nil {
		b.Fatal(err)
	}
	turn := func(i int) (int, time.Duration) {
		if ok, err := s.Sessions.SendUserMessage(ctx, id, fmt.Sprintf("tell me a long story %d", i)); err != nil || !ok {
			b.Fatalf("send: %v %v", ok, err)
		}
		var st *slowStream
		if err := agenttest.WaitFor(ctx, "the answer's first deltas", time.Minute, func() (bool, error) {
			st = provider.stream(3)
			return st != nil, nil
		}); err != nil {
			b.Fatal(err)
		}
		snap := s.WaitForSnapshot("a running turn", id, func(s wire.Snapshot) bool { return s.State != nil && s.State.ActiveTurnID != "" })
		start := time.Now()
		if ok, err := s.Sessions.CancelTurn(ctx, id, snap.State.ActiveTurnID); err != nil || !ok {
			b.Fatalf("cancel: %v %v", ok, err)
		}
		var n int
		var closed time.Time
		if err := agenttest.WaitFor(ctx, "the provider stream's close", time.Minute, func() (bool, error) {
			n, closed = provider.after(st, start)
			return !closed.IsZero(), nil
		}); err != nil {
			b.Fatal(err)
		}
		s.WaitForSnapshot("the cancelled turn's end", id, func(s wire.Snapshot) bool { return s.State != nil && s.State.ActiveTurnID == "" })
		return n, closed.Sub(start)
	}
	turn(0) // warm up
	var counts []int
	var closes []time.Duration
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		n, d := turn(i)
		counts = append(counts, n)
		closes = append(closes, d)
	}
	b.StopTimer()
	reportPercentiles(b, "stream-close-", closes)
	slices.Sort(counts)
	b.ReportMetric(float64(counts[len(counts)/2]), "deltas-after-cancel-p50")
	b.ReportMetric(float64(counts[(len(counts)*99)/100]), "deltas-after-cancel-p99")
}
