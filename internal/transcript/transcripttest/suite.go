// Package transcripttest is the test suite that every transcript.Store
// passes: both backends, and the cache in front of them.
//
//	func TestSQLite(t *testing.T) {
//		transcripttest.Run(t, func(t *testing.T) transcript.Store {
//			s, err := transcript.Open(t.Context(), transcript.Options{Driver: "sqlite", Path: filepath.Join(t.TempDir(), "m.db")})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
package transcripttest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// Short names for the store's types.
type (
	Message = transcript.Message
	Writer  = transcript.Writer
)

// Run runs every case of the suite as a subtest. open must return a new,
// empty store for each call and close it when its test ends.
func Run(t *testing.T, open func(t *testing.T) transcript.Store) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, open(t))
		})
	}
}

var cases = []struct {
	name string
	run  func(*testing.T, transcript.Store)
}{
	{"WindowReadsBack", testWindowReadsBack},
	{"WindowHoleIsErrMissing", testWindowHole},
	{"RetryRewritesItsRows", testRetryRewrites},
	{"ZombieOlderAttemptIsFenced", testZombieAttempt},
	{"ZombieOlderGenIsFenced", testZombieGen},
	{"ConcurrentAttemptsNewestWins", testConcurrentAttempts},
	{"WritesAreAtomic", testAtomicWrites},
	{"PutWindowChecksArguments", testPutWindowArguments},
	{"DeleteWindowThrough", testDeleteWindowThrough},
	{"ChunksReadBack", testChunksReadBack},
	{"ChunkIdempotentAndConflict", testChunkConflict},
	{"ChunkPutConcurrently", testChunkConcurrent},
	{"DeleteChunks", testDeleteChunks},
	{"Blobs", testBlobs},
	{"SweepBlobs", testSweepBlobs},
	{"EncodedSizeOfHTMLCharacters", testEncodedSizeHTML},
	{"CapOnEveryWritePath", testCaps},
	{"SplitDeterministicWithinLimits", testSplit},
	{"DeleteSession", testDeleteSession},
	{"SessionsAreIsolated", testIsolation},
	{"ConcurrentSessions", testConcurrentSessions},
	{"LargeTranscript", testLargeTranscript},
	{"SpendLedger", testSpendLedger},
	{"ForkSharesChunksAndCopiesTheTail", testForkShares},
	{"ForkInsideAChunk", testForkInsideChunk},
	{"ForkIsIdempotent", testForkIdempotent},
	{"ForkOfAFork", testForkOfFork},
	{"ForkSurvivesTheParentsDeletes", testForkSurvivesDeletes},
	{"ForkRefusals", testForkRefusals},
}

// NewMessage builds a message of sequence seq with text and, by the
// sequence, each role and the fields that go with it.
func NewMessage(seq int64, text string) Message {
	m := Message{Sequence: seq, Text: text, TurnID: fmt.Sprintf("turn-%d", seq/8)}
	switch seq % 3 {
	case 0:
		m.Role = pluginapi.RoleUser
	case 1:
		m.Role = pluginapi.RoleAssistant
		m.Item = fmt.Sprintf(`{"type":"message","id":"msg_%d","content":[{"text":"<b>&amp;</b> \"q\""}]}`, seq)
	case 2:
		m.Role = pluginapi.RoleTool
		m.ToolCallID = fmt.Sprintf("call_%d", seq)
		m.ToolName = "lookup_order"
		m.ToolStatus = pluginapi.ToolCallSucceeded
	}
	return m
}

// Messages returns n messages from sequence from, each with about size
// bytes of text (at least a short label) that exercises the encoding:
// HTML characters, quotes, a backslash, NUL, multi-byte UTF-8.
func Messages(from int64, n, size int) []Message {
	out := make([]Message, n)
	for i := range out {
		seq := from + int64(i)
		label := fmt.Sprintf("message %d: <tag> & \"quoted\" \\ é ✓ \x00\n", seq)
		pad := max(0, size-len(label))
		out[i] = NewMessage(seq, label+strings.Repeat("abcdefgh<>&"[seq%11:seq%11+1], pad))
	}
	return out
}

// withText returns msgs with every text replaced by a marker and the
// original, so two writes of the same sequences differ.
func withText(msgs []Message, marker string) []Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].Text = marker + " " + out[i].Text
	}
	return out
}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	// A fork's creation time is the store's clock; tests compare the rest.
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(transcript.Fork{}, "Created")); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// wantErr checks that err wraps target and that its text holds every part.
func wantErr(t *testing.T, what string, err, target error, parts ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error = %v, want %v", what, err, target)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not say %q", what, err, p)
		}
	}
}

func mustPutWindow(t *testing.T, s transcript.Store, session string, w Writer, msgs []Message) {
	t.Helper()
	if err := s.PutWindow(t.Context(), session, w, msgs); err != nil {
		t.Fatalf("PutWindow(%s, %s, %d messages): %v", session, w, len(msgs), err)
	}
}

func mustWindow(t *testing.T, s transcript.Store, session string, from, to int64) []Message {
	t.Helper()
	got, err := s.Window(t.Context(), session, from, to)
	if err != nil {
		t.Fatalf("Window(%s, %d, %d): %v", session, from, to, err)
	}
	return got
}

func mustPutChunk(t *testing.T, s transcript.Store, session string, msgs []Message) transcript.ChunkRef {
	t.Helper()
	ref, err := s.PutChunk(t.Context(), session, msgs)
	if err != nil {
		t.Fatalf("PutChunk(%s, %d messages): %v", session, len(msgs), err)
	}
	return ref
}

func mustChunk(t *testing.T, s transcript.Store, session string, first int64) []Message {
	t.Helper()
	got, err := s.Chunk(t.Context(), session, first)
	if err != nil {
		t.Fatalf("Chunk(%s, %d): %v", session, first, err)
	}
	return got
}

// chunkBytes is the size of the chunk encoding the store writes, from the
// messages' sizes: [m1,m2,...].
func chunkBytes(msgs []Message) int64 {
	n := int64(1)
	for _, m := range msgs {
		n += int64(transcript.EncodedSize(m)) + 1
	}
	return n
}

func refOf(msgs []Message) transcript.ChunkRef {
	return transcript.ChunkRef{First: msgs[0].Sequence, Last: msgs[len(msgs)-1].Sequence, Count: len(msgs), Bytes: chunkBytes(msgs)}
}

func testWindowReadsBack(t *testing.T, s transcript.Store) {
	msgs := Messages(1, 5, 300)
	mustPutWindow(t, s, "s1", Writer{Gen: 1, Attempt: 1}, msgs)
	for _, tt := range []struct{ from, to int64 }{{1, 5}, {2, 4}, {3, 3}, {5, 5}} {
		diff(t, fmt.Sprintf("Window(%d, %d)", tt.from, tt.to), msgs[tt.from-1:tt.to], mustWindow(t, s, "s1", tt.from, tt.to))
	}
	if got := mustWindow(t, s, "s1", 6, 5); len(got) != 0 {
		t.Errorf("Window(6, 5) = %d messages, want none (an empty window)", len(got))
	}
	// Rows of later Steps extend the window.
	more := Messages(6, 3, 10)
	mustPutWindow(t, s, "s1", Writer{Gen: 2, Attempt: 1}, more)
	diff(t, "Window(1, 8)", append(slices.Clone(msgs), more...), mustWindow(t, s, "s1", 1, 8))
}

func testWindowHole(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	mustPutWindow(t, s, "s1", Writer{Gen: 1, Attempt: 1}, []Message{NewMessage(1, "a"), NewMessage(2, "b"), NewMessage(4, "d")})
	for _, tt := range []struct {
		from, to int64
		missing  string
	}{
		{1, 4, "message 3 "},  // inside
		{1, 5, "message 3 "},  // the first hole is named
		{4, 6, "message 5 "},  // at the end
		{3, 4, "message 3 "},  // at the start
		{7, 9, "message 7 "},  // nothing at all
		{2, 10, "message 3 "}, // several
	} {
		got, err := s.Window(ctx, "s1", tt.from, tt.to)
		wantErr(t, fmt.Sprintf("Window(%d, %d)", tt.from, tt.to), err, transcript.ErrMissing, tt.missing, `"s1"`)
		if got != nil {
			t.Errorf("Window(%d, %d) returned %d messages with its error", tt.from, tt.to, len(got))
		}
	}
	_, err := s.Window(ctx, "s1", 0, 2)
	wantErr(t, "Window(0, 2)", err, transcript.ErrInvalid)
	_, err = s.Window(ctx, "", 1, 2)
	wantErr(t, "Window of an empty session ID", err, transcript.ErrInvalid)
}

func testRetryRewrites(t *testing.T, s transcript.Store) {
	base := Messages(10, 3, 100)
	// Attempt 1 writes, then writes again (the Step ran its write twice).
	mustPutWindow(t, s, "s1", Writer{Gen: 5, Attempt: 1}, withText(base, "first"))
	mustPutWindow(t, s, "s1", Writer{Gen: 5, Attempt: 1}, withText(base[:2], "again"))
	want := append(withText(base[:2], "again"), withText(base[2:], "first")...)
	diff(t, "after the same attempt rewrote two rows", want, mustWindow(t, s, "s1", 10, 12))
	// Attempt 2 (the retry) writes other content: it replaces all three.
	mustPutWindow(t, s, "s1", Writer{Gen: 5, Attempt: 2}, withText(base, "retry"))
	diff(t, "after the retry", withText(base, "retry"), mustWindow(t, s, "s1", 10, 12))
	// The next Step replaces an orphan the retry left above its result.
	mustPutWindow(t, s, "s1", Writer{Gen: 6, Attempt: 1}, withText(base[2:], "next step"))
	diff(t, "after the next Step", append(withText(base[:2], "retry"), withText(base[2:], "next step")...), mustWindow(t, s, "s1", 10, 12))
}

func testZombieAttempt(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	base := Messages(10, 3, 100)
	mustPutWindow(t, s, "s1", Writer{Gen: 5, Attempt: 2}, withText(base, "retry"))
	// Attempt 1 was cut off and writes late: nothing changes.
	err := s.PutWindow(ctx, "s1", Writer{Gen: 5, Attempt: 1}, withText(base, "zombie"))
	wantErr(t, "the late attempt 1", err, transcript.ErrFenced, "message 10", "gen 5 attempt 2", "gen 5 attempt 1")
	diff(t, "after the zombie", withText(base, "retry"), mustWindow(t, s, "s1", 10, 12))
	// A write that holds one newer row and a new sequence writes neither.
	zombie := withText(append(slices.Clone(base[2:]), NewMessage(13, "new")), "zombie")
	err = s.PutWindow(ctx, "s1", Writer{Gen: 5, Attempt: 1}, zombie)
	wantErr(t, "the late attempt with a new row", err, transcript.ErrFenced, "message 12")
	_, err = s.Window(ctx, "s1", 13, 13)
	wantErr(t, "the row the fenced write would have added", err, transcript.ErrMissing, "message 13")
}

func testZombieGen(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	base := Messages(20, 2, 50)
	mustPutWindow(t, s, "s1", Writer{Gen: 6, Attempt: 1}, withText(base, "gen 6"))
	// An older Step on its third attempt is still older.
	err := s.PutWindow(ctx, "s1", Writer{Gen: 5, Attempt: 3}, withText(base, "gen 5"))
	wantErr(t, "gen 5 attempt 3 after gen 6", err, transcript.ErrFenced, "message 20", "gen 6 attempt 1")
	diff(t, "after the older Step", withText(base, "gen 6"), mustWindow(t, s, "s1", 20, 21))
	// A newer Step replaces.
	mustPutWindow(t, s, "s1", Writer{Gen: 7, Attempt: 1}, withText(base, "gen 7"))
	diff(t, "after the newer Step", withText(base, "gen 7"), mustWindow(t, s, "s1", 20, 21))
}

// testConcurrentAttempts races a zombie attempt against its retry on the
// same rows: whatever the order, the retry's rows are what stays.
func testConcurrentAttempts(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	base := Messages(1, 8, 200)
	newer, older := withText(base, "attempt 2"), withText(base, "attempt 1")
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for _, w := range []struct {
		writer Writer
		msgs   []Message
	}{{Writer{Gen: 3, Attempt: 2}, newer}, {Writer{Gen: 3, Attempt: 1}, older}} {
		wg.Go(func() {
			for range 20 {
				err := s.PutWindow(ctx, "s1", w.writer, w.msgs)
				if err != nil && (w.writer.Attempt == 2 || !errors.Is(err, transcript.ErrFenced)) {
					errs <- fmt.Errorf("%s: %w", w.writer, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	diff(t, "after the race", newer, mustWindow(t, s, "s1", 1, 8))
}

func testAtomicWrites(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	good := Messages(1, 3, 100)
	tooLarge := NewMessage(4, strings.Repeat("x", transcript.MaxMessageBytes))
	notUTF8 := NewMessage(4, "bad \xff byte")
	for _, tt := range []struct {
		name  string
		batch []Message
	}{
		{"too large", append(slices.Clone(good), tooLarge)},
		{"not UTF-8", append(slices.Clone(good), notUTF8)},
		{"out of order", append(slices.Clone(good), NewMessage(2, "again"))},
		{"zero sequence", append(slices.Clone(good), NewMessage(0, "zero"))},
	} {
		if err := s.PutWindow(ctx, "s1", Writer{Gen: 1, Attempt: 1}, tt.batch); err == nil {
			t.Errorf("%s: PutWindow succeeded", tt.name)
		}
		_, err := s.Window(ctx, "s1", 1, 1)
		wantErr(t, tt.name+": the first row of the failed write", err, transcript.ErrMissing)
	}
	// A write whose last row is fenced rolls back the rows it had
	// written before it.
	mustPutWindow(t, s, "s2", Writer{Gen: 5, Attempt: 2}, good[2:])
	err := s.PutWindow(ctx, "s2", Writer{Gen: 5, Attempt: 1}, withText(good, "zombie"))
	wantErr(t, "the write fenced at its last row", err, transcript.ErrFenced, "message 3 ")
	for seq := int64(1); seq <= 2; seq++ {
		_, err := s.Window(ctx, "s2", seq, seq)
		wantErr(t, fmt.Sprintf("row %d of the fenced write", seq), err, transcript.ErrMissing)
	}
	diff(t, "the row the fenced write met", good[2:], mustWindow(t, s, "s2", 3, 3))
	// A write of several rows lands whole.
	mustPutWindow(t, s, "s1", Writer{Gen: 1, Attempt: 1}, good)
	diff(t, "the good write", good, mustWindow(t, s, "s1", 1, 3))
}

func testPutWindowArguments(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	one := Messages(1, 1, 10)
	for _, tt := range []struct {
		name    string
		session string
		w       Writer
		msgs    []Message
	}{
		{"zero gen", "s1", Writer{Gen: 0, Attempt: 1}, one},
		{"zero attempt", "s1", Writer{Gen: 1, Attempt: 0}, one},
		{"empty session", "", Writer{Gen: 1, Attempt: 1}, one},
		{"session with NUL", "s\x001", Writer{Gen: 1, Attempt: 1}, one},
		{"session not UTF-8", "s\xff", Writer{Gen: 1, Attempt: 1}, one},
		{"session too long", strings.Repeat("s", transcript.MaxSessionIDBytes+1), Writer{Gen: 1, Attempt: 1}, one},
		{"negative sequence", "s1", Writer{Gen: 1, Attempt: 1}, []Message{NewMessage(-1, "x")}},
		{"repeated sequence", "s1", Writer{Gen: 1, Attempt: 1}, []Message{NewMessage(1, "x"), NewMessage(1, "y")}},
		{"decreasing", "s1", Writer{Gen: 1, Attempt: 1}, []Message{NewMessage(2, "x"), NewMessage(1, "y")}},
	} {
		err := s.PutWindow(ctx, tt.session, tt.w, tt.msgs)
		wantErr(t, tt.name, err, transcript.ErrInvalid)
	}
	if err := s.PutWindow(ctx, "s1", Writer{Gen: 1, Attempt: 1}, nil); err != nil {
		t.Errorf("PutWindow of no messages: %v, want a no-op", err)
	}
	// Sequences need not be consecutive within one write.
	mustPutWindow(t, s, "s1", Writer{Gen: 1, Attempt: 1}, []Message{NewMessage(1, "a"), NewMessage(3, "c")})
	mustPutWindow(t, s, "s1", Writer{Gen: 2, Attempt: 1}, []Message{NewMessage(2, "b")})
	diff(t, "rows from two writes", []Message{NewMessage(1, "a"), NewMessage(2, "b"), NewMessage(3, "c")}, mustWindow(t, s, "s1", 1, 3))
	// The longest session ID works.
	long := strings.Repeat("é", transcript.MaxSessionIDBytes/2)
	mustPutWindow(t, s, long, Writer{Gen: 1, Attempt: 1}, one)
	diff(t, "the longest session ID", one, mustWindow(t, s, long, 1, 1))
}

func testDeleteWindowThrough(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	a, b := Messages(1, 10, 50), Messages(1, 3, 50)
	mustPutWindow(t, s, "a", Writer{Gen: 1, Attempt: 1}, a)
	mustPutWindow(t, s, "b", Writer{Gen: 1, Attempt: 1}, b)
	n, err := s.DeleteWindowThrough(ctx, "a", 6)
	if err != nil || n != 6 {
		t.Fatalf("DeleteWindowThrough(a, 6) = %d, %v; want 6", n, err)
	}
	diff(t, "the rows after 6", a[6:], mustWindow(t, s, "a", 7, 10))
	_, err = s.Window(ctx, "a", 6, 10)
	wantErr(t, "Window over a deleted row", err, transcript.ErrMissing, "message 6 ")
	diff(t, "the other session", b, mustWindow(t, s, "b", 1, 3))
	if n, err := s.DeleteWindowThrough(ctx, "a", 6); err != nil || n != 0 {
		t.Errorf("DeleteWindowThrough(a, 6) again = %d, %v; want 0", n, err)
	}
	// A zombie writes a row the window had already moved out: an orphan,
	// which the next DeleteWindowThrough removes with the moved rows.
	mustPutWindow(t, s, "a", Writer{Gen: 1, Attempt: 1}, a[2:3])
	if n, err := s.DeleteWindowThrough(ctx, "a", 8); err != nil || n != 3 {
		t.Errorf("DeleteWindowThrough(a, 8) = %d, %v; want 3 (7, 8 and the orphan 3)", n, err)
	}
	diff(t, "the rows after 8", a[8:], mustWindow(t, s, "a", 9, 10))
	if n, err := s.DeleteWindowThrough(ctx, "nobody", 100); err != nil || n != 0 {
		t.Errorf("DeleteWindowThrough of an unknown session = %d, %v; want 0", n, err)
	}
}

func testChunksReadBack(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	first, second := Messages(1, 32, 500), Messages(33, 8, 500)
	ref := mustPutChunk(t, s, "s1", first)
	diff(t, "the first ref", refOf(first), ref)
	diff(t, "Chunk(1)", first, mustChunk(t, s, "s1", 1))
	ref2 := mustPutChunk(t, s, "s1", second)
	diff(t, "the second ref", refOf(second), ref2)
	diff(t, "Chunk(33)", second, mustChunk(t, s, "s1", 33))
	for _, tt := range []struct {
		from, to int64
		want     []transcript.ChunkRef
	}{
		{1, 40, []transcript.ChunkRef{ref, ref2}},
		{20, 33, []transcript.ChunkRef{ref, ref2}},
		{32, 32, []transcript.ChunkRef{ref}},
		{33, 33, []transcript.ChunkRef{ref2}},
		{40, 1 << 62, []transcript.ChunkRef{ref2}},
		{41, 100, nil},
		{10, 9, nil},
	} {
		got, err := s.Chunks(ctx, "s1", tt.from, tt.to)
		if err != nil {
			t.Errorf("Chunks(%d, %d): %v", tt.from, tt.to, err)
			continue
		}
		diff(t, fmt.Sprintf("Chunks(%d, %d)", tt.from, tt.to), tt.want, got)
	}
	_, err := s.Chunk(ctx, "s1", 2)
	wantErr(t, "Chunk(2), inside a chunk", err, transcript.ErrNotFound, "2")
	_, err = s.Chunk(ctx, "other", 1)
	wantErr(t, "Chunk of another session", err, transcript.ErrNotFound)
	// A single-message chunk.
	single := Messages(41, 1, 10)
	diff(t, "a chunk of one", refOf(single), mustPutChunk(t, s, "s1", single))
	diff(t, "Chunk(41)", single, mustChunk(t, s, "s1", 41))
}

func testChunkConflict(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	msgs := Messages(1, 10, 200)
	ref := mustPutChunk(t, s, "s1", msgs)
	// The same chunk again (a retried Step) is a no-op.
	again, err := s.PutChunk(ctx, "s1", slices.Clone(msgs))
	if err != nil {
		t.Fatalf("PutChunk of the same chunk again: %v", err)
	}
	diff(t, "the ref of the same chunk again", ref, again)
	for _, tt := range []struct {
		name  string
		msgs  []Message
		parts []string
	}{
		{"other text", withText(msgs, "other"), []string{"starting at 1"}},
		{"fewer messages", msgs[:9], []string{"starting at 1"}},
		{"more messages", Messages(1, 11, 200), []string{"starting at 1"}},
		{"overlapping start", Messages(5, 10, 200), []string{"1 to 10"}},
		{"inside", Messages(3, 2, 200), []string{"1 to 10"}},
		{"overlapping end", Messages(10, 1, 200), []string{"1 to 10"}},
	} {
		_, err := s.PutChunk(ctx, "s1", tt.msgs)
		wantErr(t, tt.name, err, transcript.ErrConflict, tt.parts...)
	}
	diff(t, "the stored chunk after the conflicts", msgs, mustChunk(t, s, "s1", 1))
	for _, tt := range []struct {
		name string
		msgs []Message
	}{
		{"empty", nil},
		{"not consecutive", []Message{NewMessage(20, "a"), NewMessage(22, "b")}},
		{"zero sequence", []Message{NewMessage(0, "a")}},
		{"not UTF-8", []Message{NewMessage(20, "\xc3")}},
	} {
		_, err := s.PutChunk(ctx, "s1", tt.msgs)
		wantErr(t, tt.name, err, transcript.ErrInvalid)
	}
	_, err = s.PutChunk(ctx, "", msgs)
	wantErr(t, "empty session", err, transcript.ErrInvalid)
}

// testChunkConcurrent puts the same chunk from two Steps at once (a zombie
// and its retry): both succeed with the same ref.
func testChunkConcurrent(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	for round := range 5 {
		msgs := Messages(int64(round*4+1), 4, 1000)
		refs := make([]transcript.ChunkRef, 4)
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i := range refs {
			wg.Go(func() { refs[i], errs[i] = s.PutChunk(ctx, "s1", msgs) })
		}
		wg.Wait()
		for i := range refs {
			if errs[i] != nil {
				t.Fatalf("round %d: PutChunk %d: %v", round, i, errs[i])
			}
			diff(t, fmt.Sprintf("round %d: ref %d", round, i), refOf(msgs), refs[i])
		}
		diff(t, "the chunk", msgs, mustChunk(t, s, "s1", msgs[0].Sequence))
	}
}

func testDeleteChunks(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	var refs []transcript.ChunkRef
	for first := int64(1); first <= 21; first += 10 {
		refs = append(refs, mustPutChunk(t, s, "a", Messages(first, 10, 100)))
	}
	otherRef := mustPutChunk(t, s, "b", Messages(1, 10, 100))
	got, err := s.DeleteChunks(ctx, "a", []int64{21, 99, 1, 5})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "the deleted refs", []transcript.ChunkRef{refs[0], refs[2]}, got)
	got, err = s.DeleteChunks(ctx, "a", []int64{21, 1})
	if err != nil || len(got) != 0 {
		t.Errorf("DeleteChunks again = %v, %v; want nothing", got, err)
	}
	if got, err := s.DeleteChunks(ctx, "a", nil); err != nil || len(got) != 0 {
		t.Errorf("DeleteChunks(nil) = %v, %v; want nothing", got, err)
	}
	_, err = s.Chunk(ctx, "a", 1)
	wantErr(t, "Chunk(1) after its delete", err, transcript.ErrNotFound)
	left, err := s.Chunks(ctx, "a", 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "the chunks left", refs[1:2], left)
	diff(t, "the other session's chunk", Messages(1, 10, 100), mustChunk(t, s, "b", 1))
	if l, err := s.Chunks(ctx, "b", 1, 100); err != nil || len(l) != 1 || l[0] != otherRef {
		t.Errorf("Chunks of the other session = %v, %v", l, err)
	}
	// A deleted chunk may be put again (the same content).
	diff(t, "the ref put again", refs[0], mustPutChunk(t, s, "a", Messages(1, 10, 100)))
}

func testBlobs(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	data := []byte("a large tool output <with> & \"quotes\" \x00\xff binary")
	sum := sha256.Sum256(data)
	wantRef := "sha256:" + hex.EncodeToString(sum[:])
	ref, err := s.PutBlob(ctx, "s1", data)
	if err != nil || ref != wantRef {
		t.Fatalf("PutBlob = %q, %v; want %q", ref, err, wantRef)
	}
	got, err := s.Blob(ctx, "s1", ref)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "Blob", data, got)
	if again, err := s.PutBlob(ctx, "s1", slices.Clone(data)); err != nil || again != ref {
		t.Errorf("PutBlob again = %q, %v; want %q", again, err, ref)
	}
	empty, err := s.PutBlob(ctx, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Blob(ctx, "s1", empty); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Blob of the empty blob = %q (nil %v), %v", got, got == nil, err)
	}
	_, err = s.Blob(ctx, "s2", ref)
	wantErr(t, "Blob of another session", err, transcript.ErrNotFound, ref)
	missing := "sha256:" + strings.Repeat("0", 64)
	_, err = s.Blob(ctx, "s1", missing)
	wantErr(t, "Blob never put", err, transcript.ErrNotFound)
	for _, bad := range []string{"", "sha256:", "md5:" + strings.Repeat("0", 64), "sha256:" + strings.Repeat("A", 64), "sha256:" + strings.Repeat("g", 64), wantRef + "0"} {
		_, err = s.Blob(ctx, "s1", bad)
		wantErr(t, fmt.Sprintf("Blob(%q)", bad), err, transcript.ErrInvalid)
	}
	_, err = s.PutBlob(ctx, "", data)
	wantErr(t, "PutBlob with an empty session", err, transcript.ErrInvalid)
}

// nextMicrosecond waits until the clock has moved past the microsecond of
// now (blobs are stamped in microseconds) and returns the new time.
func nextMicrosecond() time.Time {
	start := time.Now().UnixMicro()
	for {
		if now := time.Now(); now.UnixMicro() > start {
			return now
		}
	}
}

func testSweepBlobs(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	put := func(session, text string) string {
		t.Helper()
		ref, err := s.PutBlob(ctx, session, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	a, b, c, old := put("s1", "a"), put("s1", "b"), put("s1", "c"), put("s1", "put again later")
	otherA := put("s2", "a")
	cutoff := nextMicrosecond()
	d := put("s1", "d")
	put("s1", "put again later") // counts as stored now
	got, err := s.SweepBlobs(ctx, "s1", []string{b}, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "the swept blobs", slices.Sorted(slices.Values([]string{a, c})), got)
	for _, ref := range []string{a, c} {
		_, err := s.Blob(ctx, "s1", ref)
		wantErr(t, "a swept blob", err, transcript.ErrNotFound)
	}
	for _, ref := range []string{b, d, old} {
		if _, err := s.Blob(ctx, "s1", ref); err != nil {
			t.Errorf("a blob that was kept: %v", err)
		}
	}
	if _, err := s.Blob(ctx, "s2", otherA); err != nil {
		t.Errorf("the other session's blob with the same content: %v", err)
	}
	if got, err := s.SweepBlobs(ctx, "s1", []string{b}, cutoff); err != nil || len(got) != 0 {
		t.Errorf("SweepBlobs again = %v, %v; want nothing", got, err)
	}
	// Nothing kept, everything before a later cutoff.
	got, err = s.SweepBlobs(ctx, "s1", nil, nextMicrosecond())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "the second sweep", slices.Sorted(slices.Values([]string{b, d, old})), got)
	_, err = s.SweepBlobs(ctx, "s1", []string{"not a ref"}, cutoff)
	wantErr(t, "SweepBlobs with a malformed ref", err, transcript.ErrInvalid)
}

func testEncodedSizeHTML(t *testing.T, s transcript.Store) {
	const n = 3 << 19 // 1.5 MiB
	m := NewMessage(3, strings.Repeat("<", n))
	size := transcript.EncodedSize(m)
	if size < n || size > n+200 {
		t.Fatalf("EncodedSize of 1.5 MiB of '<' = %d, want about %d (HTML escaping would make it %d)", size, n, 6*n)
	}
	mustPutWindow(t, s, "s1", Writer{Gen: 1, Attempt: 1}, []Message{m})
	diff(t, "Window", []Message{m}, mustWindow(t, s, "s1", 3, 3))
	ref := mustPutChunk(t, s, "s1", []Message{m})
	if ref.Bytes != int64(size)+2 {
		t.Errorf("the chunk's Bytes = %d, want %d (the message and [])", ref.Bytes, size+2)
	}
	diff(t, "Chunk", []Message{m}, mustChunk(t, s, "s1", 3))
	// 7 MiB of '&' is under the 8 MiB cap (it would be 42 MiB escaped).
	big := NewMessage(4, strings.Repeat("&", 7<<20))
	mustPutWindow(t, s, "s1", Writer{Gen: 1, Attempt: 1}, []Message{big})
	if got := mustWindow(t, s, "s1", 4, 4); len(got) != 1 || got[0].Text != big.Text {
		t.Errorf("the 7 MiB message of '&' did not read back")
	}
}

// sized returns a message whose encoding is exactly size bytes.
func sized(t *testing.T, seq int64, size int) Message {
	t.Helper()
	m := Message{Sequence: seq, Role: pluginapi.RoleTool, ToolCallID: "call_1"}
	m.Text = strings.Repeat("y", size-transcript.EncodedSize(m))
	if got := transcript.EncodedSize(m); got != size {
		t.Fatalf("sized(%d): EncodedSize = %d", size, got)
	}
	return m
}

// sizedRun returns n messages from sequence from whose encodings are size
// bytes each.
func sizedRun(t *testing.T, from int64, n, size int) []Message {
	out := make([]Message, n)
	for i := range out {
		out[i] = sized(t, from+int64(i), size)
	}
	return out
}

func testCaps(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	const limit = transcript.MaxMessageBytes
	atCap, overCap := sized(t, 2, limit), sized(t, 2, limit+1)
	first := Messages(1, 1, 10)
	w := Writer{Gen: 1, Attempt: 1}

	err := s.PutWindow(ctx, "s1", w, append(slices.Clone(first), overCap))
	wantErr(t, "PutWindow over the cap", err, transcript.ErrTooLarge, "message 2 ", fmt.Sprint(limit+1), fmt.Sprint(limit))
	_, err = s.Window(ctx, "s1", 1, 1)
	wantErr(t, "the other row of the refused write", err, transcript.ErrMissing)
	mustPutWindow(t, s, "s1", w, append(slices.Clone(first), atCap))
	diff(t, "a message at the cap", append(slices.Clone(first), atCap), mustWindow(t, s, "s1", 1, 2))

	_, err = s.PutChunk(ctx, "s1", append(slices.Clone(first), overCap))
	wantErr(t, "PutChunk with a message over the cap", err, transcript.ErrTooLarge, "message 2 ", fmt.Sprint(limit+1))
	// Two messages under the cap that together are over the chunk cap.
	half := []Message{sized(t, 10, 5<<20), sized(t, 11, 5<<20)}
	_, err = s.PutChunk(ctx, "s1", half)
	wantErr(t, "PutChunk of two 5 MiB messages", err, transcript.ErrTooLarge, "10 to 11", fmt.Sprint(transcript.MaxChunkBytes))
	if l, err := s.Chunks(ctx, "s1", 1, 100); err != nil || len(l) != 0 {
		t.Errorf("chunks after the refused puts = %v, %v; want none", l, err)
	}
	// A message at the cap is a chunk of its own.
	ref := mustPutChunk(t, s, "s1", []Message{atCap})
	if ref.Bytes != limit+2 {
		t.Errorf("the chunk of the message at the cap has Bytes %d, want %d", ref.Bytes, limit+2)
	}
	diff(t, "the chunk at the cap", []Message{atCap}, mustChunk(t, s, "s1", 2))

	_, err = s.PutBlob(ctx, "s1", make([]byte, limit+1))
	wantErr(t, "PutBlob over the cap", err, transcript.ErrTooLarge, fmt.Sprint(limit+1), fmt.Sprint(limit))
	blob := make([]byte, limit)
	blob[0], blob[limit-1] = 'a', 'z'
	ref2, err := s.PutBlob(ctx, "s1", blob)
	if err != nil {
		t.Fatalf("PutBlob at the cap: %v", err)
	}
	if got, err := s.Blob(ctx, "s1", ref2); err != nil || len(got) != limit || got[0] != 'a' || got[limit-1] != 'z' {
		t.Errorf("the blob at the cap did not read back: %d bytes, %v", len(got), err)
	}
}

func testSplit(t *testing.T, s transcript.Store) {
	varied := Messages(1, 100, 0)
	for i := range varied {
		varied[i].Text += strings.Repeat("z", (i*977)%3000) // 0 to 3 KB, spread
	}
	varied[40].Text = strings.Repeat("<", 20000) // larger than maxBytes alone
	for _, tt := range []struct {
		name           string
		msgs           []Message
		size, maxBytes int
		wantCounts     []int // nil: only check the limits
	}{
		{"count limit", Messages(1, 100, 10), 32, 1 << 20, []int{32, 32, 32, 4}},
		{"exact multiple", Messages(1, 64, 10), 32, 1 << 20, []int{32, 32}},
		{"defaults", Messages(1, 70, 10), 0, 0, []int{32, 32, 6}},
		{"one each", Messages(1, 3, 10), 1, 1 << 20, []int{1, 1, 1}},
		{"byte limit", varied, 32, 8192, nil},
		{"tiny byte limit", Messages(1, 5, 100), 32, 1, []int{1, 1, 1, 1, 1}},
		// Messages of 1000 bytes: three make [m,m,m], 3*1000+4 bytes.
		{"three fit exactly", sizedRun(t, 1, 7, 1000), 32, 3004, []int{3, 3, 1}},
		{"one byte short of three", sizedRun(t, 1, 7, 1000), 32, 3003, []int{2, 2, 2, 1}},
		{"nothing", nil, 32, 1 << 20, []int{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chunks := transcript.Split(tt.msgs, tt.size, tt.maxBytes)
			again := transcript.Split(slices.Clone(tt.msgs), tt.size, tt.maxBytes)
			diff(t, "a second Split", chunks, again)
			size, maxBytes := tt.size, tt.maxBytes
			if size < 1 {
				size = transcript.DefaultChunkSize
			}
			if maxBytes < 1 {
				maxBytes = transcript.DefaultChunkMaxBytes
			}
			var counts []int
			var joined []Message
			for i, c := range chunks {
				counts = append(counts, len(c))
				joined = append(joined, c...)
				b := chunkBytes(c)
				if len(c) > size || len(c) > 1 && b > int64(maxBytes) {
					t.Errorf("chunk %d: %d messages, %d bytes; limits %d and %d", i, len(c), b, size, maxBytes)
				}
				// Each chunk is as full as the limits allow.
				if i+1 < len(chunks) && len(c) < size && chunkBytes(append(slices.Clone(c), chunks[i+1][0])) <= int64(maxBytes) {
					t.Errorf("chunk %d ended early: the next message fits", i)
				}
			}
			diff(t, "the chunks joined", tt.msgs, joined)
			if tt.wantCounts != nil {
				diff(t, "messages per chunk", tt.wantCounts, counts)
			}
			// The store agrees with Split on the bytes.
			session := "split-" + tt.name
			for i, c := range chunks {
				ref := mustPutChunk(t, s, session, c)
				if ref.Bytes != chunkBytes(c) || len(c) > 1 && ref.Bytes > int64(maxBytes) {
					t.Errorf("chunk %d stored with Bytes %d; Split counted %d, limit %d", i, ref.Bytes, chunkBytes(c), maxBytes)
				}
			}
		})
	}
	// The oversized message is alone.
	for _, c := range transcript.Split(varied, 32, 8192) {
		if slices.ContainsFunc(c, func(m Message) bool { return m.Sequence == 41 }) && len(c) != 1 {
			t.Errorf("the 20 KB message shares a chunk of %d messages", len(c))
		}
	}
	// maxBytes is capped at MaxChunkBytes: 3 messages of 3 MiB never share.
	bigs := []Message{sized(t, 1, 3<<20), sized(t, 2, 3<<20), sized(t, 3, 3<<20)}
	for _, c := range transcript.Split(bigs, 32, 64<<20) {
		if chunkBytes(c) > transcript.MaxChunkBytes {
			t.Errorf("a chunk of %d bytes with maxBytes over the cap", chunkBytes(c))
		}
	}
}

func testDeleteSession(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	fill := func(session string) (string, transcript.ChunkRef) {
		mustPutChunk(t, s, session, Messages(1, 10, 100))
		ref := mustPutChunk(t, s, session, Messages(11, 10, 100))
		mustPutWindow(t, s, session, Writer{Gen: 1, Attempt: 1}, Messages(21, 5, 100))
		if _, err := s.PutBlob(ctx, session, []byte("one")); err != nil {
			t.Fatal(err)
		}
		blob, err := s.PutBlob(ctx, session, []byte("two"))
		if err != nil {
			t.Fatal(err)
		}
		return blob, ref
	}
	blobA, _ := fill("a")
	blobB, refB := fill("b")
	d, err := s.DeleteSession(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "what DeleteSession deleted", transcript.Deleted{WindowRows: 5, Chunks: 2, Blobs: 2}, d)
	_, err = s.Window(ctx, "a", 21, 25)
	wantErr(t, "the deleted session's window", err, transcript.ErrMissing)
	_, err = s.Chunk(ctx, "a", 1)
	wantErr(t, "the deleted session's chunk", err, transcript.ErrNotFound)
	_, err = s.Blob(ctx, "a", blobA)
	wantErr(t, "the deleted session's blob", err, transcript.ErrNotFound)
	if l, err := s.Chunks(ctx, "a", 1, 100); err != nil || len(l) != 0 {
		t.Errorf("the deleted session's chunks = %v, %v", l, err)
	}
	diff(t, "the other session's window", Messages(21, 5, 100), mustWindow(t, s, "b", 21, 25))
	diff(t, "the other session's chunk", Messages(11, 10, 100), mustChunk(t, s, "b", refB.First))
	if _, err := s.Blob(ctx, "b", blobB); err != nil {
		t.Errorf("the other session's blob: %v", err)
	}
	if d, err := s.DeleteSession(ctx, "a"); err != nil || d != (transcript.Deleted{}) {
		t.Errorf("DeleteSession again = %+v, %v; want nothing", d, err)
	}
}

func testIsolation(t *testing.T, s transcript.Store) {
	// The same sequences, chunks and writers in two sessions, with other
	// content: no fencing, no conflict, each reads its own.
	a, b := withText(Messages(1, 4, 50), "a"), withText(Messages(1, 4, 50), "b")
	mustPutWindow(t, s, "a", Writer{Gen: 9, Attempt: 1}, a)
	mustPutWindow(t, s, "b", Writer{Gen: 1, Attempt: 1}, b)
	mustPutChunk(t, s, "a", a)
	mustPutChunk(t, s, "b", b)
	diff(t, "window a", a, mustWindow(t, s, "a", 1, 4))
	diff(t, "window b", b, mustWindow(t, s, "b", 1, 4))
	diff(t, "chunk a", a, mustChunk(t, s, "a", 1))
	diff(t, "chunk b", b, mustChunk(t, s, "b", 1))
	// Session IDs are compared exactly.
	_, err := s.Window(t.Context(), "A", 1, 1)
	wantErr(t, "session A", err, transcript.ErrMissing)
}

// testConcurrentSessions runs a session's life in several goroutines at
// once, one session each: Steps write window rows, move the oldest into
// chunks and delete the moved rows.
func testConcurrentSessions(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	const sessions, steps, perStep, window = 6, 24, 3, 8
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		session := fmt.Sprintf("session-%d", i)
		wg.Go(func() {
			err := func() error {
				var next, moved int64 = 1, 0
				for gen := int64(1); gen <= steps; gen++ {
					msgs := withText(Messages(next, perStep, 300), session)
					if err := s.PutWindow(ctx, session, Writer{Gen: gen, Attempt: 1}, msgs); err != nil {
						return err
					}
					next += perStep
					if next-1-moved > window {
						rows, err := s.Window(ctx, session, moved+1, next-1-window)
						if err != nil {
							return err
						}
						for _, c := range transcript.Split(rows, 4, 1<<20) {
							if _, err := s.PutChunk(ctx, session, c); err != nil {
								return err
							}
						}
						moved = next - 1 - window
						if _, err := s.DeleteWindowThrough(ctx, session, moved); err != nil {
							return err
						}
					}
				}
				return nil
			}()
			if err != nil {
				errs <- fmt.Errorf("%s: %w", session, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const total = steps * perStep
	for i := range sessions {
		session := fmt.Sprintf("session-%d", i)
		diff(t, session, withText(Messages(1, total, 300), session), readAll(t, s, session, total))
	}
}

// readAll reads a session's transcript of n messages: every chunk, then
// the window rows after the last chunk.
func readAll(t *testing.T, s transcript.Store, session string, n int64) []Message {
	t.Helper()
	refs, err := s.Chunks(t.Context(), session, 1, n)
	if err != nil {
		t.Fatal(err)
	}
	var out []Message
	for _, ref := range refs {
		if ref.First != int64(len(out))+1 {
			t.Fatalf("%s: chunk %d follows message %d", session, ref.First, len(out))
		}
		out = append(out, mustChunk(t, s, session, ref.First)...)
	}
	return append(out, mustWindow(t, s, session, int64(len(out))+1, n)...)
}

func testLargeTranscript(t *testing.T, s transcript.Store) {
	const n, windowSize = 5000, 64
	msgs := Messages(1, n, 2048)
	var bytes int64
	for _, c := range transcript.Split(msgs[:n-windowSize], transcript.DefaultChunkSize, transcript.DefaultChunkMaxBytes) {
		bytes += mustPutChunk(t, s, "big", c).Bytes
	}
	mustPutWindow(t, s, "big", Writer{Gen: 1, Attempt: 1}, msgs[n-windowSize:])
	got := readAll(t, s, "big", n)
	if len(got) != n {
		t.Fatalf("read %d messages, want %d", len(got), n)
	}
	diff(t, "the transcript", msgs, got)
	t.Logf("%d messages, %d bytes in chunks", n, bytes)
}

func testSpendLedger(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	now := time.Now()
	charge := func(key, agent, token string, at time.Time, sp transcript.Spend) bool {
		t.Helper()
		added, err := s.Charge(ctx, transcript.Charge{Key: key, Agent: agent, Token: token, Session: "s-" + key, At: at, Spend: sp})
		if err != nil {
			t.Fatalf("Charge(%s): %v", key, err)
		}
		return added
	}
	one := transcript.Spend{ModelCalls: 1, InputTokens: 100, OutputTokens: 10, CostMicros: 250}
	// An old charge is pruned by the first charge after it.
	charge("old", "support", "app", now.Add(-3*transcript.SpendRetention), one)
	if !charge("r1/a/1", "support", "app", now.Add(-2*time.Hour), one) {
		t.Error("a new key was not added")
	}
	if charge("r1/a/1", "support", "app", now.Add(-2*time.Hour), one) {
		t.Error("charging a key again added it again")
	}
	charge("r1/a/2", "support", "", now.Add(-time.Minute), one)
	charge("r2/a/1", "billing", "app", now.Add(-time.Minute), transcript.Spend{ModelCalls: 1, InputTokens: 5, OutputTokens: 5, CostMicros: 7})
	spent := func(scope transcript.SpendScope, since time.Time) transcript.Spend {
		t.Helper()
		sp, err := s.Spent(ctx, scope, since)
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	diff(t, "the agent's spend since a day ago", transcript.Spend{ModelCalls: 2, InputTokens: 200, OutputTokens: 20, CostMicros: 500},
		spent(transcript.SpendScope{Agent: "support"}, now.Add(-24*time.Hour)))
	diff(t, "the agent's spend in the last hour", one, spent(transcript.SpendScope{Agent: "support"}, now.Add(-time.Hour)))
	diff(t, "the token's spend across agents", transcript.Spend{ModelCalls: 2, InputTokens: 105, OutputTokens: 15, CostMicros: 257},
		spent(transcript.SpendScope{Token: "app"}, now.Add(-24*time.Hour)))
	diff(t, "the pruned charge", transcript.Spend{ModelCalls: 2, InputTokens: 200, OutputTokens: 20, CostMicros: 500},
		spent(transcript.SpendScope{Agent: "support"}, time.Time{}))
	diff(t, "an agent without charges", transcript.Spend{}, spent(transcript.SpendScope{Agent: "nobody"}, time.Time{}))

	if _, err := s.Spent(ctx, transcript.SpendScope{Agent: "a", Token: "b"}, now); !errors.Is(err, transcript.ErrInvalid) {
		t.Errorf("a scope with both names: %v, want ErrInvalid", err)
	}
	if _, err := s.Charge(ctx, transcript.Charge{Agent: "a", Session: "s"}); !errors.Is(err, transcript.ErrInvalid) {
		t.Errorf("a charge without a key: %v, want ErrInvalid", err)
	}
	if _, err := s.Charge(ctx, transcript.Charge{Key: "k", Agent: "a", Session: "s", Spend: transcript.Spend{CostMicros: -1}}); !errors.Is(err, transcript.ErrInvalid) {
		t.Errorf("a negative charge: %v, want ErrInvalid", err)
	}
}

// parentFor stores a session's life: chunks 1..10 and 11..20, window rows
// 21..25.
func parentFor(t *testing.T, s transcript.Store, session string) []Message {
	all := withText(Messages(1, 25, 60), session)
	mustPutChunk(t, s, session, all[0:10])
	mustPutChunk(t, s, session, all[10:20])
	mustPutWindow(t, s, session, Writer{Gen: 3, Attempt: 1}, all[20:25])
	return all
}

func mustFork(t *testing.T, s transcript.Store, fork, parent string, at int64) transcript.ForkResult {
	t.Helper()
	r, err := s.Fork(t.Context(), fork, parent, at)
	if err != nil {
		t.Fatalf("Fork(%q, %q, %d): %v", fork, parent, at, err)
	}
	return r
}

// readThrough reads a session's messages from..last the way a Step does.
func readThrough(t *testing.T, s transcript.Store, session string, from, windowFirst, last int64) []Message {
	t.Helper()
	got, err := transcript.Read(t.Context(), s, session, from, windowFirst, last)
	if err != nil {
		t.Fatalf("Read(%q, %d, %d, %d): %v", session, from, windowFirst, last, err)
	}
	return got
}

func testForkShares(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	all := parentFor(t, s, "p")
	r := mustFork(t, s, "f", "p", 23)
	diff(t, "the fork record", transcript.Fork{Session: "f", Parent: "p", Root: "p", AtSequence: 23, From: 1, Through: 20}, r.Fork)
	diff(t, "the copied tail", all[20:23], r.Tail)
	if r.Fork.Created.IsZero() {
		t.Error("the fork has no creation time")
	}
	// The fork reads 1..23: the parent's chunks and its own rows.
	diff(t, "the fork's transcript", all[:23], readThrough(t, s, "f", 1, 21, 23))
	diff(t, "the fork's chunks", []transcript.ChunkRef{refOf(all[0:10]), refOf(all[10:20])}, mustChunks(t, s, "f", 1, 100))
	// Both go on: the fork's own messages after 23 and the parent's are
	// independent.
	mine := withText(Messages(24, 6, 60), "f")
	mustPutWindow(t, s, "f", Writer{Gen: 1, Attempt: 1}, mine)
	mustPutChunk(t, s, "f", append(slices.Clone(all[20:23]), mine[:4]...))
	diff(t, "the fork after its own roll", append(slices.Clone(all[:23]), mine...), readThrough(t, s, "f", 1, 28, 29))
	diff(t, "the parent", all, readThrough(t, s, "p", 1, 21, 25))
	if got, err := s.ForkOf(ctx, "f"); err != nil || got != r.Fork {
		t.Errorf("ForkOf(f) = %+v, %v; want %+v", got, err, r.Fork)
	}
	_, err := s.ForkOf(ctx, "p")
	wantErr(t, "ForkOf of a session that is not a fork", err, transcript.ErrNotFound, `"p"`)
}

func mustChunks(t *testing.T, s transcript.Store, session string, from, to int64) []transcript.ChunkRef {
	t.Helper()
	refs, err := s.Chunks(t.Context(), session, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

func testForkInsideChunk(t *testing.T, s transcript.Store) {
	all := parentFor(t, s, "p")
	// The fork point inside the second chunk: the first is shared, 11..15
	// are copied from the second.
	r := mustFork(t, s, "f", "p", 15)
	diff(t, "the fork record", transcript.Fork{Session: "f", Parent: "p", Root: "p", AtSequence: 15, From: 1, Through: 10}, r.Fork)
	diff(t, "the copied tail", all[10:15], r.Tail)
	diff(t, "the fork's transcript", all[:15], readThrough(t, s, "f", 1, 11, 15))
	// A fork point before any chunk ends shares nothing.
	r = mustFork(t, s, "g", "p", 4)
	diff(t, "a fork in the first chunk", transcript.Fork{Session: "g", Parent: "p", Root: "p", AtSequence: 4, From: 1}, r.Fork)
	diff(t, "its transcript", all[:4], readThrough(t, s, "g", 1, 1, 4))
	// A fork before the first message (an edit of the first message)
	// holds none, and is still a branch of the parent.
	r = mustFork(t, s, "h", "p", 0)
	diff(t, "a fork at 0", transcript.Fork{Session: "h", Parent: "p", Root: "p", AtSequence: 0, From: 1}, r.Fork)
	if len(r.Tail) != 0 || len(mustChunks(t, s, "h", 1, 100)) != 0 {
		t.Errorf("a fork at 0 holds %v and %v", r.Tail, mustChunks(t, s, "h", 1, 100))
	}
}

func testForkIdempotent(t *testing.T, s transcript.Store) {
	parentFor(t, s, "p")
	first := mustFork(t, s, "f", "p", 22)
	again := mustFork(t, s, "f", "p", 22)
	diff(t, "a fork made again", first, again)
	_, err := s.Fork(t.Context(), "f", "p", 21)
	wantErr(t, "the same fork at another point", err, transcript.ErrConflict, "already a fork")
	_, err = s.Fork(t.Context(), "f", "q", 22)
	wantErr(t, "the same fork of another parent", err, transcript.ErrConflict, "already a fork")
}

func testForkOfFork(t *testing.T, s transcript.Store) {
	all := parentFor(t, s, "p")
	mustFork(t, s, "f", "p", 25)
	mine := withText(Messages(26, 15, 60), "f")
	mustPutWindow(t, s, "f", Writer{Gen: 1, Attempt: 1}, mine)
	// The fork rolls 21..30 (copied rows and its own) into its own chunk.
	f := append(slices.Clone(all), mine...)
	mustPutChunk(t, s, "f", f[20:30])
	if _, err := s.DeleteWindowThrough(t.Context(), "f", 30); err != nil {
		t.Fatal(err)
	}
	// A fork of the fork shares the parent's chunks and the fork's.
	r := mustFork(t, s, "g", "f", 35)
	diff(t, "the second fork", transcript.Fork{Session: "g", Parent: "f", Root: "p", AtSequence: 35, From: 1, Through: 30}, r.Fork)
	diff(t, "its tail", f[30:35], r.Tail)
	diff(t, "its transcript", f[:35], readThrough(t, s, "g", 1, 31, 35))
	branches, err := s.Branches(t.Context(), "p", 10)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range branches {
		names = append(names, b.Session)
	}
	diff(t, "the branches of p", []string{"f", "g"}, names)
	if b, err := s.Branches(t.Context(), "p", 1); err != nil || len(b) != 1 {
		t.Errorf("Branches with limit 1 = %d, %v", len(b), err)
	}
	_, err = s.Branches(t.Context(), "p", 0)
	wantErr(t, "Branches with limit 0", err, transcript.ErrInvalid)
}

func testForkSurvivesDeletes(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	all := parentFor(t, s, "p")
	mustFork(t, s, "f", "p", 25)
	// The parent's retention: its first chunk goes for the parent only.
	got, err := s.DeleteChunks(ctx, "p", []int64{1})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "what retention deleted", []transcript.ChunkRef{refOf(all[0:10])}, got)
	diff(t, "the parent's chunks after retention", []transcript.ChunkRef{refOf(all[10:20])}, mustChunks(t, s, "p", 1, 100))
	_, err = s.Chunk(ctx, "p", 1)
	wantErr(t, "the parent's retired chunk", err, transcript.ErrNotFound)
	diff(t, "the fork after the parent's retention", all, readThrough(t, s, "f", 1, 21, 25))
	// Deleting the parent leaves the fork whole.
	if _, err := s.DeleteSession(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	diff(t, "the fork after the parent was deleted", all, readThrough(t, s, "f", 1, 21, 25))
	if refs := mustChunks(t, s, "p", 1, 100); len(refs) != 0 {
		t.Errorf("the deleted parent still lists chunks %v", refs)
	}
	// Its ID cannot hold new chunks where retired ones are kept.
	_, err = s.PutChunk(ctx, "p", all[0:10])
	wantErr(t, "a chunk over a retired one", err, transcript.ErrConflict, "fork shares")
	// Deleting the fork removes the retired chunks: the ID is free again.
	if _, err := s.DeleteSession(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	mustPutChunk(t, s, "p", all[0:10])
	// A chunk nobody shares is deleted at once.
	parentFor(t, s, "q")
	if got, err := s.DeleteChunks(ctx, "q", []int64{1}); err != nil || len(got) != 1 {
		t.Fatalf("DeleteChunks = %v, %v", got, err)
	}
	if got, err := s.DeleteChunks(ctx, "q", []int64{1}); err != nil || len(got) != 0 {
		t.Errorf("DeleteChunks again = %v, %v; want nothing", got, err)
	}
}

func testForkRefusals(t *testing.T, s transcript.Store) {
	ctx := t.Context()
	all := parentFor(t, s, "p")
	_, err := s.Fork(ctx, "f", "p", 26)
	wantErr(t, "a fork past the parent's last message", err, transcript.ErrMissing, "26")
	_, err = s.Fork(ctx, "f", "p", -1)
	wantErr(t, "a fork at -1", err, transcript.ErrInvalid)
	_, err = s.Fork(ctx, "p", "p", 3)
	wantErr(t, "a fork into itself", err, transcript.ErrInvalid)
	mustPutWindow(t, s, "used", Writer{Gen: 1, Attempt: 1}, all[:1])
	_, err = s.Fork(ctx, "used", "p", 3)
	wantErr(t, "a fork into a session with messages", err, transcript.ErrConflict, "already holds messages")
	// Nothing was written by the refusals.
	if _, err := s.ForkOf(ctx, "f"); !errors.Is(err, transcript.ErrNotFound) {
		t.Errorf("a refused fork was recorded: %v", err)
	}
	if w, err := s.Window(ctx, "f", 21, 21); err == nil {
		t.Errorf("a refused fork wrote rows: %v", w)
	}
	// A parent whose retention deleted its oldest chunk (nobody shared
	// it) forks from the first message it still has.
	if _, err := s.DeleteChunks(ctx, "p", []int64{1}); err != nil {
		t.Fatal(err)
	}
	r := mustFork(t, s, "h", "p", 22)
	diff(t, "a fork after the parent's retention", transcript.Fork{Session: "h", Parent: "p", Root: "p", AtSequence: 22, From: 11, Through: 20}, r.Fork)
	diff(t, "its transcript", all[10:22], readThrough(t, s, "h", 11, 21, 22))
	// The fork point inside the first chunk left: its messages from the
	// chunk's first on are copied.
	r = mustFork(t, s, "i", "p", 15)
	diff(t, "a fork inside the first chunk left", transcript.Fork{Session: "i", Parent: "p", Root: "p", AtSequence: 15, From: 11, Through: 10}, r.Fork)
	diff(t, "its tail", all[10:15], r.Tail)
	diff(t, "its transcript", all[10:15], readThrough(t, s, "i", 11, 11, 15))
	// No chunk left at all: the window rows from the first one on.
	if _, err := s.DeleteChunks(ctx, "p", []int64{11}); err != nil {
		t.Fatal(err)
	}
	r = mustFork(t, s, "j", "p", 23)
	diff(t, "a fork of the window alone", transcript.Fork{Session: "j", Parent: "p", Root: "p", AtSequence: 23, From: 21, Through: 20}, r.Fork)
	diff(t, "its tail", all[20:23], r.Tail)
	_, err = s.Fork(ctx, "k", "p", 15)
	wantErr(t, "a fork at a deleted message", err, transcript.ErrMissing, "15")
}
