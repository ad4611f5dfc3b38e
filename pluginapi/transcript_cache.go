package pluginapi

import (
	"container/list"
	"os"
	"slices"
	"strconv"
	"sync"
)

// The plugin side of capability TranscriptCache: the SDK keeps the newest
// transcript each session was sent, so the host sends a session's earlier
// messages once and then only what is new. Stored messages never change
// (a sequence names one message for good), so a kept transcript is right
// for as long as it is kept; the cache only has to bound its memory.

// DefaultTranscriptCacheBytes bounds the transcripts a plugin keeps, all
// sessions together, unless DEX_RUNNER_TRANSCRIPT_CACHE_BYTES says
// otherwise (0 turns the cache off).
const DefaultTranscriptCacheBytes = 256 << 20

// transcriptCacheBytes reads the plugin's cache size from its environment.
func transcriptCacheBytes() int64 {
	if v, ok := os.LookupEnv("DEX_RUNNER_TRANSCRIPT_CACHE_BYTES"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return DefaultTranscriptCacheBytes
}

// transcriptCache keeps one transcript per session, least recently used
// sessions dropped first past maxBytes.
type transcriptCache struct {
	mu        sync.Mutex
	maxBytes  int64
	bytes     int64
	lru       *list.List // of *keptTranscript, most recent first
	bySession map[string]*list.Element
}

type keptTranscript struct {
	session string
	msgs    []Message // consecutive sequences
	bytes   int64
}

// newTranscriptCache returns a cache of maxBytes, or nil for 0.
func newTranscriptCache(maxBytes int64) *transcriptCache {
	if maxBytes <= 0 {
		return nil
	}
	return &transcriptCache{maxBytes: maxBytes, lru: list.New(), bySession: map[string]*list.Element{}}
}

// messageBytes estimates the memory a kept message holds.
func messageBytes(m *Message) int64 {
	return int64(len(m.Text)+len(m.Item)+len(m.ToolCallID)+len(m.ToolName)+len(m.TurnID)+len(m.Role)+len(m.ToolStatus)) + 96
}

// get returns the kept messages from through through of a session, or
// false when they are not all kept. The slice is the caller's to append to.
func (c *transcriptCache) get(session string, from, through int64) ([]Message, bool) {
	if c == nil || from < 1 || through < from {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.bySession[session]
	if !ok {
		return nil, false
	}
	k := el.Value.(*keptTranscript)
	first := k.msgs[0].Sequence
	if from < first || through > k.msgs[len(k.msgs)-1].Sequence {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return slices.Clip(k.msgs[from-first : through-first+1]), true
}

// put keeps msgs as the session's transcript, when its sequences are
// consecutive and it fits.
func (c *transcriptCache) put(session string, msgs []Message) {
	if c == nil || len(msgs) == 0 {
		return
	}
	var n int64
	for i := range msgs {
		if msgs[i].Sequence != msgs[0].Sequence+int64(i) {
			return
		}
		n += messageBytes(&msgs[i])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.bySession[session]; ok {
		c.bytes -= el.Value.(*keptTranscript).bytes
		c.lru.Remove(el)
		delete(c.bySession, session)
	}
	if n > c.maxBytes {
		return
	}
	c.bySession[session] = c.lru.PushFront(&keptTranscript{session: session, msgs: slices.Clip(msgs), bytes: n})
	c.bytes += n
	for c.bytes > c.maxBytes {
		el := c.lru.Back()
		k := el.Value.(*keptTranscript)
		c.lru.Remove(el)
		delete(c.bySession, k.session)
		c.bytes -= k.bytes
	}
}
