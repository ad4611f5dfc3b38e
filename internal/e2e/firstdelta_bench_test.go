package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/httpapi"
)

// sseEvent is what the latency benchmarks read of a live event.
type sseEvent struct {
	Type   string `json:"type"`
	TurnID string `json:"turn_id"`
}

// sseBench is one session of an in-process daemon with its HTTP API, and
// an SSE client of the session's events, for the latency benchmarks.
type sseBench struct {
	b      *testing.B
	s      *agenttest.Stack
	ctx    context.Context
	base   string
	id     string
	events chan sseEvent
}

const benchToken = "bench-token-0123456789abcdef"

func newSSEBench(b *testing.B) *sseBench {
	plugin := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	s := agenttest.NewStack(b, testConfig(plugin))
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(logTo(b, s.Dir, "bench-worker.log"), &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err := daemon.Start(context.Background(), daemon.Options{
		Config: cfg, Logger: logger, TemporalAddress: s.Address(),
		HTTPListen: "127.0.0.1:0", ExtraTokens: []httpapi.Token{{Name: "bench", Value: benchToken}},
		MessageStorePath: filepath.Join(s.Dir, "messages.db"),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	x := &sseBench{b: b, s: s, ctx: ctx, base: "http://" + d.HTTPAddress(), events: make(chan sseEvent, 1024)}
	x.id, err = s.Sessions.StartSession(ctx, client.StartSessionOptions{FlowType: flowType})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", x.base+"/v1/sessions/"+x.id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("events: %v %v", resp, err)
	}
	b.Cleanup(func() { resp.Body.Close() })
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e sseEvent
				if json.Unmarshal([]byte(data), &e) == nil {
					x.events <- e
				}
			}
		}
		close(x.events)
	}()
	return x
}

// post sends a JSON body to /v1/sessions/{id}/PATH and returns the answer.
func (x *sseBench) post(path, body string) []byte {
	r, _ := http.NewRequestWithContext(x.ctx, "POST", x.base+"/v1/sessions/"+x.id+"/"+path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+benchToken)
	r.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil || resp.StatusCode != 200 {
		x.b.Fatalf("%s: %v %v", path, resp, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		x.b.Fatalf("%s: %v", path, err)
	}
	return out
}

// wait returns the next event that matches, skipping the others.
func (x *sseBench) wait(what string, match func(sseEvent) bool) sseEvent {
	timeout := time.After(time.Minute)
	for {
		select {
		case e, ok := <-x.events:
			if !ok {
				x.b.Fatal("the event stream ended")
			}
			if match(e) {
				return e
			}
		case <-timeout:
			x.b.Fatalf("no %s within a minute", what)
		}
	}
}

// waitType waits for the next event of type typ.
func (x *sseBench) waitType(typ string) sseEvent {
	return x.wait(typ, func(e sseEvent) bool { return e.Type == typ })
}

// reportPercentiles reports the p50 and p99 of lat in milliseconds, as
// PREFIXp50-ms and PREFIXp99-ms.
func reportPercentiles(b *testing.B, prefix string, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, prefix+"p99-ms")
}

// BenchmarkFirstDelta measures the time from send_user_message (an HTTP
// POST) to the first text_delta at an SSE client of the same session, with
// a scripted model that streams its answer. It reports p50 and p99.
func BenchmarkFirstDelta(b *testing.B) {
	x := newSSEBench(b)
	turn := func() time.Duration {
		start := time.Now()
		x.post("messages", `{"text":"hello there, how are you today"}`)
		x.waitType("text_delta")
		first := time.Since(start)
		x.waitType("turn_completed")
		return first
	}
	turn() // warm up
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lat = append(lat, turn())
	}
	b.StopTimer()
	reportPercentiles(b, "", lat)
}
