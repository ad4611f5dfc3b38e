package stepwise

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// Compaction texts. The header and the omission note are the spec's.
const (
	// ContextSummaryNoteHeader starts the model input of a session with a
	// context summary, followed by the summary.
	ContextSummaryNoteHeader = "[Dex] Summary of the earlier conversation:"
	// ContextSummaryInstructions are the instructions of a summary call.
	ContextSummaryInstructions = "Summarize the conversation so far so that it can go on from your summary alone. " +
		"Keep what the user wants and decided, the facts, names, numbers and identifiers that came up, " +
		"what each tool call did and returned, and what is still open. " +
		"If the conversation starts with an earlier summary, fold it in. " +
		"Write plain text in the conversation's language, with no preamble."
	// ContextSummaryOmissionFormat says how many of the oldest messages a
	// summary call left out because they did not fit its input.
	ContextSummaryOmissionFormat = "[Dex] %d earlier messages did not fit in this request and are left out."
)

// IsSummaryRequest reports whether req is a summary call (compaction), so
// that a scripted model can answer it.
func IsSummaryRequest(req *ModelRequest) bool { return req.Instructions == ContextSummaryInstructions }

// summaryItem is the model input item that carries a context summary.
func summaryItem(s *pluginapi.ContextSummary) ModelItem {
	return ModelItem{Kind: ItemUserText, Text: ContextSummaryNoteHeader + "\n" + s.Text}
}

// withSummary puts the turn's summary, if any, before items.
func withSummary(turn *pluginapi.TurnContext, items []ModelItem) []ModelItem {
	if turn.ContextSummary == nil {
		return items
	}
	return append([]ModelItem{summaryItem(turn.ContextSummary)}, items...)
}

// itemTokens estimates one item's tokens as EstimateTokens does.
func itemTokens(it ModelItem) int64 {
	return EstimateTokens(&ModelRequest{Items: []ModelItem{it}})
}

// cutPoints returns, for decoded items, whether a summary may end after
// each one: only where every tool call so far has its result, so that no
// call is separated from its result.
func cutPoints(items []ModelItem) []bool {
	ok := make([]bool, len(items))
	open := map[string]bool{}
	for i, it := range items {
		switch it.Kind {
		case ItemModelOutput:
			if it.Output != nil {
				for _, c := range it.Output.ToolCalls {
					open[c.ID] = true
				}
			}
		case ItemToolResult:
			delete(open, it.ToolCallID)
		}
		ok[i] = len(open) == 0
	}
	return ok
}

// SelectCompactionCutoff implements pluginapi.Compactor: the oldest cut
// that leaves the newest messages within the retained budget, at a point
// where every tool call has its result; never the last message, which the
// next model call answers. 0 when there is no such point.
func (r *Runner) SelectCompactionCutoff(_ context.Context, req *pluginapi.CompactionCutoffRequest) (*pluginapi.CompactionCutoffResponse, error) {
	turn := &req.Turn
	items, err := r.memo.decode(turn.SessionID, turn.Messages)
	if err != nil {
		return nil, err
	}
	if len(items) < 2 {
		return &pluginapi.CompactionCutoffResponse{}, nil
	}
	ok := cutPoints(items)
	// kept[i] is the tokens of the messages after i.
	kept := make([]int64, len(items))
	for i := len(items) - 2; i >= 0; i-- {
		kept[i] = kept[i+1] + itemTokens(items[i+1])
	}
	cut := -1
	for i := 0; i < len(items)-1; i++ {
		if !ok[i] {
			continue
		}
		cut = i
		if kept[i] <= req.RetainedTokenBudget {
			break
		}
	}
	if cut < 0 {
		return &pluginapi.CompactionCutoffResponse{}, nil
	}
	return &pluginapi.CompactionCutoffResponse{ThroughSequence: turn.Messages[cut].Sequence}, nil
}

// SummarizeContext implements pluginapi.Compactor: one model call, with
// the summary instructions and no tools, over the earlier summary and the
// messages. When they do not fit the input budget (with the model's
// max_output_tokens), the oldest messages are left out at points that keep
// each tool call with its result, and a note says how many.
func (r *Runner) SummarizeContext(ctx context.Context, req *pluginapi.SummarizeContextRequest) (*pluginapi.SummarizeContextResponse, error) {
	turn := &req.Turn
	c, err := r.agent(turn.Agent)
	if err != nil {
		return nil, err
	}
	m, err := c.def.model(turn.SessionSettings)
	if err != nil {
		return nil, fmt.Errorf("resolve_model: %w", err)
	}
	items, err := itemsFromMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	var head []ModelItem
	if req.PreviousSummary != "" {
		head = append(head, summaryItem(&pluginapi.ContextSummary{Text: req.PreviousSummary}))
	}
	build := func(omitted int, rest []ModelItem) *ModelRequest {
		in := append([]ModelItem(nil), head...)
		if omitted > 0 {
			in = append(in, ModelItem{Kind: ItemUserText, Text: fmt.Sprintf(ContextSummaryOmissionFormat, omitted)})
		}
		return &ModelRequest{Model: m.Name, Instructions: ContextSummaryInstructions, Items: append(in, rest...), Settings: m.Settings}
	}
	mreq := build(0, items)
	if budget := req.InputTokenBudget; budget > 0 {
		ok := cutPoints(items)
		for i := 0; m.Client.EstimateInputTokens(mreq)+m.Settings.MaxOutputTokens > budget; i++ {
			// Leave out through the next point that keeps calls whole.
			for i < len(items)-1 && !ok[i] {
				i++
			}
			if i >= len(items)-1 {
				return nil, pluginapi.Permanent(errors.New("summarize_context: even the newest message does not fit the summary call's input budget"))
			}
			mreq = build(i+1, items[i+1:])
		}
	}
	resp, err := m.Client.CallModel(ctx, mreq, req.Events)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSpace(resp.Output.Text)
	if text == "" {
		return nil, errors.New("summarize_context: the model returned no text")
	}
	return &pluginapi.SummarizeContextResponse{Summary: text, Usage: resp.Usage, Metadata: resp.Metadata}, nil
}

// ScriptedSummary is a deterministic summary of a summary call's input,
// for scripted models (tests, make dev): the earlier summary's beginning
// and the beginning of each user text, at most 1,500 bytes in all.
func ScriptedSummary(req *ModelRequest) string {
	var earlier string
	var said []string
	for _, text := range UserTexts(req) {
		switch {
		case strings.HasPrefix(text, ContextSummaryNoteHeader):
			earlier = clip(strings.TrimSpace(strings.TrimPrefix(text, ContextSummaryNoteHeader)), 300)
		case strings.HasPrefix(text, "[Dex]"):
		default:
			said = append(said, clip(text, 40))
		}
	}
	out := "Summary: the user wrote " + strings.Join(said, "; ") + "."
	if earlier != "" {
		out = "Before that: " + earlier + " " + out
	}
	return clip(out, 1500)
}

// clip cuts s to at most n bytes at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
