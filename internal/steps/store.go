package steps

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/wire"

	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// The Steps' side of the message store (see package transcript and the
// session's window.go): a Step that stores messages first does the store
// work the session planned (delete rolled window rows, cut the planned
// chunks, delete chunks for retention), then its own work, then writes its
// messages as window rows fenced by its Gen and attempt, and returns
// previews. A Step that runs the model loads the transcript from the store.

// blobSweepMargin spares blobs younger than this from a sweep: a blob the
// HTTP API stored for a message on its way to the session, or a running
// Step's output, is not referenced by the session yet.
const blobSweepMargin = time.Hour

func (a *Activities) store() (transcript.Store, error) {
	if a.Store == nil {
		return nil, errors.New("this session keeps its messages in the message store, but the worker has none configured")
	}
	return a.Store, nil
}

// doStoreWork does the planned store work before a Step's own work and
// returns what it did.
func (a *Activities) doStoreWork(ctx context.Context, sessionID string, w *session.StoreWork) (*session.StoreResult, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	out := &session.StoreResult{}
	if w.DeleteThrough > 0 {
		if _, err := st.DeleteWindowThrough(ctx, sessionID, w.DeleteThrough); err != nil {
			return nil, fmt.Errorf("delete the window rows through %d: %w", w.DeleteThrough, err)
		}
	}
	for _, plan := range w.Roll {
		msgs, err := st.Window(ctx, sessionID, plan.First, plan.Last)
		if err != nil {
			return nil, fmt.Errorf("read window rows %d..%d to cut a chunk: %w", plan.First, plan.Last, err)
		}
		if _, err := st.PutChunk(ctx, sessionID, msgs); err != nil {
			return nil, fmt.Errorf("store chunk %d..%d: %w", plan.First, plan.Last, err)
		}
		out.Chunks = append(out.Chunks, plan)
	}
	if w.RetainFrom > 0 {
		// Delete the whole chunks before RetainFrom, then report where the
		// stored messages now begin: the first chunk left that reaches
		// RetainFrom, or RetainFrom itself. An attempt after one that
		// deleted them and died reports the same point.
		from := max(w.DeletedBefore, 1)
		refs, err := st.Chunks(ctx, sessionID, from, w.RetainFrom)
		if err != nil {
			return nil, fmt.Errorf("list chunks for retention: %w", err)
		}
		var firsts []int64
		begin := w.RetainFrom
		for _, r := range refs {
			if r.Last < w.RetainFrom {
				firsts = append(firsts, r.First)
			} else {
				begin = min(begin, r.First)
			}
		}
		if len(firsts) > 0 {
			if _, err := st.DeleteChunks(ctx, sessionID, firsts); err != nil {
				return nil, fmt.Errorf("delete chunks for retention: %w", err)
			}
		}
		if begin > from {
			out.DeletedBefore = begin
		}
	}
	if w.Sweep {
		if _, err := st.SweepBlobs(ctx, sessionID, w.SweepKeep, time.Now().Add(-blobSweepMargin)); err != nil {
			// Blobs left behind only cost space; the next sweep removes them.
			a.stepLogger(ctx, "").Warn("sweep blobs", "error", err)
		}
	}
	if a.Hooks.AfterStoreWork != nil {
		a.Hooks.AfterStoreWork(ctx, sessionID, w, out)
	}
	return out, nil
}

// storeMessages writes a Step's messages as window rows from
// w.NextSequence on and returns their previews.
func (a *Activities) storeMessages(ctx context.Context, sessionID, turnID string, w *session.StoreWork, attempt int32, msgs []pluginapi.FrameworkMessage) ([]session.Entry, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	rows := make([]pluginapi.Message, len(msgs))
	entries := make([]session.Entry, len(msgs))
	for i, m := range msgs {
		rows[i] = pluginapi.Message{
			Sequence: w.NextSequence + int64(i), Role: m.Role, Text: m.Text, Item: m.Item,
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, TurnID: turnID, ToolStatus: m.ToolStatus,
		}
		size := transcript.EncodedSize(rows[i])
		if size > transcript.MaxMessageBytes {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"message %d is %d bytes encoded (its text and framework item); one message may be at most %d", rows[i].Sequence, size, transcript.MaxMessageBytes),
				wire.MessageStoreErrorType, nil)
		}
		e := session.Entry{Message: rows[i], Bytes: int64(size)}
		e.Item = ""
		if len(e.Text) > session.PreviewBytes {
			e.Text, e.Truncated = previewText(e.Text), true
		}
		entries[i] = e
	}
	if len(rows) == 0 {
		return nil, nil
	}
	if err := st.PutWindow(ctx, sessionID, transcript.Writer{Gen: w.Gen, Attempt: attempt}, rows); err != nil {
		if errors.Is(err, transcript.ErrTooLarge) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), wire.MessageStoreErrorType, nil)
		}
		return nil, fmt.Errorf("store messages %d..%d: %w", rows[0].Sequence, rows[len(rows)-1].Sequence, err)
	}
	return entries, nil
}

// loadTranscript reads the messages the runner sees: the chunks of
// [From, WindowFirst-1] and the window rows [WindowFirst, Last].
func (a *Activities) loadTranscript(ctx context.Context, sessionID string, tr *session.Transcript) ([]pluginapi.Message, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	return transcript.Read(ctx, st, sessionID, tr.From, tr.WindowFirst, tr.Last)
}

// blob reads a stored text by reference.
func (a *Activities) blob(ctx context.Context, sessionID, ref string) (string, error) {
	st, err := a.store()
	if err != nil {
		return "", err
	}
	b, err := st.Blob(ctx, sessionID, ref)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", ref, err)
	}
	return string(b), nil
}

// keepLarge stores a text longer than session.PreviewBytes and returns its
// preview and reference; a shorter one comes back as it is.
func (a *Activities) keepLarge(ctx context.Context, sessionID, text string) (preview, ref string, err error) {
	if len(text) <= session.PreviewBytes {
		return text, "", nil
	}
	st, err := a.store()
	if err != nil {
		return "", "", err
	}
	ref, err = st.PutBlob(ctx, sessionID, []byte(text))
	if err != nil {
		if errors.Is(err, transcript.ErrTooLarge) {
			return "", "", temporal.NewNonRetryableApplicationError(err.Error(), wire.MessageStoreErrorType, nil)
		}
		return "", "", fmt.Errorf("store a large text: %w", err)
	}
	return previewText(text), ref, nil
}

// resolveTurn fills a turn's large fields back in from the store: the run
// state and the records' arguments and outputs.
func (a *Activities) resolveTurn(ctx context.Context, in session.TurnInput) (string, []wire.ToolCall, error) {
	runState := in.RunState
	if in.RunStateRef != "" {
		s, err := a.blob(ctx, in.SessionID, in.RunStateRef)
		if err != nil {
			return "", nil, err
		}
		runState = s
	}
	calls := append([]wire.ToolCall(nil), in.ToolCalls...)
	for _, r := range in.Refs {
		for i := range calls {
			if calls[i].ToolCallID != r.ToolCallID {
				continue
			}
			if r.ArgumentsRef != "" {
				s, err := a.blob(ctx, in.SessionID, r.ArgumentsRef)
				if err != nil {
					return "", nil, err
				}
				calls[i].Arguments = s
			}
			if r.OutputRef != "" {
				s, err := a.blob(ctx, in.SessionID, r.OutputRef)
				if err != nil {
					return "", nil, err
				}
				calls[i].Output = s
			}
		}
	}
	return runState, calls, nil
}

// previewText is the beginning of text that the workflow keeps: at most
// session.PreviewBytes, cut at a character boundary.
func previewText(text string) string {
	if len(text) <= session.PreviewBytes {
		return text
	}
	cut := session.PreviewBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}
