package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"encoding/json"
	"os/exec"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/events/redistest"
	"github.com/dex-agents/dex-agent-worker/internal/loadtest"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/pgtest"
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkLoad runs `dex-agent-worker loadtest`'s driver against the
// embedded engine (`engine`, SQLite) with the echo agent (stepwise with
// the scripted model) in three topologies: one `run` process with memory
// events and the SQLite message store (what `dev` runs), and one or two
// `--role worker` processes behind one `--role api` process on Redis and
// PostgreSQL. DEX_LOAD_SESSIONS, DEX_LOAD_CONCURRENCY and DEX_LOAD_TURNS
// set the knobs (default 40, 20, 5). Run it with -benchtime=1x.
func BenchmarkLoad(b *testing.B) {
	o := loadtest.Options{
		Agent: "echo", Token: clusterToken,
		Sessions:    envInt("DEX_LOAD_SESSIONS", 40),
		Concurrency: envInt("DEX_LOAD_CONCURRENCY", 20),
		Turns:       envInt("DEX_LOAD_TURNS", 5),
	}
	for _, top := range []struct {
		name    string
		workers int
	}{{"one-process", 0}, {"workers=1", 1}, {"workers=2", 2}} {
		b.Run(top.name, func(b *testing.B) {
			api, c := startLoadCluster(b, top.workers)
			o.BaseURL = "http://" + api.addr
			// A warm-up, so the first sessions' plugin and cache start-up
			// are not measured.
			warm := o
			warm.Sessions, warm.Concurrency, warm.Turns = 2, 2, 1
			if _, err := loadtest.Run(context.Background(), warm); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var last loadtest.Result
			cpu := c.cpuSeconds()
			for range b.N {
				res, err := loadtest.Run(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				if res.FailedTurns > 0 {
					b.Fatalf("%d turns failed: %v", res.FailedTurns, res.Errors)
				}
				last = res
			}
			b.StopTimer()
			used := c.cpuSeconds()
			var report []string
			for _, p := range c.procs {
				report = append(report, fmt.Sprintf("%s %.2fs", p.name, used[p.name]-cpu[p.name]))
			}
			b.ReportMetric(last.TurnsPerSecond, "turns/s")
			b.ReportMetric(float64(last.Turn.P50.Microseconds())/1000, "turn-p50-ms")
			b.ReportMetric(float64(last.Turn.P99.Microseconds())/1000, "turn-p99-ms")
			b.ReportMetric(float64(last.FirstDelta.P50.Microseconds())/1000, "first-delta-p50-ms")
			b.ReportMetric(float64(last.FirstDelta.P99.Microseconds())/1000, "first-delta-p99-ms")
			b.Logf("%s: %s\nCPU time during the run (the process and its plugins): %s", top.name, strings.TrimSpace(last.String()), strings.Join(report, ", "))
		})
	}
}

// startLoadCluster starts the engine and the processes of a topology, and
// returns the process that serves the API. workers 0 is one `run` process
// (role all) on memory events and SQLite; otherwise that many worker
// processes and one API process on Redis and PostgreSQL.
func startLoadCluster(b testing.TB, workers int) (*proc, *cluster) {
	b.Helper()
	return startLoadClusterOn(b, workers, "sqlite")
}

// startLoadClusterOn is startLoadCluster with the one-process topology's
// message store: "sqlite" or "postgres".
func startLoadClusterOn(b testing.TB, workers int, store string) (*proc, *cluster) {
	b.Helper()
	bin := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/cmd/dex-agent-worker")
	runner := agenttest.BuildBinary(b, "github.com/dex-agents/dex-agent-worker/plugins/stepwise/cmd/dex-runner-stepwise")
	dir := b.TempDir()
	temporalPort := agenttest.FreePort(b)
	cfg := map[string]any{
		"temporal":         map[string]any{"address": fmt.Sprintf("127.0.0.1:%d", temporalPort), "namespace": "default", "task_queue": "dex-agents"},
		"logging":          map[string]any{"level": "warn", "format": "json"},
		"http":             map[string]any{"web_ui": false, "auth": map[string]any{"tokens": []any{map[string]any{"name": "load", "token": clusterToken}}}},
		"shutdown_timeout": "10s",
		"plugins":          map[string]any{"stepwise": map[string]any{"command": runner}},
		"agents": []any{map[string]any{
			"name": "echo", "flow_type": "Echo", "runner": "stepwise",
			"runner_config": map[string]any{"model": map[string]any{"provider": "scripted", "name": "echo"}},
		}},
	}
	c := &cluster{t: b, bin: bin, dir: dir, config: filepath.Join(dir, "dex.yaml")}
	switch {
	case workers == 0 && store == "postgres":
		pg := pgtest.Start(b)
		c.dsn = pg.CreateDatabase(b, "")
		cfg["message_store"] = map[string]any{"driver": "postgres", "dsn_env": "DEX_LOAD_DSN"}
		c.env = []string{"DEX_LOAD_DSN=" + c.dsn}
	case workers == 0:
		cfg["message_store"] = map[string]any{"driver": "sqlite", "path": filepath.Join(dir, "messages.db")}
	default:
		redisSrv := redistest.Start(b)
		pg := pgtest.Start(b)
		c.redis, c.dsn = redisSrv, pg.CreateDatabase(b, "")
		cfg["events"] = map[string]any{"backend": "redis", "url_env": "DEX_LOAD_REDIS_URL", "token_key_env": "DEX_LOAD_EVENTS_KEY"}
		cfg["message_store"] = map[string]any{"driver": "postgres", "dsn_env": "DEX_LOAD_DSN"}
		c.env = []string{"DEX_LOAD_REDIS_URL=" + redisSrv.URL(), "DEX_LOAD_EVENTS_KEY=load-test-events-key-0123456789", "DEX_LOAD_DSN=" + c.dsn}
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(c.config, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if b.Failed() {
			c.dumpLogs()
		}
		for _, p := range c.procs {
			if p.alive() {
				p.kill()
			}
		}
	})
	c.startEngine(temporalPort)
	if workers == 0 {
		return c.run("all", "all"), c
	}
	for i := range workers {
		c.run(fmt.Sprintf("worker-%d", i+1), "worker")
	}
	return c.run("api", "api"), c
}

// BenchmarkTurnAtDepthHTTP drives one echo session over HTTP to depth
// DEX_BENCH_DEPTH (default 1,000) with 2 KiB messages and no compaction,
// on one `run` process beside `engine`, with the message store on SQLite
// and on PostgreSQL; then, on the same processes, a new session of 30
// turns. depth-ratio is the median latency of the deep session's last 20
// turns over that of the new session's turns 11 to 30, measured right
// after: what a session's length costs a turn, through the whole path a
// client sees. age-ratio is the new session's turns over the deep
// session's turns 11 to 30, measured at the start: what the processes'
// age (a grown engine database) costs every session alike. Run it with
// -benchtime=1x.
func BenchmarkTurnAtDepthHTTP(b *testing.B) {
	depth := envInt("DEX_BENCH_DEPTH", 1000)
	if depth < 60 {
		b.Fatalf("DEX_BENCH_DEPTH=%d: want at least 60", depth)
	}
	for _, store := range []string{"sqlite", "postgres"} {
		b.Run("store="+store, func(b *testing.B) {
			api, _ := startLoadClusterOn(b, 0, store)
			o := loadtest.Options{
				BaseURL: "http://" + api.addr, Agent: "echo", Token: clusterToken,
				Sessions: 1, Concurrency: 1, Turns: depth, Message: strings.Repeat("depth ", 2048/6+1)[:2048],
			}
			series := func(turns int) []time.Duration {
				o := o
				o.Turns = turns
				res, err := loadtest.Run(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				if res.FailedTurns > 0 || len(res.Series) != turns {
					b.Fatalf("%d turns failed, %d measured: %v", res.FailedTurns, len(res.Series), res.Errors)
				}
				return res.Series
			}
			b.ResetTimer()
			var early, late, fresh time.Duration
			for range b.N {
				deep := series(depth)
				early, late = medianOf(deep[10:30]), medianOf(deep[depth-20:])
				var steps []string
				for i := 0; i+50 <= depth; i += 50 {
					steps = append(steps, fmt.Sprintf("%d:%.1fms", i, float64(medianOf(deep[i:i+50]).Microseconds())/1000))
				}
				b.Logf("median turn latency by 50 turns: %s", strings.Join(steps, " "))
				fresh = medianOf(series(30)[10:30])
			}
			b.StopTimer()
			b.ReportMetric(float64(early.Microseconds())/1000, "early-turn-ms")
			b.ReportMetric(float64(late.Microseconds())/1000, "late-turn-ms")
			b.ReportMetric(float64(fresh.Microseconds())/1000, "new-session-turn-ms")
			b.ReportMetric(float64(late)/float64(fresh), "depth-ratio")
			b.ReportMetric(float64(fresh)/float64(early), "age-ratio")
		})
	}
}

func medianOf(d []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(d))
	return s[len(s)/2]
}

// procUsage is what a process tree (a cluster process and its runner
// plugins) used: CPU seconds so far, and resident memory now.
type procUsage struct {
	cpu    float64
	rssKiB int64
}

// usage reads /proc once and returns each cluster process's usage, its
// children's (the runner plugins) included.
func (c *cluster) usage() map[string]procUsage {
	parents := map[int]int{}
	own := map[int]procUsage{}
	pageKiB := int64(os.Getpagesize() / 1024)
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		// After the command's closing parenthesis: state, ppid, ...,
		// utime (11), stime (12), ..., rss in pages (21).
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 22 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		rss, _ := strconv.ParseInt(fields[21], 10, 64)
		parents[pid] = ppid
		own[pid] = procUsage{cpu: (utime + stime) / 100, rssKiB: rss * pageKiB} // USER_HZ
	}
	out := map[string]procUsage{}
	for _, p := range c.procs {
		pid := p.cmd.Process.Pid
		u := own[pid]
		for child, parent := range parents {
			if parent == pid {
				u.cpu += own[child].cpu
				u.rssKiB += own[child].rssKiB
			}
		}
		out[p.name] = u
	}
	return out
}

// cpuSeconds returns the CPU time each process of the cluster used so far,
// its children (the runner plugins) included.
func (c *cluster) cpuSeconds() map[string]float64 {
	out := map[string]float64{}
	for name, u := range c.usage() {
		out[name] = u.cpu
	}
	return out
}

// TestLoadtestCommand runs `dex-agent-worker loadtest` against one
// process with the echo agent: every turn completes and is measured.
func TestLoadtestCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	api, c := startLoadCluster(t, 0)
	cmd := exec.Command(c.bin, "loadtest", "--http-address", api.addr, "--agent", "echo",
		"--sessions", "4", "--concurrency", "2", "--turns", "3", "--json")
	cmd.Env = append(os.Environ(), "DEX_API_TOKEN="+clusterToken)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("loadtest: %v\n%s", err, out)
	}
	var res loadtest.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("loadtest --json: %v\n%s", err, out)
	}
	if res.Turns != 12 || res.FailedTurns != 0 || res.TurnsPerSecond <= 0 || res.Turn.P50 <= 0 || res.FirstDelta.P50 <= 0 || res.Turn.P99 < res.Turn.P50 {
		t.Fatalf("loadtest result: %+v", res)
	}
	// A wrong token: the command fails and says why.
	cmd = exec.Command(c.bin, "loadtest", "--http-address", api.addr, "--agent", "echo", "--sessions", "1", "--turns", "1")
	cmd.Env = append(os.Environ(), "DEX_API_TOKEN=wrong-token-0123456789abcdef")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "401") {
		t.Fatalf("loadtest with a wrong token: %v\n%s", err, out)
	}
}
