package transcript

import (
	"bytes"
	"container/list"
	"context"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// NewCache returns a Store that keeps chunks (immutable) and blobs
// (content-addressed) read through it in memory, least recently used out
// first, up to maxBytes in all; everything else goes straight to s. Window
// rows are never cached: a retry may rewrite them. Chunks that PutChunk
// stores through it are cached too, since the next model call reads them.
// Deletes through the cache drop what they delete; DeleteSession drops the
// session's entries. With maxBytes <= 0 it returns s itself.
//
// One cache per worker process is shared by all its Steps; it is safe for
// concurrent use. A chunk or blob deleted through another process may be
// served from here until it is evicted: retention only deletes chunks the
// workflow no longer lists, and a session ID is never reused (sessions
// start with the REJECT_DUPLICATE ID policy), so no reader asks for one.
//
// The cache returns copies, so a caller may change what it gets.
func NewCache(s Store, maxBytes int64) Store {
	if maxBytes <= 0 {
		return s
	}
	return &cache{
		Store:     s,
		max:       maxBytes,
		lru:       list.New(),
		items:     make(map[cacheKey]*list.Element),
		bySession: make(map[string]map[cacheKey]struct{}),
	}
}

type cacheKey struct {
	session string
	first   int64  // a chunk's first sequence, when ref is ""
	ref     string // a blob's reference
}

type cacheEntry struct {
	key  cacheKey
	msgs []Message // a chunk
	blob []byte    // a blob
	size int64
}

type cache struct {
	Store // what the cache does not handle goes through

	mu        sync.Mutex
	max, used int64
	lru       *list.List // of *cacheEntry, most recently used first
	items     map[cacheKey]*list.Element
	bySession map[string]map[cacheKey]struct{}
	// epoch counts invalidations. A read that started before one does not
	// fill the cache with what it read: that may be what was just deleted.
	epoch uint64
}

// Interface guards
var _ Store = (*cache)(nil)

var messageSize = int64(unsafe.Sizeof(Message{}))

func chunkMemory(msgs []Message) int64 {
	n := int64(len(msgs)) * messageSize
	for i := range msgs {
		m := &msgs[i]
		n += int64(len(m.Role) + len(m.Text) + len(m.Item) + len(m.ToolCallID) + len(m.ToolName) + len(m.TurnID) + len(m.ToolStatus))
	}
	return n
}

// get returns the entry for k and marks it used, or nil. It also returns
// the epoch to pass to put after a miss.
func (c *cache) get(k cacheKey) (*cacheEntry, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, c.epoch
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheEntry), c.epoch
}

// put adds e unless an invalidation happened since epoch, or e is larger
// than the whole cache; then it evicts the least recently used entries
// until the cache fits.
func (c *cache) put(e *cacheEntry, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch || e.size > c.max {
		return
	}
	if _, ok := c.items[e.key]; ok {
		return
	}
	c.items[e.key] = c.lru.PushFront(e)
	c.used += e.size
	keys := c.bySession[e.key.session]
	if keys == nil {
		keys = make(map[cacheKey]struct{})
		c.bySession[e.key.session] = keys
	}
	keys[e.key] = struct{}{}
	for c.used > c.max {
		c.removeLocked(c.lru.Back())
	}
}

func (c *cache) removeLocked(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.items, e.key)
	c.used -= e.size
	if keys := c.bySession[e.key.session]; keys != nil {
		delete(keys, e.key)
		if len(keys) == 0 {
			delete(c.bySession, e.key.session)
		}
	}
}

// invalidate drops the given keys, or all of session's when keys is nil,
// and starts a new epoch.
func (c *cache) invalidate(session string, keys []cacheKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if keys == nil {
		for k := range c.bySession[session] {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if el, ok := c.items[k]; ok {
			c.removeLocked(el)
		}
	}
}

func (c *cache) Chunk(ctx context.Context, session string, first int64) ([]Message, error) {
	k := cacheKey{session: session, first: first}
	e, epoch := c.get(k)
	if e != nil {
		return slices.Clone(e.msgs), nil
	}
	msgs, err := c.Store.Chunk(ctx, session, first)
	if err != nil {
		return nil, err
	}
	c.put(&cacheEntry{key: k, msgs: slices.Clone(msgs), size: chunkMemory(msgs)}, epoch)
	return msgs, nil
}

func (c *cache) PutChunk(ctx context.Context, session string, msgs []Message) (ChunkRef, error) {
	c.mu.Lock()
	epoch := c.epoch
	c.mu.Unlock()
	ref, err := c.Store.PutChunk(ctx, session, msgs)
	if err != nil {
		return ref, err
	}
	c.put(&cacheEntry{key: cacheKey{session: session, first: ref.First}, msgs: slices.Clone(msgs), size: chunkMemory(msgs)}, epoch)
	return ref, nil
}

func (c *cache) DeleteChunks(ctx context.Context, session string, firsts []int64) ([]ChunkRef, error) {
	// Drop the entries whether or not the store deletes them all: a
	// failed delete may have deleted some.
	keys := make([]cacheKey, len(firsts))
	for i, f := range firsts {
		keys[i] = cacheKey{session: session, first: f}
	}
	defer c.invalidate(session, keys)
	return c.Store.DeleteChunks(ctx, session, firsts)
}

func (c *cache) Blob(ctx context.Context, session, ref string) ([]byte, error) {
	k := cacheKey{session: session, ref: ref}
	e, epoch := c.get(k)
	if e != nil {
		return bytes.Clone(e.blob), nil
	}
	data, err := c.Store.Blob(ctx, session, ref)
	if err != nil {
		return nil, err
	}
	c.put(&cacheEntry{key: k, blob: bytes.Clone(data), size: int64(len(data)) + int64(len(ref))}, epoch)
	return data, nil
}

func (c *cache) SweepBlobs(ctx context.Context, session string, keep []string, cutoff time.Time) ([]string, error) {
	refs, err := c.Store.SweepBlobs(ctx, session, keep, cutoff)
	if err != nil {
		// What was swept before the failure is unknown: drop the
		// session's entries.
		c.invalidate(session, nil)
		return nil, err
	}
	keys := make([]cacheKey, len(refs))
	for i, ref := range refs {
		keys[i] = cacheKey{session: session, ref: ref}
	}
	c.invalidate(session, keys)
	return refs, nil
}

func (c *cache) DeleteSession(ctx context.Context, session string) (Deleted, error) {
	defer c.invalidate(session, nil)
	return c.Store.DeleteSession(ctx, session)
}
