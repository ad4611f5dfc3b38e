package stepwise

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

func memoMessages(from, through int64) []pluginapi.Message {
	var msgs []pluginapi.Message
	for seq := from; seq <= through; seq++ {
		out, _ := outputMessage(ModelOutputItem{Provider: "p", API: "a", Text: fmt.Sprint("answer ", seq)})
		msgs = append(msgs, pluginapi.Message{Sequence: seq, Role: out.Role, Text: out.Text, Item: out.Item})
	}
	return msgs
}

// TestItemMemoDecodesOnlyNewMessages: a session's next call reuses the
// items its last call decoded (a stored message never changes) and decodes
// the new ones; past its size the memo drops the least recent session.
func TestItemMemoDecodesOnlyNewMessages(t *testing.T) {
	m := newItemMemo(1 << 20)
	if _, err := m.decode("s1", memoMessages(1, 3)); err != nil {
		t.Fatal(err)
	}
	// Message 2's item is now garbage of the same size: it is not decoded
	// again. Message 5's is garbage too, and it is new: decoding fails.
	msgs := memoMessages(1, 5)
	msgs[1].Item = strings.Repeat("x", len(msgs[1].Item))
	bad := msgs[4].Item
	msgs[4].Item = strings.Repeat("x", len(bad))
	if _, err := m.decode("s1", msgs); err == nil || !strings.Contains(err.Error(), "message 5") {
		t.Fatalf("decode = %v, want message 5's error", err)
	}
	msgs[4].Item = bad
	items, err := m.decode("s1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if want := fmt.Sprint("answer ", i+1); it.Output == nil || it.Output.Text != want {
			t.Errorf("item %d = %+v, want %q", i+1, it, want)
		}
	}
	// Another session with the same sequences decodes its own.
	if _, err := m.decode("s2", msgs[:2]); err == nil {
		t.Error("s2's garbage item decoded from s1's memo")
	}
	small := newItemMemo(600)
	_, _ = small.decode("a", memoMessages(1, 2))
	_, _ = small.decode("b", memoMessages(1, 2))
	if _, ok := small.bySession["a"]; ok || small.bytes > 600 {
		t.Errorf("the memo holds %d bytes and session a past its 600", small.bytes)
	}
}
