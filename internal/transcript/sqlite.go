package transcript

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers driver "sqlite"
)

// The SQLite store is one database file of its own (not the embedded
// Temporal server's), in WAL mode. One connection writes, so the process's
// writes queue in Go rather than in SQLite's busy handler; a small pool of
// read-only connections reads beside it, as WAL allows.

// sqliteMigrations[i] moves the schema from version i to version i+1;
// PRAGMA user_version holds the version a file is at. Append a migration
// for every change; never edit one that has shipped.
var sqliteMigrations = [][]string{
	{ // version 1
		`CREATE TABLE transcript_window (
			session TEXT NOT NULL,
			seq INTEGER NOT NULL,
			gen INTEGER NOT NULL,
			attempt INTEGER NOT NULL,
			data BLOB NOT NULL,
			PRIMARY KEY (session, seq)
		)`,
		`CREATE TABLE transcript_chunks (
			session TEXT NOT NULL,
			first_seq INTEGER NOT NULL,
			last_seq INTEGER NOT NULL,
			count INTEGER NOT NULL,
			bytes INTEGER NOT NULL,
			digest BLOB NOT NULL,
			data BLOB NOT NULL,
			PRIMARY KEY (session, first_seq)
		)`,
		`CREATE TABLE transcript_blobs (
			session TEXT NOT NULL,
			ref TEXT NOT NULL,
			stored_at INTEGER NOT NULL, -- Unix microseconds of the last put
			data BLOB NOT NULL,
			PRIMARY KEY (session, ref)
		)`,
	},
	{ // version 2: the spend ledger
		`CREATE TABLE spend_charges (
			key TEXT NOT NULL PRIMARY KEY,
			agent TEXT NOT NULL,
			token TEXT NOT NULL,
			session TEXT NOT NULL,
			at INTEGER NOT NULL, -- Unix microseconds
			model_calls INTEGER NOT NULL,
			input_tokens INTEGER NOT NULL,
			output_tokens INTEGER NOT NULL,
			cost_micros INTEGER NOT NULL
		)`,
		`CREATE INDEX spend_charges_agent ON spend_charges (agent, at)`,
		`CREATE INDEX spend_charges_token ON spend_charges (token, at)`,
		`CREATE INDEX spend_charges_at ON spend_charges (at)`,
	},
	{ // version 3: forks share chunks (fork.go)
		`ALTER TABLE transcript_chunks ADD COLUMN retired INTEGER NOT NULL DEFAULT 0`,
		`CREATE TABLE transcript_shares (
			fork TEXT NOT NULL,
			base TEXT NOT NULL,
			first_seq INTEGER NOT NULL,
			last_seq INTEGER NOT NULL,
			PRIMARY KEY (fork, first_seq)
		)`,
		`CREATE INDEX transcript_shares_base ON transcript_shares (base, first_seq)`,
		`CREATE TABLE transcript_forks (
			fork TEXT NOT NULL PRIMARY KEY,
			parent TEXT NOT NULL,
			root TEXT NOT NULL,
			at_seq INTEGER NOT NULL,
			from_seq INTEGER NOT NULL,
			through_seq INTEGER NOT NULL,
			created_at INTEGER NOT NULL -- Unix microseconds
		)`,
		`CREATE INDEX transcript_forks_root ON transcript_forks (root, created_at)`,
	},
}

// sqliteShared is the condition that a chunk c is shared by a fork.
const sqliteShared = `EXISTS (SELECT 1 FROM transcript_shares s WHERE s.base = c.session AND c.first_seq BETWEEN s.first_seq AND s.last_seq)`

// sqliteResolved lists a session's chunks that hold any sequence in
// [from, to]: its own (not retired) and those its fork segments share.
const sqliteResolved = `SELECT c.session, c.first_seq, c.last_seq, c.count, c.bytes FROM transcript_chunks c
		WHERE c.session = ?1 AND c.retired = 0 AND c.first_seq <= ?3 AND c.last_seq >= ?2
	UNION ALL
	SELECT c.session, c.first_seq, c.last_seq, c.count, c.bytes FROM transcript_shares s
		JOIN transcript_chunks c ON c.session = s.base AND c.first_seq >= s.first_seq AND c.last_seq <= s.last_seq
		WHERE s.fork = ?1 AND c.first_seq <= ?3 AND c.last_seq >= ?2
	ORDER BY 2`

// sqliteQuerier is a *sql.DB or a *sql.Tx.
type sqliteQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func sqliteResolvedChunks(ctx context.Context, q sqliteQuerier, session string, from, to int64) ([]ownedRef, error) {
	rows, err := q.QueryContext(ctx, sqliteResolved, session, from, to)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []ownedRef
	for rows.Next() {
		var r ownedRef
		if err := rows.Scan(&r.Owner, &r.First, &r.Last, &r.Count, &r.Bytes); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// sqliteFileMode is the mode of a new database file. SQLite creates its
// -wal and -shm files with the database's mode, so all three stay private
// (the file holds every session's conversation).
const sqliteFileMode fs.FileMode = 0o600

type sqliteStore struct {
	w     *sql.DB // one connection: every write
	r     *sql.DB // read-only connections
	now   func() time.Time
	log   *slog.Logger
	prune pruneClock
}

// Interface guards
var _ Store = (*sqliteStore)(nil)

func openSQLite(ctx context.Context, o Options) (_ Store, err error) {
	if o.Path == "" {
		return nil, errors.New("transcript: sqlite: the database path is required")
	}
	path, err := filepath.Abs(o.Path)
	if err != nil {
		return nil, fmt.Errorf("transcript: sqlite: %w", err)
	}
	// The driver cuts the name at the first '?' to read its parameters.
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("transcript: sqlite: database path %q must not contain '?'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("transcript: sqlite: %w", err)
	}
	// Create the file before SQLite does (it would use 0644).
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, sqliteFileMode)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("transcript: sqlite: %w", err)
		}
		o.Logger.Info("created the message store", "path", path)
	case errors.Is(err, fs.ErrExist):
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("transcript: sqlite: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("transcript: sqlite: %q is not a regular file", path)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			o.Logger.Warn("the message store is open to other users; it holds every session's conversation",
				"path", path, "mode", fi.Mode().Perm().String(), "fix", "chmod 600 "+path)
		}
	default:
		return nil, fmt.Errorf("transcript: sqlite: %w", err)
	}

	// synchronous=NORMAL: in WAL mode a commit is durable once the WAL is
	// synced at the next checkpoint, so a power cut can lose the last
	// commits (never corrupt the file). That is safe here because the
	// engine's history, not this file, records what is committed: a lost
	// row belongs to a Step whose completion the engine has not recorded
	// yet, or whose retry rewrites it (rows are keyed by sequence and
	// chunks are idempotent). FULL would sync on every write.
	//
	// _txlock=immediate takes the write lock at BEGIN, so a transaction
	// never fails to upgrade its lock halfway; busy_timeout waits for
	// another process (such as a CLI) instead of failing at once.
	const common = "?_pragma=busy_timeout(10000)"
	w, err := sql.Open("sqlite", path+common+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("transcript: sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", path+common+"&_pragma=query_only(1)")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("transcript: sqlite: %w", err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	s := &sqliteStore{w: w, r: r, now: o.Now, log: o.Logger}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("transcript: sqlite: %s: %w", path, err)
	}
	return s, nil
}

// migrate brings the schema to the newest version, in one transaction.
func (s *sqliteStore) migrate(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version > len(sqliteMigrations) {
		return fmt.Errorf("schema version %d is newer than this build knows (%d): run a newer dex-agent-worker", version, len(sqliteMigrations))
	}
	if version == len(sqliteMigrations) {
		return nil
	}
	for v := version; v < len(sqliteMigrations); v++ {
		for _, stmt := range sqliteMigrations[v] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(sqliteMigrations))); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.log.Info("migrated the message store schema", "from", version, "to", len(sqliteMigrations))
	return nil
}

func (s *sqliteStore) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

func sqliteErr(op, session string, err error) error {
	return fmt.Errorf("transcript: sqlite: %s of session %q: %w", op, session, err)
}

func (s *sqliteStore) PutWindow(ctx context.Context, session string, w Writer, msgs []Message) error {
	if err := checkWriter(session, w); err != nil {
		return err
	}
	encoded, err := encodeWrite(session, msgs, false)
	if err != nil || len(msgs) == 0 {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return sqliteErr("put window", session, err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO transcript_window (session, seq, gen, attempt, data) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (session, seq) DO UPDATE SET gen = excluded.gen, attempt = excluded.attempt, data = excluded.data
		WHERE (transcript_window.gen, transcript_window.attempt) <= (excluded.gen, excluded.attempt)`)
	if err != nil {
		return sqliteErr("put window", session, err)
	}
	defer func() { _ = stmt.Close() }()
	for i := range msgs {
		res, err := stmt.ExecContext(ctx, session, msgs[i].Sequence, w.Gen, w.Attempt, encoded[i])
		if err != nil {
			return sqliteErr("put window", session, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return sqliteErr("put window", session, err)
		}
		if n == 0 {
			var holder Writer
			if err := tx.QueryRowContext(ctx, "SELECT gen, attempt FROM transcript_window WHERE session = ? AND seq = ?",
				session, msgs[i].Sequence).Scan(&holder.Gen, &holder.Attempt); err != nil {
				return sqliteErr("put window", session, err)
			}
			return fencedErr(session, msgs[i].Sequence, holder, w)
		}
	}
	if err := tx.Commit(); err != nil {
		return sqliteErr("put window", session, err)
	}
	return nil
}

func (s *sqliteStore) Window(ctx context.Context, session string, from, to int64) ([]Message, error) {
	if err := checkRange(session, from); err != nil || to < from {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, "SELECT seq, data FROM transcript_window WHERE session = ? AND seq BETWEEN ? AND ? ORDER BY seq", session, from, to)
	if err != nil {
		return nil, sqliteErr("read window", session, err)
	}
	defer func() { _ = rows.Close() }()
	var w windowReader
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, sqliteErr("read window", session, err)
		}
		if err := w.add(session, from, seq, data); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, sqliteErr("read window", session, err)
	}
	return w.done(session, from, to)
}

func (s *sqliteStore) DeleteWindowThrough(ctx context.Context, session string, seq int64) (int64, error) {
	if err := checkSession(session); err != nil {
		return 0, err
	}
	res, err := s.w.ExecContext(ctx, "DELETE FROM transcript_window WHERE session = ? AND seq <= ?", session, seq)
	if err != nil {
		return 0, sqliteErr("delete window", session, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, sqliteErr("delete window", session, err)
	}
	return n, nil
}

func (s *sqliteStore) PutChunk(ctx context.Context, session string, msgs []Message) (ChunkRef, error) {
	if err := checkSession(session); err != nil {
		return ChunkRef{}, err
	}
	data, ref, err := encodeChunk(session, msgs)
	if err != nil {
		return ChunkRef{}, err
	}
	digest := sha256.Sum256(data)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ChunkRef{}, sqliteErr("put chunk", session, err)
	}
	defer func() { _ = tx.Rollback() }()

	var stored ChunkRef
	var storedDigest []byte
	var retired bool
	err = tx.QueryRowContext(ctx, "SELECT first_seq, last_seq, count, bytes, digest, retired FROM transcript_chunks WHERE session = ? AND first_seq = ?",
		session, ref.First).Scan(&stored.First, &stored.Last, &stored.Count, &stored.Bytes, &storedDigest, &retired)
	switch {
	case err == nil && retired:
		return ChunkRef{}, retiredConflict(session, ref)
	case err == nil && stored == ref && bytes.Equal(storedDigest, digest[:]):
		return stored, nil // the same chunk again: a retried Step
	case err == nil:
		return ChunkRef{}, sameFirstConflict(session, ref, stored)
	case !errors.Is(err, sql.ErrNoRows):
		return ChunkRef{}, sqliteErr("put chunk", session, err)
	}
	var other ChunkRef
	err = tx.QueryRowContext(ctx, `SELECT first_seq, last_seq FROM transcript_chunks
		WHERE session = ? AND first_seq <= ? AND last_seq >= ? AND first_seq <> ? ORDER BY first_seq LIMIT 1`,
		session, ref.Last, ref.First, ref.First).Scan(&other.First, &other.Last)
	switch {
	case err == nil:
		return ChunkRef{}, overlapConflict(session, ref, other)
	case !errors.Is(err, sql.ErrNoRows):
		return ChunkRef{}, sqliteErr("put chunk", session, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO transcript_chunks (session, first_seq, last_seq, count, bytes, digest, data)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, session, ref.First, ref.Last, ref.Count, ref.Bytes, digest[:], data); err != nil {
		return ChunkRef{}, sqliteErr("put chunk", session, err)
	}
	if err := tx.Commit(); err != nil {
		return ChunkRef{}, sqliteErr("put chunk", session, err)
	}
	return ref, nil
}

func (s *sqliteStore) Chunk(ctx context.Context, session string, first int64) ([]Message, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	var ref ChunkRef
	var data []byte
	err := s.r.QueryRowContext(ctx, `SELECT first_seq, last_seq, count, bytes, data FROM transcript_chunks WHERE session = ?1 AND first_seq = ?2 AND retired = 0
		UNION ALL
		SELECT c.first_seq, c.last_seq, c.count, c.bytes, c.data FROM transcript_shares s
			JOIN transcript_chunks c ON c.session = s.base AND c.first_seq = ?2 AND c.last_seq <= s.last_seq
			WHERE s.fork = ?1 AND ?2 BETWEEN s.first_seq AND s.last_seq
		LIMIT 1`,
		session, first).Scan(&ref.First, &ref.Last, &ref.Count, &ref.Bytes, &data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("%w: session %q: no chunk starts at %d", ErrNotFound, session, first)
	case err != nil:
		return nil, sqliteErr("read chunk", session, err)
	}
	return checkChunk(session, ref, data)
}

func (s *sqliteStore) Chunks(ctx context.Context, session string, from, to int64) ([]ChunkRef, error) {
	if err := checkRange(session, from); err != nil || to < from {
		return nil, err
	}
	owned, err := sqliteResolvedChunks(ctx, s.r, session, from, to)
	if err != nil {
		return nil, sqliteErr("list chunks", session, err)
	}
	return chunkRefs(owned), nil
}

func (s *sqliteStore) DeleteChunks(ctx context.Context, session string, firsts []int64) ([]ChunkRef, error) {
	if err := checkSession(session); err != nil || len(firsts) == 0 {
		return nil, err
	}
	list, err := json.Marshal(firsts)
	if err != nil {
		return nil, sqliteErr("delete chunks", session, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, sqliteErr("delete chunks", session, err)
	}
	defer func() { _ = tx.Rollback() }()
	var out []ChunkRef
	// Shared chunks are retired, the others deleted.
	for _, stmt := range []string{
		`UPDATE transcript_chunks AS c SET retired = 1 WHERE c.session = ? AND c.retired = 0 AND c.first_seq IN (SELECT value FROM json_each(?))
			AND ` + sqliteShared + ` RETURNING first_seq, last_seq, count, bytes`,
		`DELETE FROM transcript_chunks AS c WHERE c.session = ? AND c.retired = 0 AND c.first_seq IN (SELECT value FROM json_each(?))
			RETURNING first_seq, last_seq, count, bytes`,
	} {
		refs, err := sqliteRefs(ctx, tx, stmt, session, string(list))
		if err != nil {
			return nil, sqliteErr("delete chunks", session, err)
		}
		out = append(out, refs...)
	}
	if err := tx.Commit(); err != nil {
		return nil, sqliteErr("delete chunks", session, err)
	}
	slices.SortFunc(out, func(a, b ChunkRef) int { return cmp.Compare(a.First, b.First) })
	return out, nil
}

// sqliteRefs runs a statement that returns chunk refs.
func sqliteRefs(ctx context.Context, q sqliteQuerier, stmt string, args ...any) ([]ChunkRef, error) {
	rows, err := q.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []ChunkRef
	for rows.Next() {
		var ref ChunkRef
		if err := rows.Scan(&ref.First, &ref.Last, &ref.Count, &ref.Bytes); err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, rows.Err()
}

func (s *sqliteStore) PutBlob(ctx context.Context, session string, data []byte) (string, error) {
	if err := checkSession(session); err != nil {
		return "", err
	}
	if err := checkBlob(session, data); err != nil {
		return "", err
	}
	ref := blobRef(data)
	if data == nil {
		data = []byte{} // the column is NOT NULL
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO transcript_blobs (session, ref, stored_at, data) VALUES (?, ?, ?, ?)
		ON CONFLICT (session, ref) DO UPDATE SET stored_at = excluded.stored_at WHERE excluded.stored_at > transcript_blobs.stored_at`,
		session, ref, s.now().UnixMicro(), data); err != nil {
		return "", sqliteErr("put blob", session, err)
	}
	return ref, nil
}

func (s *sqliteStore) Blob(ctx context.Context, session, ref string) ([]byte, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	var data []byte
	err := s.r.QueryRowContext(ctx, "SELECT data FROM transcript_blobs WHERE session = ? AND ref = ?", session, ref).Scan(&data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("%w: session %q: blob %s", ErrNotFound, session, ref)
	case err != nil:
		return nil, sqliteErr("read blob", session, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

func (s *sqliteStore) SweepBlobs(ctx context.Context, session string, keep []string, cutoff time.Time) ([]string, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	for _, ref := range keep {
		if err := checkRef(ref); err != nil {
			return nil, err
		}
	}
	list, err := json.Marshal(keep)
	if err != nil {
		return nil, sqliteErr("sweep blobs", session, err)
	}
	if keep == nil {
		list = []byte("[]")
	}
	rows, err := s.w.QueryContext(ctx, `DELETE FROM transcript_blobs WHERE session = ? AND stored_at < ?
		AND ref NOT IN (SELECT value FROM json_each(?)) RETURNING ref`, session, cutoff.UnixMicro(), string(list))
	if err != nil {
		return nil, sqliteErr("sweep blobs", session, err)
	}
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var ref string
		if err := rows.Scan(&ref); err != nil {
			return nil, sqliteErr("sweep blobs", session, err)
		}
		out = append(out, ref)
	}
	if err := rows.Err(); err != nil {
		return nil, sqliteErr("sweep blobs", session, err)
	}
	slices.Sort(out)
	return out, nil
}

func (s *sqliteStore) DeleteSession(ctx context.Context, session string) (Deleted, error) {
	if err := checkSession(session); err != nil {
		return Deleted{}, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Deleted{}, sqliteErr("delete session", session, err)
	}
	defer func() { _ = tx.Rollback() }()
	var d Deleted
	for _, t := range []struct {
		stmt string
		n    *int64
	}{
		{"DELETE FROM transcript_window WHERE session = ?", &d.WindowRows},
		{"UPDATE transcript_chunks AS c SET retired = 1 WHERE c.session = ? AND c.retired = 0 AND " + sqliteShared, nil},
		{"DELETE FROM transcript_chunks AS c WHERE c.session = ? AND c.retired = 0", &d.Chunks},
		{"DELETE FROM transcript_blobs WHERE session = ?", &d.Blobs},
		{"DELETE FROM transcript_forks WHERE fork = ?", nil},
		// The session's shares go, and with them the retired chunks
		// that no other fork shares.
		{`DELETE FROM transcript_chunks AS c WHERE c.retired = 1 AND c.session IN (SELECT base FROM transcript_shares WHERE fork = ?1)
			AND NOT EXISTS (SELECT 1 FROM transcript_shares s WHERE s.base = c.session AND s.fork <> ?1 AND c.first_seq BETWEEN s.first_seq AND s.last_seq)`, nil},
		{"DELETE FROM transcript_shares WHERE fork = ?", nil},
	} {
		res, err := tx.ExecContext(ctx, t.stmt, session)
		if err != nil {
			return Deleted{}, sqliteErr("delete session", session, err)
		}
		if t.n == nil {
			continue
		}
		if *t.n, err = res.RowsAffected(); err != nil {
			return Deleted{}, sqliteErr("delete session", session, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return Deleted{}, sqliteErr("delete session", session, err)
	}
	return d, nil
}

func (s *sqliteStore) Charge(ctx context.Context, c Charge) (bool, error) {
	if err := checkCharge(c); err != nil {
		return false, err
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO spend_charges (key, agent, token, session, at, model_calls, input_tokens, output_tokens, cost_micros)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		c.Key, c.Agent, c.Token, c.Session, c.At.UnixMicro(), c.Spend.ModelCalls, c.Spend.InputTokens, c.Spend.OutputTokens, c.Spend.CostMicros)
	if err != nil {
		return false, sqliteErr("charge", c.Session, err)
	}
	n, _ := res.RowsAffected()
	if !s.prune.due(s.now()) {
		return n == 1, nil
	}
	if _, err := s.w.ExecContext(ctx, "DELETE FROM spend_charges WHERE at < ?", s.now().Add(-SpendRetention).UnixMicro()); err != nil {
		return false, sqliteErr("prune the charges", c.Session, err)
	}
	return n == 1, nil
}

func (s *sqliteStore) Spent(ctx context.Context, scope SpendScope, since time.Time) (Spend, error) {
	if err := scope.check(); err != nil {
		return Spend{}, err
	}
	col, name := "agent", scope.Agent
	if scope.Token != "" {
		col, name = "token", scope.Token
	}
	var sp Spend
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(model_calls), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_micros), 0)
		FROM spend_charges WHERE `+col+` = ? AND at >= ?`, name, since.UnixMicro()).Scan(&sp.ModelCalls, &sp.InputTokens, &sp.OutputTokens, &sp.CostMicros)
	if err != nil {
		return Spend{}, fmt.Errorf("transcript: sqlite: sum the spend of %s %q: %w", col, name, err)
	}
	return sp, nil
}

const sqliteForkColumns = "fork, parent, root, at_seq, from_seq, through_seq, created_at"

func scanSQLiteFork(row interface{ Scan(...any) error }) (Fork, error) {
	var f Fork
	var created int64
	if err := row.Scan(&f.Session, &f.Parent, &f.Root, &f.AtSequence, &f.From, &f.Through, &created); err != nil {
		return Fork{}, err
	}
	f.Created = time.UnixMicro(created).UTC()
	return f, nil
}

func (s *sqliteStore) Fork(ctx context.Context, fork, parent string, at int64) (ForkResult, error) {
	if err := checkFork(fork, parent, at); err != nil {
		return ForkResult{}, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ForkResult{}, sqliteErr("fork", fork, err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := runFork(sqliteFork{ctx, tx}, fork, parent, at, s.now())
	if err != nil {
		return ForkResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return ForkResult{}, sqliteErr("fork", fork, err)
	}
	return res, nil
}

// sqliteFork are Fork's steps in one SQLite transaction.
type sqliteFork struct {
	ctx context.Context
	tx  *sql.Tx
}

func (t sqliteFork) existing(fork string) (Fork, bool, error) {
	f, err := scanSQLiteFork(t.tx.QueryRowContext(t.ctx, "SELECT "+sqliteForkColumns+" FROM transcript_forks WHERE fork = ?", fork))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Fork{}, false, nil
	case err != nil:
		return Fork{}, false, sqliteErr("fork", fork, err)
	}
	return f, true, nil
}

func (t sqliteFork) holds(session string) (bool, error) {
	var used bool
	if err := t.tx.QueryRowContext(t.ctx, `SELECT EXISTS (SELECT 1 FROM transcript_window WHERE session = ?1)
		OR EXISTS (SELECT 1 FROM transcript_chunks WHERE session = ?1)`, session).Scan(&used); err != nil {
		return false, sqliteErr("fork", session, err)
	}
	return used, nil
}

func (t sqliteFork) chunks(session string, at int64) ([]ownedRef, error) {
	refs, err := sqliteResolvedChunks(t.ctx, t.tx, session, 1, at)
	if err != nil {
		return nil, sqliteErr("fork", session, err)
	}
	return refs, nil
}

func (t sqliteFork) firstRow(session string, at int64) (int64, error) {
	var first sql.NullInt64
	if err := t.tx.QueryRowContext(t.ctx, "SELECT MIN(seq) FROM transcript_window WHERE session = ? AND seq <= ?", session, at).Scan(&first); err != nil {
		return 0, sqliteErr("fork", session, err)
	}
	return first.Int64, nil
}

func (t sqliteFork) chunkData(owner string, first int64) ([]byte, error) {
	var data []byte
	if err := t.tx.QueryRowContext(t.ctx, "SELECT data FROM transcript_chunks WHERE session = ? AND first_seq = ?", owner, first).Scan(&data); err != nil {
		return nil, sqliteErr("fork", owner, err)
	}
	return data, nil
}

func (t sqliteFork) window(session string, from, to int64) ([]Message, []int64, error) {
	return sqliteWindowSized(t.ctx, t.tx, session, from, to)
}

func (t sqliteFork) root(session string) (string, bool, error) {
	var root string
	err := t.tx.QueryRowContext(t.ctx, "SELECT root FROM transcript_forks WHERE fork = ?", session).Scan(&root)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, sqliteErr("fork", session, err)
	}
	return root, true, nil
}

func (t sqliteFork) insertFork(f Fork) error {
	if _, err := t.tx.ExecContext(t.ctx, "INSERT INTO transcript_forks ("+sqliteForkColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)",
		f.Session, f.Parent, f.Root, f.AtSequence, f.From, f.Through, f.Created.UnixMicro()); err != nil {
		return sqliteErr("fork", f.Session, err)
	}
	return nil
}

func (t sqliteFork) insertShare(fork string, sg segment) error {
	if _, err := t.tx.ExecContext(t.ctx, "INSERT INTO transcript_shares (fork, base, first_seq, last_seq) VALUES (?, ?, ?, ?)", fork, sg.Base, sg.First, sg.Last); err != nil {
		return sqliteErr("fork", fork, err)
	}
	return nil
}

func (t sqliteFork) copyRows(fork, parent string, from, to int64) error {
	if _, err := t.tx.ExecContext(t.ctx, `INSERT INTO transcript_window (session, seq, gen, attempt, data)
		SELECT ?, seq, 0, 0, data FROM transcript_window WHERE session = ? AND seq BETWEEN ? AND ?`, fork, parent, from, to); err != nil {
		return sqliteErr("fork", fork, err)
	}
	return nil
}

func (t sqliteFork) insertRows(fork string, seqs []int64, encoded [][]byte) error {
	for i, seq := range seqs {
		if _, err := t.tx.ExecContext(t.ctx, "INSERT INTO transcript_window (session, seq, gen, attempt, data) VALUES (?, ?, 0, 0, ?)", fork, seq, encoded[i]); err != nil {
			return sqliteErr("fork", fork, err)
		}
	}
	return nil
}

// sqliteWindowSized reads window rows [from, to] inside a transaction,
// with their stored sizes.
func sqliteWindowSized(ctx context.Context, q sqliteQuerier, session string, from, to int64) ([]Message, []int64, error) {
	if to < from {
		return nil, nil, nil
	}
	rows, err := q.QueryContext(ctx, "SELECT seq, data FROM transcript_window WHERE session = ? AND seq BETWEEN ? AND ? ORDER BY seq", session, from, to)
	if err != nil {
		return nil, nil, sqliteErr("read window", session, err)
	}
	defer func() { _ = rows.Close() }()
	var w windowReader
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, nil, sqliteErr("read window", session, err)
		}
		if err := w.add(session, from, seq, data); err != nil {
			return nil, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, sqliteErr("read window", session, err)
	}
	msgs, err := w.done(session, from, to)
	return msgs, w.sizes, err
}

func (s *sqliteStore) ForkOf(ctx context.Context, session string) (Fork, error) {
	if err := checkSession(session); err != nil {
		return Fork{}, err
	}
	f, err := scanSQLiteFork(s.r.QueryRowContext(ctx, "SELECT "+sqliteForkColumns+" FROM transcript_forks WHERE fork = ?", session))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Fork{}, fmt.Errorf("%w: session %q is not a fork", ErrNotFound, session)
	case err != nil:
		return Fork{}, sqliteErr("read fork", session, err)
	}
	return f, nil
}

func (s *sqliteStore) Branches(ctx context.Context, root string, limit int) ([]Fork, error) {
	if err := checkSession(root); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, "SELECT "+sqliteForkColumns+" FROM transcript_forks WHERE root = ? ORDER BY created_at, fork LIMIT ?", root, limit)
	if err != nil {
		return nil, sqliteErr("list branches", root, err)
	}
	defer func() { _ = rows.Close() }()
	var out []Fork
	for rows.Next() {
		f, err := scanSQLiteFork(rows)
		if err != nil {
			return nil, sqliteErr("list branches", root, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, sqliteErr("list branches", root, err)
	}
	return out, nil
}
