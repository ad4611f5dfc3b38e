package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func transcriptOf(from, through int64) []Message {
	var msgs []Message
	for seq := from; seq <= through; seq++ {
		msgs = append(msgs, Message{Sequence: seq, Role: RoleUser, Text: fmt.Sprintf("m%d", seq), TurnID: "turn-1"})
	}
	return msgs
}

// TestRunModelStepSendsOnlyNewMessages: after a whole transcript, a host
// may send only what is new, naming the messages it sent before; the
// runner sees the whole transcript every time. Messages the plugin does
// not have (another session's, a range past what it was sent, after it
// dropped them) answer ErrTranscriptNotCached, and the runner is not
// called.
func TestRunModelStepSendsOnlyNewMessages(t *testing.T) {
	var seen [][]Message
	m := &mockRunner{RunModelStepF: func(_ context.Context, req *RunModelStepRequest) (*RunModelStepResponse, error) {
		seen = append(seen, req.Turn.Messages)
		if req.Turn.CachedFrom != 0 || req.Turn.CachedThrough != 0 {
			t.Errorf("the runner saw CachedFrom %d, CachedThrough %d", req.Turn.CachedFrom, req.Turn.CachedThrough)
		}
		return &RunModelStepResponse{TurnCompleted: &TurnCompleted{}}, nil
	}}
	c, _ := connect(t, m)
	send := func(session string, msgs []Message, from, through int64) error {
		t.Helper()
		_, err := c.RunModelStep(testContext(t), &RunModelStepRequest{
			Turn: TurnContext{Agent: "a", SessionID: session, TurnID: "turn-1", Attempt: 1, Messages: msgs, CachedFrom: from, CachedThrough: through},
		})
		return err
	}
	if err := send("s1", transcriptOf(1, 4), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := send("s1", transcriptOf(5, 6), 1, 4); err != nil {
		t.Fatal(err)
	}
	// Retention moved the start: the host names the part it still wants.
	if err := send("s1", transcriptOf(7, 7), 3, 6); err != nil {
		t.Fatal(err)
	}
	// Nothing new (a retried attempt).
	if err := send("s1", nil, 3, 7); err != nil {
		t.Fatal(err)
	}
	want := [][]Message{transcriptOf(1, 4), transcriptOf(1, 6), transcriptOf(3, 7), transcriptOf(3, 7)}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("transcripts the runner saw (-want +got):\n%s", diff)
	}
	for _, miss := range []struct {
		name          string
		session       string
		from, through int64
	}{
		{"another session", "s2", 1, 4},
		{"past what was sent", "s1", 3, 9},
		{"before what is kept", "s1", 1, 7},
	} {
		if err := send(miss.session, transcriptOf(miss.through+1, miss.through+1), miss.from, miss.through); !errors.Is(err, ErrTranscriptNotCached) {
			t.Errorf("%s: %v, want ErrTranscriptNotCached", miss.name, err)
		}
	}
	if len(seen) != 4 {
		t.Errorf("the runner was called %d times, want 4 (never for a miss)", len(seen))
	}
	// Messages that do not follow the cached ones are a protocol error.
	if err := send("s1", transcriptOf(9, 9), 3, 7); err == nil || !strings.Contains(err.Error(), "messages start at 9 after cached messages through 7") {
		t.Errorf("a gap after the cached messages: %v", err)
	}
}

// TestTranscriptCacheBoundsItsMemory: past its size the cache drops the
// least recently used session; a transcript larger than the cache, or
// with a hole, is not kept.
func TestTranscriptCacheBoundsItsMemory(t *testing.T) {
	one := messageBytes(&transcriptOf(1, 1)[0])
	c := newTranscriptCache(10 * one)
	c.put("a", transcriptOf(1, 4))
	c.put("b", transcriptOf(1, 4))
	if _, ok := c.get("a", 1, 4); !ok { // a is now the most recent
		t.Fatal("a is not kept")
	}
	c.put("c", transcriptOf(1, 4)) // 12 messages: b goes
	if _, ok := c.get("b", 1, 1); ok {
		t.Error("b, the least recently used, is still kept")
	}
	for _, s := range []string{"a", "c"} {
		if got, ok := c.get(s, 2, 3); !ok || len(got) != 2 || got[0].Sequence != 2 {
			t.Errorf("%s: %v %v", s, got, ok)
		}
	}
	c.put("big", transcriptOf(1, 11))
	if _, ok := c.get("big", 1, 1); ok {
		t.Error("a transcript larger than the cache is kept")
	}
	holed := append(transcriptOf(1, 2), transcriptOf(4, 4)...)
	c.put("holed", holed)
	if _, ok := c.get("holed", 1, 1); ok {
		t.Error("a transcript with a hole is kept")
	}
	// Appending to what get returns never changes what is kept.
	got, _ := c.get("a", 1, 2)
	_ = append(got, Message{Sequence: 99})
	if again, _ := c.get("a", 1, 4); again[2].Sequence != 3 {
		t.Errorf("the kept transcript changed: %v", again)
	}
	if newTranscriptCache(0) != nil {
		t.Error("a cache of 0 bytes is not off")
	}
}
