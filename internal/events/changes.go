package events

import (
	"sync"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Change is one notice of the change feed (wire.SessionChange).
type Change = wire.SessionChange

// ChangeFeed is the change feed of a broker: every session's events of
// the types in wire.ChangeEventTypes, and the changes announced beside
// them (a session started, renamed, ended), delivered live to readers
// that watch many sessions at once. Nothing is kept: a reader sees the
// changes made while it watches, and a reader that falls behind gets one
// wire.ChangeResync in place of what it lost.
type ChangeFeed interface {
	// Announce publishes a change that is not an event of the session's
	// stream. It never blocks.
	Announce(c Change)
	// WatchChanges starts a watch; stop ends it. Changes arrive on
	// Changes until stop is called or the broker closes.
	WatchChanges() (w *ChangeWatch, stop func())
}

// watchBuffer is how many changes a watcher may have unread before it
// loses them (and gets a resync).
const watchBuffer = 256

// ChangeWatch is one reader of a change feed.
type ChangeWatch struct {
	mu     sync.Mutex
	queue  []Change
	lost   bool
	closed bool
	ready  chan struct{} // has one token while the queue is not empty
}

// Ready is signalled when Next may return changes.
func (w *ChangeWatch) Ready() <-chan struct{} { return w.ready }

// Next returns the unread changes (a lone wire.ChangeResync first when
// some were lost), and whether the feed is still open.
func (w *ChangeWatch) Next() ([]Change, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.queue
	w.queue = nil
	if w.lost {
		w.lost = false
		out = append([]Change{{Type: wire.ChangeResync}}, out...)
	}
	return out, !w.closed
}

func (w *ChangeWatch) push(c Change) {
	w.mu.Lock()
	switch {
	case w.closed:
	case len(w.queue) >= watchBuffer:
		// A reader this far behind reads the whole list again anyway.
		w.queue, w.lost = w.queue[:0], true
	default:
		w.queue = append(w.queue, c)
	}
	w.mu.Unlock()
	w.signal()
}

func (w *ChangeWatch) signal() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

func (w *ChangeWatch) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.signal()
}

// changeHub fans changes out to this process's watchers.
type changeHub struct {
	mu       sync.Mutex
	watchers map[*ChangeWatch]struct{}
	closed   bool
}

// watch adds a watcher.
func (h *changeHub) watch() (w *ChangeWatch, stop func()) {
	w = &ChangeWatch{ready: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watchers == nil {
		h.watchers = map[*ChangeWatch]struct{}{}
	}
	if h.closed {
		w.closed = true
		w.signal()
		return w, func() {}
	}
	h.watchers[w] = struct{}{}
	return w, func() {
		h.mu.Lock()
		delete(h.watchers, w)
		h.mu.Unlock()
		w.close()
	}
}

// count returns how many watch.
func (h *changeHub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers)
}

func (h *changeHub) publish(c Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers {
		w.push(c)
	}
}

// lost gives every watcher a resync (the shared feed dropped changes).
func (h *changeHub) lost() { h.publish(Change{Type: wire.ChangeResync}) }

func (h *changeHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.watchers {
		w.close()
	}
	h.watchers = nil
}
