package transcript_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/transcripttest"
)

// TestCacheSuite runs the suite through a cache, large and small (the
// small one evicts all the time).
func TestCacheSuite(t *testing.T) {
	for _, size := range []int64{256 << 20, 64 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			transcripttest.Run(t, func(t *testing.T) transcript.Store {
				return transcript.NewCache(openSQLite(t, filepath.Join(t.TempDir(), "messages.db")), size)
			})
		})
	}
}

// counting counts the reads that reach the store behind the cache. When
// hold is set, Chunk reads the chunk, then waits for it before it returns.
type counting struct {
	transcript.Store
	chunks, blobs atomic.Int64
	hold          chan struct{}
	read          chan struct{} // receives once Chunk has read, when hold is set
}

func (c *counting) Chunk(ctx context.Context, session string, first int64) ([]transcript.Message, error) {
	c.chunks.Add(1)
	msgs, err := c.Store.Chunk(ctx, session, first)
	if c.hold != nil {
		c.read <- struct{}{}
		<-c.hold
	}
	return msgs, err
}

func (c *counting) Blob(ctx context.Context, session, ref string) ([]byte, error) {
	c.blobs.Add(1)
	return c.Store.Blob(ctx, session, ref)
}

func newCounting(t *testing.T) *counting {
	return &counting{Store: openSQLite(t, filepath.Join(t.TempDir(), "messages.db"))}
}

func putChunks(t *testing.T, s transcript.Store, session string, n, perChunk, size int) [][]transcript.Message {
	t.Helper()
	var out [][]transcript.Message
	for i := range n {
		msgs := transcripttest.Messages(int64(i*perChunk+1), perChunk, size)
		if _, err := s.PutChunk(t.Context(), session, msgs); err != nil {
			t.Fatal(err)
		}
		out = append(out, msgs)
	}
	return out
}

func readChunk(t *testing.T, s transcript.Store, session string, first int64, want []transcript.Message) {
	t.Helper()
	got, err := s.Chunk(t.Context(), session, first)
	if err != nil {
		t.Fatalf("Chunk(%s, %d): %v", session, first, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Chunk(%s, %d) (-want +got):\n%s", session, first, d)
	}
}

func TestCacheServesCopies(t *testing.T) {
	ctx := t.Context()
	back := newCounting(t)
	chunks := putChunks(t, back, "s1", 1, 4, 100)
	c := transcript.NewCache(back, 1<<20)
	readChunk(t, c, "s1", 1, chunks[0])
	got, _ := c.Chunk(ctx, "s1", 1)
	got[0].Text = "changed by the caller"
	readChunk(t, c, "s1", 1, chunks[0])
	if n := back.chunks.Load(); n != 1 {
		t.Errorf("the store was read %d times for one chunk, want 1", n)
	}
	ref, err := back.PutBlob(ctx, "s1", []byte("blob"))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, err := c.Blob(ctx, "s1", ref)
		if err != nil || string(b) != "blob" {
			t.Fatalf("Blob = %q, %v", b, err)
		}
		b[0] = 'X'
	}
	if n := back.blobs.Load(); n != 1 {
		t.Errorf("the store was read %d times for one blob, want 1", n)
	}
	// Window rows are never cached.
	if err := c.PutWindow(ctx, "s1", transcript.Writer{Gen: 1, Attempt: 1}, transcripttest.Messages(5, 1, 10)); err != nil {
		t.Fatal(err)
	}
	retry := transcripttest.Messages(5, 1, 20)
	if err := c.PutWindow(ctx, "s1", transcript.Writer{Gen: 1, Attempt: 2}, retry); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Window(ctx, "s1", 5, 5); err != nil || !cmp.Equal(retry, got) {
		t.Errorf("Window through the cache = %v, %v; want the retry's row", got, err)
	}
	// PutChunk through the cache fills it.
	more := transcripttest.Messages(5, 4, 100)
	if _, err := c.PutChunk(ctx, "s1", more); err != nil {
		t.Fatal(err)
	}
	readChunk(t, c, "s1", 5, more)
	if n := back.chunks.Load(); n != 1 {
		t.Errorf("a chunk put through the cache was read from the store (%d reads)", n-1)
	}
	if transcript.NewCache(back, 0) != transcript.Store(back) {
		t.Error("NewCache with 0 bytes does not return the store itself")
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	back := newCounting(t)
	chunks := putChunks(t, back, "s1", 4, 4, 1000) // about 4.5 KB each in memory
	c := transcript.NewCache(back, 10_000)         // room for two
	read := func(i int, fromStore bool) {
		t.Helper()
		before := back.chunks.Load()
		readChunk(t, c, "s1", int64(i*4+1), chunks[i])
		if got := back.chunks.Load() > before; got != fromStore {
			t.Errorf("chunk %d read from the store: %v, want %v", i, got, fromStore)
		}
	}
	read(0, true)
	read(1, true)
	read(0, false) // 0 is now the most recently used
	read(2, true)  // evicts 1
	read(0, false)
	read(1, true) // evicts 2
	read(2, true)
	// A chunk larger than the whole cache is never cached.
	big := transcripttest.Messages(100, 1, 20_000)
	if _, err := back.PutChunk(t.Context(), "s1", big); err != nil {
		t.Fatal(err)
	}
	readChunk(t, c, "s1", 100, big)
	before := back.chunks.Load()
	readChunk(t, c, "s1", 100, big)
	if back.chunks.Load() == before {
		t.Error("a chunk larger than the cache was cached")
	}
	read(1, false) // and it evicted nothing
}

func TestCacheForgetsDeleted(t *testing.T) {
	ctx := t.Context()
	c := transcript.NewCache(newCounting(t), 1<<20)
	chunks := putChunks(t, c, "s1", 3, 4, 100)
	putChunks(t, c, "s2", 1, 4, 100)
	blob, err := c.PutBlob(ctx, "s1", []byte("blob"))
	if err != nil {
		t.Fatal(err)
	}
	keptBlob, err := c.PutBlob(ctx, "s1", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		readChunk(t, c, "s1", int64(i*4+1), chunks[i])
	}
	for _, ref := range []string{blob, keptBlob} {
		if _, err := c.Blob(ctx, "s1", ref); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := c.DeleteChunks(ctx, "s1", []int64{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chunk(ctx, "s1", 1); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("Chunk after DeleteChunks: %v, want ErrNotFound", err)
	}
	readChunk(t, c, "s1", 5, chunks[1])

	swept, err := c.SweepBlobs(ctx, "s1", []string{keptBlob}, time.Now().Add(time.Hour))
	if err != nil || len(swept) != 1 {
		t.Fatalf("SweepBlobs = %v, %v", swept, err)
	}
	if _, err := c.Blob(ctx, "s1", blob); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("Blob after SweepBlobs: %v, want ErrNotFound", err)
	}
	if _, err := c.Blob(ctx, "s1", keptBlob); err != nil {
		t.Errorf("the kept blob: %v", err)
	}

	if _, err := c.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chunk(ctx, "s1", 5); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("Chunk after DeleteSession: %v, want ErrNotFound", err)
	}
	if _, err := c.Blob(ctx, "s1", keptBlob); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("Blob after DeleteSession: %v, want ErrNotFound", err)
	}
	readChunk(t, c, "s2", 1, transcripttest.Messages(1, 4, 100))
}

// TestCacheReadRacingDelete holds a read of a chunk between the store and
// the cache while the chunk is deleted: what it read must not be cached.
func TestCacheReadRacingDelete(t *testing.T) {
	ctx := t.Context()
	back := newCounting(t)
	putChunks(t, back, "s1", 1, 4, 100)
	c := transcript.NewCache(back, 1<<20)
	back.hold, back.read = make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := c.Chunk(ctx, "s1", 1)
		done <- err
	}()
	<-back.read // the read has the chunk and waits
	if _, err := c.DeleteChunks(ctx, "s1", []int64{1}); err != nil {
		t.Fatal(err)
	}
	close(back.hold)
	if err := <-done; err != nil {
		t.Fatalf("the racing read: %v", err)
	}
	back.hold = nil
	if got, err := c.Chunk(ctx, "s1", 1); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("Chunk after the delete = %d messages, %v; want ErrNotFound (a stale copy was cached)", len(got), err)
	}
}

// TestCacheConcurrent reads, puts and deletes through one cache from many
// goroutines (run with -race), then checks every read was right.
func TestCacheConcurrent(t *testing.T) {
	ctx := t.Context()
	back := newCounting(t)
	chunks := putChunks(t, back, "s1", 16, 4, 500)
	c := transcript.NewCache(back, 30_000) // room for a few
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := (g*7 + i*5) % len(chunks)
				got, err := c.Chunk(ctx, "s1", int64(k*4+1))
				if err != nil {
					errs <- err
					return
				}
				if !cmp.Equal(chunks[k], got) {
					errs <- fmt.Errorf("chunk %d differs", k)
					return
				}
				if i%50 == 0 {
					session := fmt.Sprintf("other-%d", g)
					if _, err := c.PutChunk(ctx, session, chunks[k]); err != nil {
						errs <- err
						return
					}
					if _, err := c.DeleteSession(ctx, session); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
