package pluginapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

func i64(v int64) *int64 { return &v }

// TestUsageFromTheWire: what a runner in any language leaves out of its
// usage gets the spec's meaning (total = input + output, one model call);
// what it sets, 0 included, is kept.
func TestUsageFromTheWire(t *testing.T) {
	tests := []struct {
		name string
		in   *runnerpb.Usage
		want Usage
	}{
		{"no usage at all", nil, Usage{ModelCalls: 1}},
		{"total and calls left out", &runnerpb.Usage{InputTokens: 7, OutputTokens: 2}, Usage{InputTokens: 7, OutputTokens: 2, TotalTokens: 9, ModelCalls: 1}},
		{"a provider total", &runnerpb.Usage{InputTokens: 7, OutputTokens: 2, ReasoningTokens: 5, TotalTokens: i64(14)}, Usage{InputTokens: 7, OutputTokens: 2, ReasoningTokens: 5, TotalTokens: 14, ModelCalls: 1}},
		{"zero model calls reported", &runnerpb.Usage{ModelCalls: i64(0)}, Usage{}},
		{"a zero total reported", &runnerpb.Usage{InputTokens: 3, TotalTokens: i64(0), ModelCalls: i64(1)}, Usage{InputTokens: 3, ModelCalls: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, fromProtoUsage(tt.in)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
	// A Go runner's usage crosses the wire as reported: 0 model calls stay
	// 0, and a 0 total is left out, so the host computes it.
	for _, u := range []Usage{{InputTokens: 4, OutputTokens: 1, ModelCalls: 0}, {InputTokens: 4, OutputTokens: 1, TotalTokens: 8, ModelCalls: 2}} {
		want := u
		if want.TotalTokens == 0 {
			want.TotalTokens = u.InputTokens + u.OutputTokens
		}
		if diff := cmp.Diff(want, fromProtoUsage(toProtoUsage(u))); diff != "" {
			t.Errorf("round trip of %+v (-want +got):\n%s", u, diff)
		}
	}
}
