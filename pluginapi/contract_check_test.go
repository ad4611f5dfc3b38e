package pluginapi

import (
	"strings"
	"testing"
)

func TestCheckCompactionCutoffResponse(t *testing.T) {
	msgs := func(seqs ...int64) []Message {
		out := make([]Message, len(seqs))
		for i, s := range seqs {
			out[i] = Message{Sequence: s}
		}
		return out
	}
	tests := []struct {
		name    string
		turn    TurnContext
		through int64
		bad     string
	}{
		{"no cut", TurnContext{Messages: msgs(1, 2, 3)}, 0, ""},
		{"last message", TurnContext{Messages: msgs(1, 2, 3)}, 3, ""},
		{"past the last message", TurnContext{Messages: msgs(1, 2, 3)}, 4, "1 to 3"},
		{"inside the summary", TurnContext{Messages: msgs(5, 6), ContextSummary: &ContextSummary{LastSequence: 4}}, 4, "5 to 6"},
		// The host sent only what the plugin has not cached: messages 1 to
		// 40 are in the plugin's cache, 41 and 42 are new.
		{"cached messages", TurnContext{Messages: msgs(41, 42), CachedFrom: 1, CachedThrough: 40}, 20, ""},
		{"cached, nothing new", TurnContext{CachedFrom: 1, CachedThrough: 40}, 40, ""},
		{"cached, past the end", TurnContext{CachedFrom: 1, CachedThrough: 40}, 41, "1 to 40"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkCompactionCutoffResponse(&CompactionCutoffResponse{ThroughSequence: tt.through}, &CompactionCutoffRequest{Turn: tt.turn})
			if tt.bad == "" && got != "" {
				t.Fatalf("refused: %s", got)
			}
			if tt.bad != "" && !strings.Contains(got, tt.bad) {
				t.Fatalf("got %q, want a refusal naming %q", got, tt.bad)
			}
		})
	}
}
