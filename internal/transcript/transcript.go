package transcript

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Message is one stored message of a session's transcript.
type Message = pluginapi.Message

// Limits and defaults. Sizes count the bytes of the JSON encoding the store
// writes (see EncodedSize), not string lengths.
const (
	// DefaultWindowSize is the default message_window_size: how many of the
	// newest messages the workflow keeps as window rows.
	DefaultWindowSize = 64
	// DefaultChunkSize is the default message_chunk_size: the most messages
	// one chunk holds.
	DefaultChunkSize = 32
	// DefaultChunkMaxBytes is the default message_chunk_max_bytes.
	DefaultChunkMaxBytes = 1 << 20
	// MaxChunkBytes is the largest message_chunk_max_bytes. PutChunk
	// refuses a chunk of several messages whose encoding is larger.
	MaxChunkBytes = 8 << 20
	// MaxMessageBytes is the hard cap on one message's encoding (its text
	// and its framework item together), and on one blob. Every write
	// refuses a larger one with ErrTooLarge. It leaves room for a text at
	// the senders' limit (8 MiB, wire.MaxMessageBytes) and a runner's
	// item that repeats it with escapes.
	MaxMessageBytes = 32 << 20
	// DefaultRetainedMessageLimit is the default retained_message_limit.
	DefaultRetainedMessageLimit = 1000
	// MaxSessionIDBytes bounds a session ID (Temporal's workflow ID limit).
	MaxSessionIDBytes = 1000
)

// The errors of the store. Each method wraps them with the session and the
// sequence concerned; test with errors.Is.
var (
	// ErrNotFound means a chunk or a blob that was asked for is not
	// stored (never put, or deleted).
	ErrNotFound = errors.New("transcript: not found")
	// ErrMissing means Window found a hole: a sequence in the asked range
	// has no row. The error names the first missing sequence. It is never
	// expected: the workflow only asks for rows its committed Steps wrote.
	ErrMissing = errors.New("transcript: missing message")
	// ErrConflict means PutChunk was given a chunk whose first sequence is
	// stored with different content, or that overlaps another stored
	// chunk: a bug, never a retry.
	ErrConflict = errors.New("transcript: conflicting chunk")
	// ErrFenced means PutWindow would replace a row that a newer writer
	// (a later attempt or a later Step) stored. Nothing was written; the
	// caller is a zombie whose result the workflow will not commit.
	ErrFenced = errors.New("transcript: fenced by a newer writer")
	// ErrTooLarge means one message, a chunk of several messages, or a
	// blob is over its cap (MaxMessageBytes, MaxChunkBytes). Nothing was
	// written; the error names the sequence (or blob) and both sizes.
	ErrTooLarge = errors.New("transcript: too large")
	// ErrInvalid means the arguments break the method's contract (an empty
	// session ID, sequences out of order, a zero Writer, a malformed blob
	// reference, text that is not UTF-8): a bug in the caller.
	ErrInvalid = errors.New("transcript: invalid argument")
	// ErrCorrupt means stored data does not decode as the store wrote it:
	// a damaged database or a writer that does not follow this package.
	ErrCorrupt = errors.New("transcript: corrupt data")
)

// Writer identifies the Step attempt that writes window rows. Gen is a
// per-session counter that the workflow increments for every Step it
// schedules that stores messages (it must keep growing across
// continue-as-new); Attempt is the Step's attempt (1, 2, ...). Writers are
// ordered by Gen, then Attempt.
type Writer struct {
	Gen     int64
	Attempt int32
}

// Less reports whether w is older than o: a smaller Gen, or the same Gen
// and a smaller Attempt.
func (w Writer) Less(o Writer) bool {
	return w.Gen < o.Gen || w.Gen == o.Gen && w.Attempt < o.Attempt
}

// String returns "gen G attempt A".
func (w Writer) String() string { return fmt.Sprintf("gen %d attempt %d", w.Gen, w.Attempt) }

// ChunkRef describes one stored chunk: its first and last sequence, how many
// messages it holds (Last-First+1) and the size of its encoding. The
// workflow keeps the refs of a session's chunks as its index.
type ChunkRef struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// Deleted counts what DeleteSession removed.
type Deleted struct {
	WindowRows int64
	Chunks     int64
	Blobs      int64
}

// Store holds the messages of every session outside the workflow: window
// rows, chunks and blobs, each keyed by session. A Store is safe for
// concurrent use; methods on different sessions never interfere. Every
// method may be called again with the same arguments after a failure (a
// retried Step): puts are idempotent, deletes delete what is left.
//
// Lifecycle of one session's messages (see the package documentation):
//
//   - PutWindow is called by the Step that produced messages, before the
//     Step returns; the workflow's commit of the Step's result is what
//     makes them part of the session.
//   - PutChunk is called by a Step that moves the oldest window messages
//     into chunks (they are read from Window first); the workflow commits
//     the returned refs, then DeleteWindowThrough removes the moved rows.
//   - Window, Chunks and Chunk are called by Steps that need the
//     transcript (the next model call) and by readers of old pages.
//   - DeleteChunks is called for retention, SweepBlobs for blobs that no
//     committed message references, DeleteSession when a session is
//     removed for good.
type Store interface {
	// PutWindow stores msgs as window rows, one row per sequence,
	// atomically: all of them or none. Sequences must be >= 1 and
	// strictly increasing. A stored row is replaced only when w is not
	// older than the Writer that stored it, so a retried attempt rewrites
	// its own rows; when any row of msgs is held by a newer Writer, nothing
	// is written and the error wraps ErrFenced. A message over
	// MaxMessageBytes fails with ErrTooLarge before anything is written.
	PutWindow(ctx context.Context, session string, w Writer, msgs []Message) error
	// Window returns the rows with sequences in [from, to], in order, or
	// an error wrapping ErrMissing that names the first sequence without a
	// row. It returns nothing when to < from.
	Window(ctx context.Context, session string, from, to int64) ([]Message, error)
	// DeleteWindowThrough deletes the window rows with sequence <= seq:
	// rows that committed chunks now hold, and orphans that a crashed or
	// zombie Step left. It returns how many rows it deleted.
	DeleteWindowThrough(ctx context.Context, session string, seq int64) (int64, error)

	// PutChunk stores msgs, consecutive sequences, as one immutable chunk
	// keyed by its first sequence. Putting the same chunk again is a
	// no-op that returns the same ref; a chunk whose first sequence is
	// stored with other content, or that overlaps another stored chunk,
	// fails with ErrConflict. A message over MaxMessageBytes, or several
	// messages whose encoding is over MaxChunkBytes, fail with ErrTooLarge.
	// Cut chunks with Split.
	PutChunk(ctx context.Context, session string, msgs []Message) (ChunkRef, error)
	// Chunk returns the messages of the chunk that starts at first, or
	// ErrNotFound.
	Chunk(ctx context.Context, session string, first int64) ([]Message, error)
	// Chunks lists the stored chunks that hold any sequence in [from, to],
	// in order of their first sequence: a fork's own and those it shares.
	Chunks(ctx context.Context, session string, from, to int64) ([]ChunkRef, error)
	// DeleteChunks deletes the chunks that start at the given sequences
	// (retention) and returns the refs of those it deleted; firsts that
	// are not stored are skipped. A chunk a fork shares is retired rather
	// than deleted: the session no longer sees it, the fork still does.
	DeleteChunks(ctx context.Context, session string, firsts []int64) ([]ChunkRef, error)

	// PutBlob stores data by its content and returns its reference,
	// "sha256:" and the lowercase hex SHA-256 of data. Putting the same
	// data again is a no-op, except that it counts as stored now for
	// SweepBlobs. Data over MaxMessageBytes fails with ErrTooLarge.
	PutBlob(ctx context.Context, session string, data []byte) (string, error)
	// Blob returns the data of a reference PutBlob returned for the
	// session, or ErrNotFound.
	Blob(ctx context.Context, session, ref string) ([]byte, error)
	// SweepBlobs deletes the session's blobs that are not in keep and were
	// last put before cutoff, and returns their references in order. Give
	// cutoff a margin (such as an hour ago) so a blob whose reference is on
	// its way to the workflow is not swept.
	SweepBlobs(ctx context.Context, session string, keep []string, cutoff time.Time) ([]string, error)

	// Charge records one model call's spend in the ledger and reports
	// whether it was new: a key already recorded is a no-op. Charges
	// older than SpendRetention are pruned.
	Charge(ctx context.Context, c Charge) (bool, error)
	// Spent sums the charges of scope recorded at or after since.
	Spent(ctx context.Context, scope SpendScope, since time.Time) (Spend, error)

	// Fork makes session fork begin with messages 1..at of parent (see
	// fork.go): it shares the parent's chunks that end at or before at,
	// copies the messages after them as fork's window rows (written by
	// gen 0, so any Step of the fork may replace them), and records the
	// fork. fork must hold no messages yet. Calling it again with the same
	// arguments returns the same result; other arguments for a session
	// already forked fail with ErrConflict. A message of 1..at that the
	// parent holds neither in a chunk nor as a window row fails with
	// ErrMissing, and nothing is written.
	Fork(ctx context.Context, fork, parent string, at int64) (ForkResult, error)
	// ForkOf returns the record of a fork, or ErrNotFound for a session
	// that is not one.
	ForkOf(ctx context.Context, session string) (Fork, error)
	// Branches lists the forks whose root is root, oldest first, at most
	// limit of them.
	Branches(ctx context.Context, root string, limit int) ([]Fork, error)

	// DeleteSession deletes every row, chunk and blob of the session, and
	// its fork record and shares. A chunk that a fork still shares is
	// retired instead (only the forks read it) until the last of them is
	// deleted.
	DeleteSession(ctx context.Context, session string) (Deleted, error)

	// Close releases the store's connections. The store is not used after.
	Close() error
}

// Drivers that Open knows.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// Options configure Open.
type Options struct {
	// Driver is DriverSQLite or DriverPostgres.
	Driver string
	// Path is the SQLite database file; Open creates it (mode 0600) and
	// its directory (mode 0700) when missing. SQLite only.
	Path string
	// DSN is the PostgreSQL connection string. It may hold a password:
	// Open never logs it or puts it in an error, and Options hides it from
	// fmt and slog. PostgreSQL only.
	DSN string
	// Logger receives the store's few log lines; nil discards them.
	Logger *slog.Logger
	// Now is the clock that stamps blobs for SweepBlobs; nil is time.Now.
	Now func() time.Time
}

// String shows the options without the DSN.
func (o Options) String() string {
	dsn := ""
	if o.DSN != "" {
		dsn = "<secret>"
	}
	return fmt.Sprintf("{Driver:%s Path:%s DSN:%s}", o.Driver, o.Path, dsn)
}

// GoString is String, so that %#v hides the DSN too.
func (o Options) GoString() string { return "transcript.Options" + o.String() }

// LogValue shows the options without the DSN.
func (o Options) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("driver", o.Driver)}
	if o.Path != "" {
		attrs = append(attrs, slog.String("path", o.Path))
	}
	if o.DSN != "" {
		attrs = append(attrs, slog.String("dsn", "<secret>"))
	}
	return slog.GroupValue(attrs...)
}

// Open opens the store that o names and creates or migrates its schema.
func Open(ctx context.Context, o Options) (Store, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch o.Driver {
	case DriverSQLite:
		if o.DSN != "" {
			return nil, errors.New("transcript: a DSN is for driver postgres, not sqlite")
		}
		return openSQLite(ctx, o)
	case DriverPostgres:
		if o.Path != "" {
			return nil, errors.New("transcript: a path is for driver sqlite, not postgres")
		}
		return openPostgres(ctx, o)
	}
	return nil, fmt.Errorf("transcript: unknown driver %q (want %q or %q)", o.Driver, DriverSQLite, DriverPostgres)
}

// checkSession validates a session ID: non-empty, valid UTF-8 without NUL
// (PostgreSQL text cannot hold one), at most MaxSessionIDBytes.
func checkSession(session string) error {
	switch {
	case session == "":
		return fmt.Errorf("%w: empty session ID", ErrInvalid)
	case len(session) > MaxSessionIDBytes:
		return fmt.Errorf("%w: session ID of %d bytes (at most %d)", ErrInvalid, len(session), MaxSessionIDBytes)
	case !utf8.ValidString(session) || strings.ContainsRune(session, 0):
		return fmt.Errorf("%w: session ID %q is not UTF-8 text without NUL", ErrInvalid, session)
	}
	return nil
}

// checkRange validates the session and the start of a read's range.
func checkRange(session string, from int64) error {
	if err := checkSession(session); err != nil {
		return err
	}
	if from < 1 {
		return fmt.Errorf("%w: session %q: range starts at %d (sequences start at 1)", ErrInvalid, session, from)
	}
	return nil
}

// Read returns a session's stored messages from sequence from through
// last, oldest first: the chunks that hold [from, windowFirst-1] and the
// window rows [windowFirst, last], as the workflow's commits laid them out
// (see the package documentation). Messages before from are left out,
// which is how a page or a transcript after a compaction summary starts.
func Read(ctx context.Context, st Store, session string, from, windowFirst, last int64) ([]Message, error) {
	var out []Message
	if windowFirst > from {
		refs, err := st.Chunks(ctx, session, from, windowFirst-1)
		if err != nil {
			return nil, fmt.Errorf("list the chunks of %d..%d: %w", from, windowFirst-1, err)
		}
		for _, r := range refs {
			msgs, err := st.Chunk(ctx, session, r.First)
			if err != nil {
				return nil, fmt.Errorf("read chunk %d..%d: %w", r.First, r.Last, err)
			}
			for _, m := range msgs {
				if m.Sequence >= from && m.Sequence < windowFirst && m.Sequence <= last {
					out = append(out, m)
				}
			}
		}
	}
	if last >= max(windowFirst, from) {
		rows, err := st.Window(ctx, session, max(windowFirst, from), last)
		if err != nil {
			return nil, fmt.Errorf("read the window: %w", err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// Reader reads a session's messages through Read and stores texts sent by
// reference; it is the client.MessageStore of a worker's store.
type Reader struct{ Store Store }

// ReadMessages implements client.MessageReader.
func (r Reader) ReadMessages(ctx context.Context, session string, from, windowFirst, last int64) ([]Message, error) {
	return Read(ctx, r.Store, session, from, windowFirst, last)
}

// PutBlob implements client.MessageStore.
func (r Reader) PutBlob(ctx context.Context, session string, data []byte) (string, error) {
	return r.Store.PutBlob(ctx, session, data)
}

// ForkPreviewBytes is how much of each copied message's text a fork's
// start input carries: less than the window's usual wire.PreviewBytes, so
// the start stays small at any window size (readers fill in cut texts
// from the store, as for any truncated window message).
const ForkPreviewBytes = 256

// ForkMessages forks session fork from parent at at (Store.Fork), copies
// the parent's blobs a fork keeps referring to (its summary's text), and
// returns the fork's start input: the copied messages as the window keeps
// them, their texts cut to ForkPreviewBytes.
func (r Reader) ForkMessages(ctx context.Context, fork, parent string, at int64, blobs []string) (wire.ForkStart, error) {
	res, err := r.Store.Fork(ctx, fork, parent, at)
	if err != nil {
		return wire.ForkStart{}, err
	}
	for _, ref := range blobs {
		data, err := r.Store.Blob(ctx, parent, ref)
		if err != nil {
			return wire.ForkStart{}, fmt.Errorf("copy %s to the fork: %w", ref, err)
		}
		if _, err := r.Store.PutBlob(ctx, fork, data); err != nil {
			return wire.ForkStart{}, fmt.Errorf("copy %s to the fork: %w", ref, err)
		}
	}
	out := wire.ForkStart{ParentSessionID: parent, AtSequence: at, FromSequence: res.Fork.From, ThroughSequence: res.Fork.Through}
	for i, m := range res.Tail {
		fm := wire.ForkMessage{
			Sequence: m.Sequence, Role: string(m.Role), Text: m.Text, Bytes: res.TailBytes[i],
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, TurnID: m.TurnID, ToolStatus: string(m.ToolStatus),
		}
		if len(fm.Text) > ForkPreviewBytes {
			cut := ForkPreviewBytes
			for cut > 0 && !utf8.RuneStart(fm.Text[cut]) {
				cut--
			}
			fm.Text, fm.Truncated = fm.Text[:cut], true
		}
		out.Tail = append(out.Tail, fm)
	}
	return out, nil
}

// DropFork deletes what ForkMessages stored for fork, when fork is a fork
// (its shares, copied rows and blobs); it refuses a session that is not one.
func (r Reader) DropFork(ctx context.Context, fork string) error {
	if _, err := r.Store.ForkOf(ctx, fork); err != nil {
		return err
	}
	_, err := r.Store.DeleteSession(ctx, fork)
	return err
}

// ForkOrigin returns the parent and fork point of a fork, and false for a
// session that is not one.
func (r Reader) ForkOrigin(ctx context.Context, session string) (wire.ForkOrigin, bool, error) {
	f, err := r.Store.ForkOf(ctx, session)
	switch {
	case errors.Is(err, ErrNotFound):
		return wire.ForkOrigin{}, false, nil
	case err != nil:
		return wire.ForkOrigin{}, false, err
	}
	return wire.ForkOrigin{ParentSessionID: f.Parent, AtSequence: f.AtSequence}, true, nil
}

// ForkBranches lists the branches of session's conversation: the root (the
// session itself, or the root it was forked from) and at most limit forks
// of it, oldest first.
func (r Reader) ForkBranches(ctx context.Context, session string, limit int) (wire.Branches, error) {
	root := session
	f, err := r.Store.ForkOf(ctx, session)
	switch {
	case err == nil:
		root = f.Root
	case !errors.Is(err, ErrNotFound):
		return wire.Branches{}, err
	}
	forks, err := r.Store.Branches(ctx, root, limit+1)
	if err != nil {
		return wire.Branches{}, err
	}
	out := wire.Branches{RootSessionID: root, Branches: []wire.Branch{}}
	if len(forks) > limit {
		forks, out.HasMore = forks[:limit], true
	}
	for _, f := range forks {
		out.Branches = append(out.Branches, wire.Branch{
			SessionID: f.Session, ParentSessionID: f.Parent, AtSequence: f.AtSequence,
			CreatedAt: f.Created.UTC().Format(time.RFC3339Nano),
		})
	}
	return out, nil
}
