package transcript_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/pgtest"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/transcripttest"
)

// backends runs bench against a new store of each backend. The
// PostgreSQL server starts once, here; each run gets a new database.
func backends(b *testing.B, bench func(b *testing.B, s transcript.Store)) {
	var srv *pgtest.Server
	if pgtest.Available() {
		srv = pgtest.Start(b)
	}
	b.Run("sqlite", func(b *testing.B) {
		bench(b, openSQLite(b, filepath.Join(b.TempDir(), "messages.db")))
	})
	b.Run("postgres", func(b *testing.B) {
		if srv == nil {
			testpeer.Missing(b, "PostgreSQL 15", "make test-peers")
		}
		bench(b, openPostgres(b, srv.CreateDatabase(b, "")))
	})
}

// BenchmarkPutWindow stores what one Step typically produces: 4 messages
// of 2 KiB, as a new Step each time.
func BenchmarkPutWindow(b *testing.B) {
	backends(b, func(b *testing.B, s transcript.Store) {
		const perStep = 4
		batch := transcripttest.Messages(1, perStep, 2048)
		var size int64
		for _, m := range batch {
			size += int64(transcript.EncodedSize(m))
		}
		b.SetBytes(size)
		b.ReportAllocs()
		var gen int64
		for b.Loop() {
			for i := range batch {
				batch[i].Sequence = gen*perStep + int64(i) + 1
			}
			gen++
			if err := s.PutWindow(b.Context(), "bench", transcript.Writer{Gen: gen, Attempt: 1}, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(gen*perStep), "µs/message")
	})
}

// BenchmarkLoadTranscript reads what a model call loads: 1,000 messages of
// 2 KiB, the first 936 in chunks of 32 and the last 64 as window rows;
// cold from the store, and through a warm cache (window rows still come
// from the store).
func BenchmarkLoadTranscript(b *testing.B) {
	const n, window = 1000, 64
	backends(b, func(b *testing.B, s transcript.Store) {
		msgs := transcripttest.Messages(1, n, 2048)
		var size int64
		for _, c := range transcript.Split(msgs[:n-window], transcript.DefaultChunkSize, transcript.DefaultChunkMaxBytes) {
			ref, err := s.PutChunk(b.Context(), "bench", c)
			if err != nil {
				b.Fatal(err)
			}
			size += ref.Bytes
		}
		if err := s.PutWindow(b.Context(), "bench", transcript.Writer{Gen: 1, Attempt: 1}, msgs[n-window:]); err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs[n-window:] {
			size += int64(transcript.EncodedSize(m))
		}
		load := func(b *testing.B, s transcript.Store) {
			refs, err := s.Chunks(b.Context(), "bench", 1, n)
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			for _, ref := range refs {
				c, err := s.Chunk(b.Context(), "bench", ref.First)
				if err != nil {
					b.Fatal(err)
				}
				got += len(c)
			}
			w, err := s.Window(b.Context(), "bench", int64(got)+1, n)
			if err != nil {
				b.Fatal(err)
			}
			if got+len(w) != n {
				b.Fatalf("loaded %d messages, want %d", got+len(w), n)
			}
		}
		b.Run("cold", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				load(b, s)
			}
		})
		b.Run("cached", func(b *testing.B) {
			c := transcript.NewCache(s, 256<<20)
			load(b, c)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				load(b, c)
			}
		})
	})
}

// BenchmarkFork forks a session at its last message, into a new session
// each time: 10 turns deep (20 messages of 2 KiB, all window rows) and
// 2,000 turns deep (4,000 messages: chunks of 32 and a window of 80 rows,
// as a session with the default window keeps them). The deep fork shares
// its 123 chunks and copies 80 rows; the shallow one copies 20.
func BenchmarkFork(b *testing.B) {
	backends(b, func(b *testing.B, s transcript.Store) {
		for _, turns := range []int{10, 2000} {
			b.Run(fmt.Sprintf("depth=%d", turns), func(b *testing.B) {
				parent := fmt.Sprintf("parent-%d", turns)
				n := 2 * turns
				msgs := transcripttest.Messages(1, n, 2048)
				rows := min(n, transcript.DefaultWindowSize+16)
				for _, c := range transcript.Split(msgs[:n-rows], transcript.DefaultChunkSize, transcript.DefaultChunkMaxBytes) {
					if _, err := s.PutChunk(b.Context(), parent, c); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.PutWindow(b.Context(), parent, transcript.Writer{Gen: 1, Attempt: 1}, msgs[n-rows:]); err != nil {
					b.Fatal(err)
				}
				r := transcript.Reader{Store: s}
				i := 0
				for b.Loop() {
					i++
					start, err := r.ForkMessages(b.Context(), fmt.Sprintf("fork-%d-%d", turns, i), parent, int64(n), nil)
					if err != nil {
						b.Fatal(err)
					}
					if len(start.Tail) != rows {
						b.Fatalf("the fork copied %d messages, want %d", len(start.Tail), rows)
					}
				}
			})
		}
	})
}
