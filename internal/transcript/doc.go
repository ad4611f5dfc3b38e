// Package transcript is the message store: it keeps a session's messages
// outside the workflow, so the workflow's state and every payload stay
// small however long the session runs. Open returns a Store backed by
// SQLite (a file of its own, for dev) or PostgreSQL (shared by every
// worker); NewCache puts a per-worker read cache in front of either.
//
//	st, err := transcript.Open(ctx, transcript.Options{Driver: transcript.DriverSQLite, Path: dataDir + "/messages.db"})
//	st = transcript.NewCache(st, 256<<20)
//	defer st.Close()
//
// # How a message moves
//
// Messages of a session have sequences 1, 2, 3... The workflow holds the
// window (the newest message_window_size sequences) and an index of
// chunks, both as small values; the store holds the messages.
//
//  1. A Step that produces messages (a model call, a tool result) writes
//     them with PutWindow, one row per sequence, then returns their
//     sequences. The workflow's commit of that result is what makes them
//     part of the session; rows no commit names are orphans.
//  2. When the window holds message_window_size + message_chunk_size
//     messages, the workflow hands the next storing Step a roll plan:
//     whole chunks of its oldest messages, cut from committed messages
//     only, so every attempt and every later Step cuts the same ones. The
//     Step reads those rows (Window), stores each chunk with PutChunk, and
//     returns the ChunkRefs with its own result. After the workflow
//     commits them it drops the messages from its window, and the next
//     storing Step calls DeleteWindowThrough for the last moved sequence.
//  3. The next model call loads the transcript inside its Step (Read): the
//     chunks from the first retained message on (Chunks, then Chunk each;
//     the cache serves them again on the next call) and the window rows
//     (Window), and hands them to the runner. Large content (a user
//     message the HTTP API stored, a large tool output) travels as a blob
//     reference from PutBlob and is read with Blob.
//
// # Fencing
//
// A window row records its Writer: the Step's Gen (a per-session counter
// the workflow increments for each Step it schedules that stores messages)
// and its attempt. PutWindow replaces a row only for a writer that is not
// older, all rows or none. So a retried attempt rewrites its own rows, and
// a zombie (an older attempt, or an older Step whose worker was cut off and
// still runs) gets ErrFenced and changes nothing the newer writer wrote.
// Chunks need no fence: they are immutable, PutChunk of the same chunk is
// a no-op, and a different one at the same first sequence is ErrConflict.
//
// # Orphans
//
// An orphan is a window row that no committed result names: written by an
// attempt that crashed or timed out before the workflow recorded its
// result, or by a zombie that wrote a sequence the window had already
// moved into a chunk. An orphan above the window's end is overwritten by
// the next Step that stores that sequence (its Gen is higher); one at or
// below a moved sequence is deleted by the next DeleteWindowThrough.
// Readers never see orphans, because they only read ranges the workflow
// committed. Blobs that no committed message references are removed by
// SweepBlobs, with a cutoff that spares blobs on their way to a commit.
//
// # Retention
//
// The workflow decides retention (retained_message_limit): it hands a
// storing Step the sequence before which whole chunks may go, the Step
// deletes the chunks that end before it (DeleteChunks) and reports where
// the first remaining chunk starts, and the workflow records that as
// deleted_before_sequence when the result commits. A Step killed halfway
// leaves chunks that the next Step deletes; readers start at the recorded
// sequence, so they never see a half-deleted range as a hole. Window rows
// are never deleted for retention. DeleteSession removes everything of a
// session.
//
// # Encoding
//
// Messages are stored as the JSON of pluginapi.Message without HTML
// escaping; sizes (EncodedSize, ChunkRef.Bytes, the caps) count those
// bytes. Reads decode strictly: an unknown field, data after the value, or
// sequences out of order are ErrCorrupt. A field added to
// pluginapi.Message therefore needs every worker upgraded before any
// writes it.
package transcript
