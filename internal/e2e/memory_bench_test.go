package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/loadtest"
)

// BenchmarkCachedSessionMemory measures what a cached session costs in
// memory on one machine: one `run` process (worker, its runner plugin, the
// SQLite message store) and one `engine` process, as `dev` runs them. It
// runs DEX_MEMORY_SESSIONS sessions (default 200) of 5 echo turns of 4 KiB
// messages, which stay in the worker's workflow cache and the engine's
// mutable-state cache, and reports the growth of each process tree's
// resident memory per session (KiB/session; the Go heaps' slack included,
// as an operator sees it). Run it with -benchtime=1x.
func BenchmarkCachedSessionMemory(b *testing.B) {
	api, c := startLoadCluster(b, 0)
	o := loadtest.Options{
		BaseURL: "http://" + api.addr, Agent: "echo", Token: clusterToken,
		Sessions: envInt("DEX_MEMORY_SESSIONS", 200), Concurrency: 20, Turns: 5,
		Message: strings.Repeat("memory ", 4096/7+1)[:4096],
	}
	warm := o
	warm.Sessions, warm.Concurrency, warm.Turns = 4, 4, 2
	if _, err := loadtest.Run(context.Background(), warm); err != nil {
		b.Fatal(err)
	}
	before := c.rssKiB()
	b.ResetTimer()
	for range b.N {
		res, err := loadtest.Run(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		if res.FailedTurns > 0 {
			b.Fatalf("%d turns failed: %v", res.FailedTurns, res.Errors)
		}
	}
	b.StopTimer()
	after := c.rssKiB()
	n := float64(o.Sessions * b.N)
	total := 0.0
	for name, kib := range after {
		per := float64(kib-before[name]) / n
		total += per
		label := name
		if label == "all" {
			label = "run" // the `run` process (role all)
		}
		b.ReportMetric(per, label+"-KiB/session")
	}
	b.ReportMetric(total, "KiB/session")
}

// rssKiB returns each process's resident memory in KiB, its children's
// (the runner plugins) included.
func (c *cluster) rssKiB() map[string]int64 {
	out := map[string]int64{}
	for name, u := range c.usage() {
		out[name] = u.rssKiB
	}
	return out
}
