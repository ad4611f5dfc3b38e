package transcript

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The PostgreSQL store keeps the three kinds of data in three tables of
// the database the DSN names (its search_path), shared by every worker.

// pgMigrations[i] moves the schema from version i to version i+1; the
// table transcript_schema holds the version. Append a migration for every
// change; never edit one that has shipped.
var pgMigrations = [][]string{
	{ // version 1
		`CREATE TABLE transcript_window (
			session text NOT NULL,
			seq bigint NOT NULL,
			gen bigint NOT NULL,
			attempt integer NOT NULL,
			data bytea NOT NULL,
			PRIMARY KEY (session, seq)
		)`,
		`CREATE TABLE transcript_chunks (
			session text NOT NULL,
			first_seq bigint NOT NULL,
			last_seq bigint NOT NULL,
			count integer NOT NULL,
			bytes bigint NOT NULL,
			digest bytea NOT NULL,
			data bytea NOT NULL,
			PRIMARY KEY (session, first_seq)
		)`,
		`CREATE TABLE transcript_blobs (
			session text NOT NULL,
			ref text NOT NULL,
			stored_at bigint NOT NULL, -- Unix microseconds of the last put
			data bytea NOT NULL,
			PRIMARY KEY (session, ref)
		)`,
	},
	{ // version 2: the spend ledger
		`CREATE TABLE spend_charges (
			key text NOT NULL PRIMARY KEY,
			agent text NOT NULL,
			token text NOT NULL,
			session text NOT NULL,
			at bigint NOT NULL, -- Unix microseconds
			model_calls bigint NOT NULL,
			input_tokens bigint NOT NULL,
			output_tokens bigint NOT NULL,
			cost_micros bigint NOT NULL
		)`,
		`CREATE INDEX spend_charges_agent ON spend_charges (agent, at)`,
		`CREATE INDEX spend_charges_token ON spend_charges (token, at)`,
		`CREATE INDEX spend_charges_at ON spend_charges (at)`,
	},
	{ // version 3: forks share chunks (fork.go)
		`ALTER TABLE transcript_chunks ADD COLUMN retired boolean NOT NULL DEFAULT false`,
		`CREATE TABLE transcript_shares (
			fork text NOT NULL,
			base text NOT NULL,
			first_seq bigint NOT NULL,
			last_seq bigint NOT NULL,
			PRIMARY KEY (fork, first_seq)
		)`,
		`CREATE INDEX transcript_shares_base ON transcript_shares (base, first_seq)`,
		`CREATE TABLE transcript_forks (
			fork text NOT NULL PRIMARY KEY,
			parent text NOT NULL,
			root text NOT NULL,
			at_seq bigint NOT NULL,
			from_seq bigint NOT NULL,
			through_seq bigint NOT NULL,
			created_at bigint NOT NULL -- Unix microseconds
		)`,
		`CREATE INDEX transcript_forks_root ON transcript_forks (root, created_at)`,
	},
}

// pgForkLock is the key of the advisory lock that Fork and DeleteSession
// take: they change which chunks forks share, one at a time.
const pgForkLock int64 = 0x6465785f666f726b // "dex_fork"

// pgLockSession takes the advisory lock of one session's stored messages
// for the transaction: DeleteChunks and DeleteWindowThrough take it, and
// Fork for its parent, so no chunk or row is deleted between Fork's reads
// and its share and copy.
func pgLockSession(ctx context.Context, tx pgx.Tx, session string) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", session)
	return err
}

// pgShared is the condition that a chunk c is shared by a fork.
const pgShared = `EXISTS (SELECT 1 FROM transcript_shares s WHERE s.base = c.session AND c.first_seq BETWEEN s.first_seq AND s.last_seq)`

// pgQuerier is a pool or a transaction.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgResolvedChunks lists a session's chunks that hold any sequence in
// [from, to]: its own (not retired) and those its fork segments share.
func pgResolvedChunks(ctx context.Context, q pgQuerier, session string, from, to int64) ([]ownedRef, error) {
	rows, err := q.Query(ctx, `SELECT c.session, c.first_seq, c.last_seq, c.count, c.bytes FROM transcript_chunks c
			WHERE c.session = $1 AND NOT c.retired AND c.first_seq <= $3 AND c.last_seq >= $2
		UNION ALL
		SELECT c.session, c.first_seq, c.last_seq, c.count, c.bytes FROM transcript_shares s
			JOIN transcript_chunks c ON c.session = s.base AND c.first_seq >= s.first_seq AND c.last_seq <= s.last_seq
			WHERE s.fork = $1 AND c.first_seq <= $3 AND c.last_seq >= $2
		ORDER BY 2`, session, from, to)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ownedRef, error) {
		var r ownedRef
		err := row.Scan(&r.Owner, &r.First, &r.Last, &r.Count, &r.Bytes)
		return r, err
	})
}

// pgSchemaLock is the key of the advisory lock that serializes schema
// changes between workers that open the store at the same time.
const pgSchemaLock int64 = 0x6465785f74726e73 // "dex_trns"

type pgStore struct {
	pool  *pgxpool.Pool
	now   func() time.Time
	log   *slog.Logger
	prune pruneClock
}

// Interface guards
var _ Store = (*pgStore)(nil)

func openPostgres(ctx context.Context, o Options) (Store, error) {
	if o.DSN == "" {
		return nil, errors.New("transcript: postgres: the DSN is empty")
	}
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		// The parse error quotes the DSN (and url.Parse errors quote it
		// whole, password included): say only that it does not parse.
		return nil, errors.New("transcript: postgres: the DSN does not parse (want a URL such as postgres://user:password@host:5432/db or key=value pairs)")
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "dex-agent-worker"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, pgConnectErr(ctx, cfg, o.DSN, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, pgConnectErr(ctx, cfg, o.DSN, err)
	}
	s := &pgStore{pool: pool, now: o.Now, log: o.Logger}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("transcript: postgres: schema: %w", err)
	}
	return s, nil
}

// pgConnectErr describes a failure to connect without the DSN or the
// password. It does not wrap pgx's error, whose fields hold both; it wraps
// the context's error when that is the cause.
func pgConnectErr(ctx context.Context, cfg *pgxpool.Config, dsn string, err error) error {
	msg := err.Error()
	for _, secret := range []string{dsn, cfg.ConnConfig.Password} {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "<secret>")
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("transcript: postgres: connect: %s: %w", msg, ctxErr)
	}
	return fmt.Errorf("transcript: postgres: connect: %s", msg)
}

// migrate brings the schema to the newest version in one transaction,
// under an advisory lock, so workers that start together do it once. It
// creates nothing when the schema is current, so a worker whose role may
// not create tables can open a store that an administrator set up.
func (s *pgStore) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", pgSchemaLock); err != nil {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass('transcript_schema') IS NOT NULL").Scan(&exists); err != nil {
		return err
	}
	version := 0
	if exists {
		if err := tx.QueryRow(ctx, "SELECT version FROM transcript_schema").Scan(&version); err != nil {
			return fmt.Errorf("reading the schema version: %w", err)
		}
	}
	switch {
	case version > len(pgMigrations):
		return fmt.Errorf("schema version %d is newer than this build knows (%d): run a newer dex-agent-worker", version, len(pgMigrations))
	case version == len(pgMigrations):
		return nil
	}
	if !exists {
		if _, err := tx.Exec(ctx, "CREATE TABLE transcript_schema (version integer NOT NULL)"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO transcript_schema (version) VALUES (0)"); err != nil {
			return err
		}
	}
	for v := version; v < len(pgMigrations); v++ {
		for _, stmt := range pgMigrations[v] {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, "UPDATE transcript_schema SET version = $1", len(pgMigrations)); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	s.log.Info("migrated the message store schema", "from", version, "to", len(pgMigrations))
	return nil
}

func (s *pgStore) Close() error {
	s.pool.Close()
	return nil
}

func pgErr(op, session string, err error) error {
	return fmt.Errorf("transcript: postgres: %s of session %q: %w", op, session, err)
}

func (s *pgStore) PutWindow(ctx context.Context, session string, w Writer, msgs []Message) error {
	if err := checkWriter(session, w); err != nil {
		return err
	}
	encoded, err := encodeWrite(session, msgs, false)
	if err != nil || len(msgs) == 0 {
		return err
	}
	seqs := make([]int64, len(msgs))
	for i := range msgs {
		seqs[i] = msgs[i].Sequence
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return pgErr("put window", session, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// A conflicting row is replaced only when its writer is not newer;
	// RETURNING lists the rows written, so a shorter list means fenced.
	rows, err := tx.Query(ctx, `INSERT INTO transcript_window (session, seq, gen, attempt, data)
		SELECT $1, t.seq, $2, $3, t.data FROM unnest($4::bigint[], $5::bytea[]) AS t(seq, data)
		ON CONFLICT (session, seq) DO UPDATE SET gen = EXCLUDED.gen, attempt = EXCLUDED.attempt, data = EXCLUDED.data
		WHERE (transcript_window.gen, transcript_window.attempt) <= (EXCLUDED.gen, EXCLUDED.attempt)
		RETURNING seq`, session, w.Gen, w.Attempt, seqs, encoded)
	if err != nil {
		return pgErr("put window", session, err)
	}
	written, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return pgErr("put window", session, err)
	}
	if len(written) < len(msgs) {
		var seq int64
		var holder Writer
		if err := tx.QueryRow(ctx, `SELECT seq, gen, attempt FROM transcript_window
			WHERE session = $1 AND seq = ANY($2) AND (gen, attempt) > ($3, $4) ORDER BY seq LIMIT 1`,
			session, seqs, w.Gen, w.Attempt).Scan(&seq, &holder.Gen, &holder.Attempt); err != nil {
			return pgErr("put window", session, err)
		}
		return fencedErr(session, seq, holder, w)
	}
	if err := tx.Commit(ctx); err != nil {
		return pgErr("put window", session, err)
	}
	return nil
}

func (s *pgStore) Window(ctx context.Context, session string, from, to int64) ([]Message, error) {
	if err := checkRange(session, from); err != nil || to < from {
		return nil, err
	}
	return pgWindow(ctx, s.pool, session, from, to)
}

// pgWindow reads window rows [from, to].
func pgWindow(ctx context.Context, q pgQuerier, session string, from, to int64) ([]Message, error) {
	msgs, _, err := pgWindowSized(ctx, q, session, from, to)
	return msgs, err
}

// pgWindowSized is pgWindow with the rows' stored sizes.
func pgWindowSized(ctx context.Context, q pgQuerier, session string, from, to int64) ([]Message, []int64, error) {
	if to < from {
		return nil, nil, nil
	}
	rows, err := q.Query(ctx, "SELECT seq, data FROM transcript_window WHERE session = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq", session, from, to)
	if err != nil {
		return nil, nil, pgErr("read window", session, err)
	}
	defer rows.Close()
	var w windowReader
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, nil, pgErr("read window", session, err)
		}
		if err := w.add(session, from, seq, data); err != nil {
			return nil, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, pgErr("read window", session, err)
	}
	msgs, err := w.done(session, from, to)
	return msgs, w.sizes, err
}

func (s *pgStore) DeleteWindowThrough(ctx context.Context, session string, seq int64) (int64, error) {
	if err := checkSession(session); err != nil {
		return 0, err
	}
	// Under the session's lock, so a Fork that read the session's chunks
	// still finds the rows after them.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, pgErr("delete window", session, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := pgLockSession(ctx, tx, session); err != nil {
		return 0, pgErr("delete window", session, err)
	}
	tag, err := tx.Exec(ctx, "DELETE FROM transcript_window WHERE session = $1 AND seq <= $2", session, seq)
	if err != nil {
		return 0, pgErr("delete window", session, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, pgErr("delete window", session, err)
	}
	return tag.RowsAffected(), nil
}

// storedChunk reads the ref and digest of the chunk at first, inside tx.
func storedChunk(ctx context.Context, tx pgx.Tx, session string, first int64) (ChunkRef, []byte, error) {
	var ref ChunkRef
	var digest []byte
	var retired bool
	err := tx.QueryRow(ctx, "SELECT first_seq, last_seq, count, bytes, digest, retired FROM transcript_chunks WHERE session = $1 AND first_seq = $2",
		session, first).Scan(&ref.First, &ref.Last, &ref.Count, &ref.Bytes, &digest, &retired)
	if err == nil && retired {
		return ChunkRef{}, nil, retiredConflict(session, ChunkRef{First: first})
	}
	return ref, digest, err
}

func (s *pgStore) PutChunk(ctx context.Context, session string, msgs []Message) (ChunkRef, error) {
	if err := checkSession(session); err != nil {
		return ChunkRef{}, err
	}
	data, ref, err := encodeChunk(session, msgs)
	if err != nil {
		return ChunkRef{}, err
	}
	digest := sha256.Sum256(data)
	same := func(stored ChunkRef, storedDigest []byte) (ChunkRef, error) {
		if stored == ref && bytes.Equal(storedDigest, digest[:]) {
			return stored, nil // the same chunk again: a retried Step
		}
		return ChunkRef{}, sameFirstConflict(session, ref, stored)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return ChunkRef{}, pgErr("put chunk", session, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	stored, storedDigest, err := storedChunk(ctx, tx, session, ref.First)
	switch {
	case err == nil:
		return same(stored, storedDigest)
	case errors.Is(err, ErrConflict):
		return ChunkRef{}, err
	case !errors.Is(err, pgx.ErrNoRows):
		return ChunkRef{}, pgErr("put chunk", session, err)
	}
	// Another chunk overlapping this one is a bug. (One at the same
	// first sequence, that a concurrent put committed since the read
	// above, is handled at the insert.)
	var other ChunkRef
	err = tx.QueryRow(ctx, `SELECT first_seq, last_seq FROM transcript_chunks
		WHERE session = $1 AND first_seq <= $2 AND last_seq >= $3 AND first_seq <> $3 ORDER BY first_seq LIMIT 1`,
		session, ref.Last, ref.First).Scan(&other.First, &other.Last)
	switch {
	case err == nil:
		return ChunkRef{}, overlapConflict(session, ref, other)
	case !errors.Is(err, pgx.ErrNoRows):
		return ChunkRef{}, pgErr("put chunk", session, err)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO transcript_chunks (session, first_seq, last_seq, count, bytes, digest, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (session, first_seq) DO NOTHING`,
		session, ref.First, ref.Last, ref.Count, ref.Bytes, digest[:], data)
	if err != nil {
		return ChunkRef{}, pgErr("put chunk", session, err)
	}
	if tag.RowsAffected() == 0 {
		// Another Step put a chunk at first since the check above (a
		// zombie and its retry, say): it is this one, or a conflict.
		stored, storedDigest, err := storedChunk(ctx, tx, session, ref.First)
		if errors.Is(err, ErrConflict) {
			return ChunkRef{}, err
		}
		if err != nil {
			return ChunkRef{}, pgErr("put chunk", session, err)
		}
		return same(stored, storedDigest)
	}
	if err := tx.Commit(ctx); err != nil {
		return ChunkRef{}, pgErr("put chunk", session, err)
	}
	return ref, nil
}

func (s *pgStore) Chunk(ctx context.Context, session string, first int64) ([]Message, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	var ref ChunkRef
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT first_seq, last_seq, count, bytes, data FROM transcript_chunks WHERE session = $1 AND first_seq = $2 AND NOT retired
		UNION ALL
		SELECT c.first_seq, c.last_seq, c.count, c.bytes, c.data FROM transcript_shares s
			JOIN transcript_chunks c ON c.session = s.base AND c.first_seq = $2 AND c.last_seq <= s.last_seq
			WHERE s.fork = $1 AND $2 BETWEEN s.first_seq AND s.last_seq
		LIMIT 1`,
		session, first).Scan(&ref.First, &ref.Last, &ref.Count, &ref.Bytes, &data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("%w: session %q: no chunk starts at %d", ErrNotFound, session, first)
	case err != nil:
		return nil, pgErr("read chunk", session, err)
	}
	return checkChunk(session, ref, data)
}

func scanChunkRefs(rows pgx.Rows) ([]ChunkRef, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ChunkRef, error) {
		var ref ChunkRef
		err := row.Scan(&ref.First, &ref.Last, &ref.Count, &ref.Bytes)
		return ref, err
	})
}

func (s *pgStore) Chunks(ctx context.Context, session string, from, to int64) ([]ChunkRef, error) {
	if err := checkRange(session, from); err != nil || to < from {
		return nil, err
	}
	owned, err := pgResolvedChunks(ctx, s.pool, session, from, to)
	if err != nil {
		return nil, pgErr("list chunks", session, err)
	}
	return chunkRefs(owned), nil
}

func (s *pgStore) DeleteChunks(ctx context.Context, session string, firsts []int64) ([]ChunkRef, error) {
	if err := checkSession(session); err != nil || len(firsts) == 0 {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, pgErr("delete chunks", session, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := pgLockSession(ctx, tx, session); err != nil {
		return nil, pgErr("delete chunks", session, err)
	}
	// Shared chunks are retired, the others deleted; a CTE so the refs
	// come back in order.
	rows, err := tx.Query(ctx, `WITH r AS (UPDATE transcript_chunks c SET retired = true
			WHERE c.session = $1 AND NOT c.retired AND c.first_seq = ANY($2) AND `+pgShared+`
			RETURNING first_seq, last_seq, count, bytes),
		d AS (DELETE FROM transcript_chunks c WHERE c.session = $1 AND NOT c.retired AND c.first_seq = ANY($2) AND NOT `+pgShared+`
			RETURNING first_seq, last_seq, count, bytes)
		SELECT * FROM r UNION ALL SELECT * FROM d ORDER BY first_seq`, session, firsts)
	if err != nil {
		return nil, pgErr("delete chunks", session, err)
	}
	out, err := scanChunkRefs(rows)
	if err != nil {
		return nil, pgErr("delete chunks", session, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, pgErr("delete chunks", session, err)
	}
	return out, nil
}

func (s *pgStore) PutBlob(ctx context.Context, session string, data []byte) (string, error) {
	if err := checkSession(session); err != nil {
		return "", err
	}
	if err := checkBlob(session, data); err != nil {
		return "", err
	}
	ref := blobRef(data)
	if data == nil {
		data = []byte{} // nil is NULL; the column is NOT NULL
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO transcript_blobs (session, ref, stored_at, data) VALUES ($1, $2, $3, $4)
		ON CONFLICT (session, ref) DO UPDATE SET stored_at = EXCLUDED.stored_at WHERE transcript_blobs.stored_at < EXCLUDED.stored_at`,
		session, ref, s.now().UnixMicro(), data); err != nil {
		return "", pgErr("put blob", session, err)
	}
	return ref, nil
}

func (s *pgStore) Blob(ctx context.Context, session, ref string) ([]byte, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	var data []byte
	err := s.pool.QueryRow(ctx, "SELECT data FROM transcript_blobs WHERE session = $1 AND ref = $2", session, ref).Scan(&data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("%w: session %q: blob %s", ErrNotFound, session, ref)
	case err != nil:
		return nil, pgErr("read blob", session, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

func (s *pgStore) SweepBlobs(ctx context.Context, session string, keep []string, cutoff time.Time) ([]string, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	for _, ref := range keep {
		if err := checkRef(ref); err != nil {
			return nil, err
		}
	}
	if keep == nil {
		keep = []string{} // NOT (ref = ANY(NULL)) would match nothing
	}
	rows, err := s.pool.Query(ctx, `WITH d AS (DELETE FROM transcript_blobs WHERE session = $1 AND stored_at < $2 AND NOT (ref = ANY($3))
		RETURNING ref) SELECT ref FROM d ORDER BY ref`, session, cutoff.UnixMicro(), keep)
	if err != nil {
		return nil, pgErr("sweep blobs", session, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, pgErr("sweep blobs", session, err)
	}
	return out, nil
}

func (s *pgStore) DeleteSession(ctx context.Context, session string) (Deleted, error) {
	if err := checkSession(session); err != nil {
		return Deleted{}, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Deleted{}, pgErr("delete session", session, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", pgForkLock); err != nil {
		return Deleted{}, pgErr("delete session", session, err)
	}
	if err := pgLockSession(ctx, tx, session); err != nil {
		return Deleted{}, pgErr("delete session", session, err)
	}
	var d Deleted
	for _, t := range []struct {
		stmt string
		n    *int64
	}{
		{"DELETE FROM transcript_window WHERE session = $1", &d.WindowRows},
		{"UPDATE transcript_chunks c SET retired = true WHERE c.session = $1 AND NOT c.retired AND " + pgShared, nil},
		{"DELETE FROM transcript_chunks c WHERE c.session = $1 AND NOT c.retired", &d.Chunks},
		{"DELETE FROM transcript_blobs WHERE session = $1", &d.Blobs},
		{"DELETE FROM transcript_forks WHERE fork = $1", nil},
		// The session's shares go, and with them the retired chunks
		// that no other fork shares.
		{`DELETE FROM transcript_chunks c WHERE c.retired AND c.session IN (SELECT base FROM transcript_shares WHERE fork = $1)
			AND NOT EXISTS (SELECT 1 FROM transcript_shares s WHERE s.base = c.session AND s.fork <> $1 AND c.first_seq BETWEEN s.first_seq AND s.last_seq)`, nil},
		{"DELETE FROM transcript_shares WHERE fork = $1", nil},
	} {
		tag, err := tx.Exec(ctx, t.stmt, session)
		if err != nil {
			return Deleted{}, pgErr("delete session", session, err)
		}
		if t.n != nil {
			*t.n = tag.RowsAffected()
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Deleted{}, pgErr("delete session", session, err)
	}
	return d, nil
}

func (s *pgStore) Charge(ctx context.Context, c Charge) (bool, error) {
	if err := checkCharge(c); err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO spend_charges (key, agent, token, session, at, model_calls, input_tokens, output_tokens, cost_micros)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (key) DO NOTHING`,
		c.Key, c.Agent, c.Token, c.Session, c.At.UnixMicro(), c.Spend.ModelCalls, c.Spend.InputTokens, c.Spend.OutputTokens, c.Spend.CostMicros)
	if err != nil {
		return false, pgErr("charge", c.Session, err)
	}
	if !s.prune.due(s.now()) {
		return tag.RowsAffected() == 1, nil
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM spend_charges WHERE at < $1", s.now().Add(-SpendRetention).UnixMicro()); err != nil {
		return false, pgErr("prune the charges", c.Session, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *pgStore) Spent(ctx context.Context, scope SpendScope, since time.Time) (Spend, error) {
	if err := scope.check(); err != nil {
		return Spend{}, err
	}
	col, name := "agent", scope.Agent
	if scope.Token != "" {
		col, name = "token", scope.Token
	}
	var sp Spend
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(model_calls), 0)::bigint, COALESCE(SUM(input_tokens), 0)::bigint, COALESCE(SUM(output_tokens), 0)::bigint, COALESCE(SUM(cost_micros), 0)::bigint
		FROM spend_charges WHERE `+col+` = $1 AND at >= $2`, name, since.UnixMicro()).Scan(&sp.ModelCalls, &sp.InputTokens, &sp.OutputTokens, &sp.CostMicros)
	if err != nil {
		return Spend{}, fmt.Errorf("transcript: postgres: sum the spend of %s %q: %w", col, name, err)
	}
	return sp, nil
}

const pgForkColumns = "fork, parent, root, at_seq, from_seq, through_seq, created_at"

func scanPGFork(row pgx.Row) (Fork, error) {
	var f Fork
	var created int64
	if err := row.Scan(&f.Session, &f.Parent, &f.Root, &f.AtSequence, &f.From, &f.Through, &created); err != nil {
		return Fork{}, err
	}
	f.Created = time.UnixMicro(created).UTC()
	return f, nil
}

func (s *pgStore) Fork(ctx context.Context, fork, parent string, at int64) (ForkResult, error) {
	if err := checkFork(fork, parent, at); err != nil {
		return ForkResult{}, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return ForkResult{}, pgErr("fork", fork, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", pgForkLock); err != nil {
		return ForkResult{}, pgErr("fork", fork, err)
	}
	if err := pgLockSession(ctx, tx, parent); err != nil {
		return ForkResult{}, pgErr("fork", fork, err)
	}
	res, err := runFork(pgFork{ctx, tx}, fork, parent, at, s.now())
	if err != nil {
		return ForkResult{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return ForkResult{}, pgErr("fork", fork, err)
	}
	return res, nil
}

// pgFork are Fork's steps in one PostgreSQL transaction, which holds the
// fork lock and the parent's lock.
type pgFork struct {
	ctx context.Context
	tx  pgx.Tx
}

func (t pgFork) existing(fork string) (Fork, bool, error) {
	f, err := scanPGFork(t.tx.QueryRow(t.ctx, "SELECT "+pgForkColumns+" FROM transcript_forks WHERE fork = $1", fork))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Fork{}, false, nil
	case err != nil:
		return Fork{}, false, pgErr("fork", fork, err)
	}
	return f, true, nil
}

func (t pgFork) holds(session string) (bool, error) {
	var used bool
	if err := t.tx.QueryRow(t.ctx, `SELECT EXISTS (SELECT 1 FROM transcript_window WHERE session = $1)
		OR EXISTS (SELECT 1 FROM transcript_chunks WHERE session = $1)`, session).Scan(&used); err != nil {
		return false, pgErr("fork", session, err)
	}
	return used, nil
}

func (t pgFork) chunks(session string, at int64) ([]ownedRef, error) {
	refs, err := pgResolvedChunks(t.ctx, t.tx, session, 1, at)
	if err != nil {
		return nil, pgErr("fork", session, err)
	}
	return refs, nil
}

func (t pgFork) firstRow(session string, at int64) (int64, error) {
	var first sql.NullInt64
	if err := t.tx.QueryRow(t.ctx, "SELECT MIN(seq) FROM transcript_window WHERE session = $1 AND seq <= $2", session, at).Scan(&first); err != nil {
		return 0, pgErr("fork", session, err)
	}
	return first.Int64, nil
}

func (t pgFork) chunkData(owner string, first int64) ([]byte, error) {
	var data []byte
	if err := t.tx.QueryRow(t.ctx, "SELECT data FROM transcript_chunks WHERE session = $1 AND first_seq = $2", owner, first).Scan(&data); err != nil {
		return nil, pgErr("fork", owner, err)
	}
	return data, nil
}

func (t pgFork) window(session string, from, to int64) ([]Message, []int64, error) {
	return pgWindowSized(t.ctx, t.tx, session, from, to)
}

func (t pgFork) root(session string) (string, bool, error) {
	var root string
	err := t.tx.QueryRow(t.ctx, "SELECT root FROM transcript_forks WHERE fork = $1", session).Scan(&root)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, pgErr("fork", session, err)
	}
	return root, true, nil
}

func (t pgFork) insertFork(f Fork) error {
	if _, err := t.tx.Exec(t.ctx, "INSERT INTO transcript_forks ("+pgForkColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7)",
		f.Session, f.Parent, f.Root, f.AtSequence, f.From, f.Through, f.Created.UnixMicro()); err != nil {
		return pgErr("fork", f.Session, err)
	}
	return nil
}

func (t pgFork) insertShare(fork string, sg segment) error {
	if _, err := t.tx.Exec(t.ctx, "INSERT INTO transcript_shares (fork, base, first_seq, last_seq) VALUES ($1, $2, $3, $4)", fork, sg.Base, sg.First, sg.Last); err != nil {
		return pgErr("fork", fork, err)
	}
	return nil
}

func (t pgFork) copyRows(fork, parent string, from, to int64) error {
	if _, err := t.tx.Exec(t.ctx, `INSERT INTO transcript_window (session, seq, gen, attempt, data)
		SELECT $1, seq, 0, 0, data FROM transcript_window WHERE session = $2 AND seq BETWEEN $3 AND $4`, fork, parent, from, to); err != nil {
		return pgErr("fork", fork, err)
	}
	return nil
}

func (t pgFork) insertRows(fork string, seqs []int64, encoded [][]byte) error {
	for i, seq := range seqs {
		if _, err := t.tx.Exec(t.ctx, "INSERT INTO transcript_window (session, seq, gen, attempt, data) VALUES ($1, $2, 0, 0, $3)", fork, seq, encoded[i]); err != nil {
			return pgErr("fork", fork, err)
		}
	}
	return nil
}

func (s *pgStore) ForkOf(ctx context.Context, session string) (Fork, error) {
	if err := checkSession(session); err != nil {
		return Fork{}, err
	}
	f, err := scanPGFork(s.pool.QueryRow(ctx, "SELECT "+pgForkColumns+" FROM transcript_forks WHERE fork = $1", session))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Fork{}, fmt.Errorf("%w: session %q is not a fork", ErrNotFound, session)
	case err != nil:
		return Fork{}, pgErr("read fork", session, err)
	}
	return f, nil
}

func (s *pgStore) Branches(ctx context.Context, root string, limit int) ([]Fork, error) {
	if err := checkSession(root); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT "+pgForkColumns+" FROM transcript_forks WHERE root = $1 ORDER BY created_at, fork LIMIT $2", root, limit)
	if err != nil {
		return nil, pgErr("list branches", root, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Fork, error) { return scanPGFork(row) })
	if err != nil {
		return nil, pgErr("list branches", root, err)
	}
	return out, nil
}
