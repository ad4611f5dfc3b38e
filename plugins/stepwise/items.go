package stepwise

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// itemsFromMessages rebuilds model input from stored messages, repaired
// (RepairItems): an orphaned call never reaches a provider.
func itemsFromMessages(msgs []pluginapi.Message) ([]ModelItem, error) {
	decoded := make([]ModelItem, len(msgs))
	for i, m := range msgs {
		it, err := itemOf(m)
		if err != nil {
			return nil, err
		}
		decoded[i] = it
	}
	return RepairItems(decoded), nil
}

// RepairItems returns items as a provider accepts them after any crash:
// every tool call of a model output has exactly one result before the next
// output or user text. A call without one gets the outcome-unknown result
// (it is never run again), a second result of a call and a result without
// a call are left out. The runner repairs every model call's input with it;
// the stored messages stay as they are.
func RepairItems(decoded []ModelItem) []ModelItem {
	items := make([]ModelItem, 0, len(decoded))
	var open []ModelToolCall // calls of the last model output without a result yet
	closeOpen := func() {
		for _, call := range open {
			items = append(items, ModelItem{Kind: ItemToolResult, ToolCallID: call.ID, ToolName: call.Name,
				Status: string(pluginapi.ToolCallOutcomeUnknown), Text: pluginapi.OutcomeUnknownToolResult})
		}
		open = nil
	}
	for _, it := range decoded {
		switch it.Kind {
		case ItemToolResult:
			i := slices.IndexFunc(open, func(c ModelToolCall) bool { return c.ID == it.ToolCallID })
			if i < 0 {
				// A second result of its call, or one without a call:
				// providers refuse both.
				continue
			}
			open = append(open[:i:i], open[i+1:]...)
		default:
			closeOpen()
		}
		items = append(items, it)
		if it.Kind == ItemModelOutput && it.Output != nil {
			open = append(open, it.Output.ToolCalls...)
		}
	}
	closeOpen()
	return items
}

// itemOf decodes a stored message's framework item. Stepwise stores no
// item for user texts and tool results (the message's own fields hold
// them) and a model output's item without its text (the message's Text is
// it), so that no content is stored twice; items written by older versions,
// which repeat the text, decode the same. A message without an item (such
// as a plain-text note) becomes provider-neutral text.
func itemOf(m pluginapi.Message) (ModelItem, error) {
	if m.Item == "" {
		switch m.Role {
		case pluginapi.RoleAssistant:
			return ModelItem{Kind: ItemModelOutput, Output: &ModelOutputItem{Text: m.Text}}, nil
		case pluginapi.RoleTool:
			return ModelItem{Kind: ItemToolResult, ToolCallID: m.ToolCallID, ToolName: m.ToolName,
				Status: string(m.ToolStatus), Text: m.Text}, nil
		default:
			return ModelItem{Kind: ItemUserText, Text: m.Text}, nil
		}
	}
	var it ModelItem
	if err := json.Unmarshal([]byte(m.Item), &it); err != nil {
		return ModelItem{}, fmt.Errorf("message %d: framework item is not a stepwise item: %w", m.Sequence, err)
	}
	switch it.Kind {
	case ItemUserText, ItemToolResult:
	case ItemModelOutput:
		if it.Output == nil {
			return ModelItem{}, fmt.Errorf("message %d: model_output item without output", m.Sequence)
		}
		if it.Output.Text == "" {
			it.Output.Text = m.Text
		}
	default:
		return ModelItem{}, fmt.Errorf("message %d: unknown stepwise item type %q", m.Sequence, it.Kind)
	}
	return it, nil
}

// outputMessage renders a model output as a stored message: the text is
// the message's, the item keeps the rest (provider items and tool calls).
func outputMessage(out ModelOutputItem) (pluginapi.FrameworkMessage, error) {
	rest := out
	rest.Text = ""
	b, err := marshalItem(ModelItem{Kind: ItemModelOutput, Output: &rest})
	if err != nil {
		return pluginapi.FrameworkMessage{}, err
	}
	return pluginapi.FrameworkMessage{Role: pluginapi.RoleAssistant, Text: out.Text, Item: string(b)}, nil
}

// toolResultMessage renders a tool call's final record as a stored message
// and a model item. A missing record reads as outcome unknown.
func toolResultMessage(turn *pluginapi.TurnContext, id string) (pluginapi.FrameworkMessage, ModelItem) {
	rec, ok := turn.ToolCall(id)
	if !ok || !rec.Status.Final() {
		msg, it := resultMessage(id, rec.ToolName, string(pluginapi.ToolCallOutcomeUnknown), pluginapi.OutcomeUnknownToolResult)
		return msg, it
	}
	return resultMessage(id, rec.ToolName, string(rec.Status), pluginapi.DescribeToolCallOutcome(rec))
}

func resultMessage(id, name, status, text string) (pluginapi.FrameworkMessage, ModelItem) {
	it := ModelItem{Kind: ItemToolResult, ToolCallID: id, ToolName: name, Status: status, Text: text}
	// The message's fields are the whole item: none is stored.
	return pluginapi.FrameworkMessage{Role: pluginapi.RoleTool, Text: text, ToolCallID: id, ToolName: name,
		ToolStatus: pluginapi.ToolCallStatus(status)}, it
}

// marshalItem encodes a stored item as JSON without HTML escaping: Go's
// default writes <, > and & as six bytes each, which would make a message
// of such text six times its size in the message store.
func marshalItem(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
