package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
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

// BenchmarkFirstDelta measures the time from send_user_message (an HTTP
// POST) to the first text_delta at an SSE client of the same session, with
// a scripted model that streams its answer. It reports p50 and p99.
func BenchmarkFirstDelta(b *testing.B) {
	plugin := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	s := agenttest.NewStack(b, testConfig(plugin))
	cfg, err := config.Load(s.ConfigPath)
	if err != nil {
		b.Fatal(err)
	}
	const token = "bench-token-0123456789abcdef"
	logger := slog.New(slog.NewTextHandler(logTo(b, s.Dir, "bench-worker.log"), &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err := daemon.Start(context.Background(), daemon.Options{
		Config: cfg, Logger: logger, TemporalAddress: s.Address(),
		HTTPListen: "127.0.0.1:0", ExtraTokens: []httpapi.Token{{Name: "bench", Value: token}},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Stop()
	base := "http://" + d.HTTPAddress()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id, err := s.Sessions.StartSession(ctx, client.StartSessionOptions{FlowType: flowType})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	types := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e struct{ Type string }
				if json.Unmarshal([]byte(data), &e) == nil {
					types <- e.Type
				}
			}
		}
		close(types)
	}()
	send := func() {
		r, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/sessions/"+id+"/messages", strings.NewReader(`{"text":"hello there, how are you today"}`))
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("send: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	wait := func(want string) {
		timeout := time.After(time.Minute)
		for {
			select {
			case typ, ok := <-types:
				if !ok {
					b.Fatal("the event stream ended")
				}
				if typ == want {
					return
				}
			case <-timeout:
				b.Fatalf("no %s within a minute", want)
			}
		}
	}
	turn := func() time.Duration {
		start := time.Now()
		send()
		wait("text_delta")
		first := time.Since(start)
		wait("turn_completed")
		return first
	}
	turn() // warm up
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lat = append(lat, turn())
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}
