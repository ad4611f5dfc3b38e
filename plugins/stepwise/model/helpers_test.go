package model

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
)

// recorder is a stepwise.ModelOutput that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []recEvent
}

type recEvent struct {
	reasoning bool
	text      string
}

func (r *recorder) WriteTextDelta(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recEvent{text: s})
}

func (r *recorder) WriteReasoningDelta(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recEvent{reasoning: true, text: s})
}

func (r *recorder) joined(reasoning bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.events {
		if e.reasoning == reasoning {
			b.WriteString(e.text)
		}
	}
	return b.String()
}

func (r *recorder) count(reasoning bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.reasoning == reasoning {
			n++
		}
	}
	return n
}

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func mustNew(t *testing.T, cfg Config, getenv func(string) string) stepwise.ModelClient {
	t.Helper()
	c, err := New(cfg, getenv)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return c
}

// withFakeClock makes c batch deltas on a clock that never fires, so only
// sentence ends and the end of the stream write events: deterministic.
func withFakeClock(c stepwise.ModelClient) stepwise.ModelClient {
	clk := &fakeClock{now: time.Unix(0, 0)}
	switch c := c.(type) {
	case *responsesClient:
		c.clock = clk
	case *chatClient:
		c.clock = clk
	case *anthropicClient:
		c.clock = clk
	}
	return c
}

func call(t *testing.T, c stepwise.ModelClient, req *stepwise.ModelRequest) (*stepwise.ModelResponse, *recorder, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := &recorder{}
	resp, err := c.CallModel(ctx, req, rec)
	return resp, rec, err
}

func isPermanent(err error) bool {
	var p *pluginapi.PermanentError
	return errors.As(err, &p)
}

func user(text string) stepwise.ModelItem {
	return stepwise.ModelItem{Kind: stepwise.ItemUserText, Text: text}
}

func output(o stepwise.ModelOutputItem) stepwise.ModelItem {
	return stepwise.ModelItem{Kind: stepwise.ItemModelOutput, Output: &o}
}

func result(id, name, text string) stepwise.ModelItem {
	return stepwise.ModelItem{Kind: stepwise.ItemToolResult, ToolCallID: id, ToolName: name, Status: string(pluginapi.ToolCallSucceeded), Text: text}
}

var lookupTool = pluginapi.ToolDefinition{
	Name:        "lookup_order",
	Description: "Look up an order by its ID.",
	InputSchema: []byte(`{"type":"object","properties":{"order_id":{"type":"string","description":"The order's ID."}},"required":["order_id"],"additionalProperties":false}`),
}
