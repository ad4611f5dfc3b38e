package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkSessionTurn/telemetry=none-2         	      30	 183474689 ns/op	        40.00 events/turn	         4.935 wftasks/turn
BenchmarkSessionTurn/telemetry=none-2         	      30	 193474689 ns/op	        40.00 events/turn	         4.935 wftasks/turn
BenchmarkSessionTurn/telemetry=none-2         	      30	 173474689 ns/op	        40.00 events/turn	         4.935 wftasks/turn
BenchmarkSessionTurn/search=disabled-2                  	      30	 163474689 ns/op	        35.00 events/turn	         4.600 wftasks/turn
BenchmarkBareTemporalTurn-2                             	      30	 152356650 ns/op	        34.55 events/turn	         4.839 wftasks/turn
BenchmarkCancelTurn-2                                   	      30	  14103484 ns/op	         2.985 model-ctx-p50-ms	         6.905 model-ctx-p99-ms	         6.137 p50-ms	        10.52 p99-ms
BenchmarkCachedSessionMemory-2   	       1	6431198280 ns/op	      1404 KiB/session	       590.5 all-KiB/session	       813.4 engine-KiB/session
BenchmarkTurnAtDepthPostgres/depth=2000-2 	      30	  45118780 ns/op	         1.008 bytes-ratio	         1.001 median-ratio	         1.050 fork-ratio	        12.50 fork-shallow-ms
BenchmarkTurnAtDepthHTTP/store=postgres-2       	       1	23255350850 ns/op	         0.8890 age-ratio	         1.124 depth-ratio
BenchmarkCancelProviderStream-2   	      20	  70999580 ns/op	         0 deltas-after-cancel-p50	         1.000 deltas-after-cancel-p99	         4.156 stream-close-p50-ms	         8.060 stream-close-p99-ms
some log line with Benchmark in it
PASS
`

func TestReportComputesFiguresFromMedians(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.median("BenchmarkSessionTurn/telemetry=none", "ns/op"); v != 183474689 {
		t.Fatalf("median = %v", v)
	}
	var out bytes.Buffer
	report(&out, r)
	for _, want := range []string{
		"| session turn against bare Temporal | 183.47 ms/op | 152.36 ms/op (BareTemporalTurn) | 1.20x | <= 1.10x |",
		"| cancel_turn until the model call sees its context end | p50 3.0 ms, p99 6.9 ms |  |  | p50 <= 100 ms, p99 <= 250 ms |",
		"| ActiveStepTypes upserts (search on against off) | 183.47 ms/op | 163.47 ms/op (SessionTurn/search=disabled) | 1.12x | report |",
		"| history events per turn | 40 events/turn | 34.55 events/turn (BareTemporalTurn) | 1.16x | report |",
		"| memory per cached session (engine + worker, 5 turns of 4 KiB) | 1404 KiB/session |  |  | <= 100 KiB |",
		"| BenchmarkCancelTurn | ",
		"| tokens a provider streaming 100/s still generates after cancel_turn | p50 0, p99 1 (its stream closed after p50 4.2 ms, p99 8.1 ms) |  |  | stop the spend |",
		"| turn at depth 2000 against depth 10 to 30 (PostgreSQL) | 1.001 median-ratio |  |  | <= 1.1 |",
		"| fork at depth 2000 against a session 10 to 30 turns deep (PostgreSQL) | 1.05 fork-ratio |  |  | <= 1.2 |",
		"| over HTTP, postgres: a deep session's late turn against a new session's | 1.124 depth-ratio |  |  | <= 1.1 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "FirstDelta") {
		t.Errorf("a figure of a benchmark that did not run:\n%s", out.String())
	}
}
