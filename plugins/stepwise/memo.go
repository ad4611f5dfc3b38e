package stepwise

import (
	"container/list"
	"sync"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// itemMemoBytes bounds the decoded items a runner keeps, all sessions
// together.
const itemMemoBytes = 128 << 20

// itemMemo keeps, per session, the items decoded from the messages its
// last model call saw, so the next call decodes only its new messages.
// Stored messages never change (a sequence names one message for good),
// so a decoded item stays right; the memo only bounds its memory, dropping
// the least recently used sessions first. Items are shared between calls:
// nothing may change one.
type itemMemo struct {
	mu        sync.Mutex
	maxBytes  int64
	bytes     int64
	lru       *list.List // of *memoEntry, most recent first
	bySession map[string]*list.Element
}

type memoEntry struct {
	session string
	first   int64       // the sequence of items[0]
	items   []ModelItem // consecutive sequences
	sizes   []int       // len(Text)+len(Item) of each message, a check
	bytes   int64
}

func newItemMemo(maxBytes int64) *itemMemo {
	return &itemMemo{maxBytes: maxBytes, lru: list.New(), bySession: map[string]*list.Element{}}
}

// decode returns the items of msgs: those the session's last call decoded
// from the memo, the others decoded now.
func (m *itemMemo) decode(session string, msgs []pluginapi.Message) ([]ModelItem, error) {
	if m == nil {
		items := make([]ModelItem, len(msgs))
		for i, msg := range msgs {
			it, err := itemOf(msg)
			if err != nil {
				return nil, err
			}
			items[i] = it
		}
		return items, nil
	}
	var prev *memoEntry
	m.mu.Lock()
	if el, ok := m.bySession[session]; ok {
		prev = el.Value.(*memoEntry)
	}
	m.mu.Unlock()
	items := make([]ModelItem, len(msgs))
	sizes := make([]int, len(msgs))
	consecutive := true
	var n int64
	for i, msg := range msgs {
		sizes[i] = len(msg.Text) + len(msg.Item)
		n += int64(sizes[i]) + 128
		consecutive = consecutive && msg.Sequence == msgs[0].Sequence+int64(i)
		if prev != nil {
			if j := msg.Sequence - prev.first; j >= 0 && j < int64(len(prev.items)) && prev.sizes[j] == sizes[i] {
				items[i] = prev.items[j]
				continue
			}
		}
		it, err := itemOf(msg)
		if err != nil {
			return nil, err
		}
		items[i] = it
	}
	if consecutive && len(msgs) > 0 {
		m.put(&memoEntry{session: session, first: msgs[0].Sequence, items: items, sizes: sizes, bytes: n})
	}
	return items, nil
}

func (m *itemMemo) put(e *memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.bySession[e.session]; ok {
		m.bytes -= el.Value.(*memoEntry).bytes
		m.lru.Remove(el)
		delete(m.bySession, e.session)
	}
	if e.bytes > m.maxBytes {
		return
	}
	m.bySession[e.session] = m.lru.PushFront(e)
	m.bytes += e.bytes
	for m.bytes > m.maxBytes {
		el := m.lru.Back()
		old := el.Value.(*memoEntry)
		m.lru.Remove(el)
		delete(m.bySession, old.session)
		m.bytes -= old.bytes
	}
}
