package model

import (
	"testing"

	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

func TestAnthropicForcedToolChoice(t *testing.T) {
	c := &anthropicClient{}
	tests := []struct {
		model    string
		settings stepwise.ModelSettings
		want     bool
	}{
		{"claude-haiku-4-5", stepwise.ModelSettings{}, true},
		{"claude-haiku-4-5", stepwise.ModelSettings{ThinkingBudget: 2048}, false},
		{"claude-haiku-4-5", stepwise.ModelSettings{ReasoningEffort: "low"}, false},
		{"claude-haiku-4-5", stepwise.ModelSettings{ReasoningEffort: "none"}, true},
		{"claude-opus-5-5", stepwise.ModelSettings{}, false},
		{"claude-sonnet-5-5-20260101", stepwise.ModelSettings{}, false},
	}
	for _, tt := range tests {
		if got := c.SupportsForcedToolChoice(tt.model, tt.settings); got != tt.want {
			t.Errorf("SupportsForcedToolChoice(%q, %+v) = %v, want %v", tt.model, tt.settings, got, tt.want)
		}
	}
}
