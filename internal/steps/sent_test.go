package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// cachingRunner plays a plugin with capability TranscriptCache: it keeps
// what it was sent per session, answers ErrTranscriptNotCached for a range
// it does not have, and records what each call carried.
type cachingRunner struct {
	pluginapi.Runner
	mu    sync.Mutex
	kept  map[string][]pluginapi.Message
	calls []string // "cached=<from>..<through> sent=<first>..<last> whole=<first>..<last>"
}

func (r *cachingRunner) RunModelStep(_ context.Context, req *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs := req.Turn.Messages
	call := fmt.Sprintf("cached=%d..%d sent=%s", req.Turn.CachedFrom, req.Turn.CachedThrough, span(msgs))
	if req.Turn.CachedThrough > 0 {
		kept := r.kept[req.Turn.SessionID]
		if len(kept) == 0 || kept[0].Sequence > req.Turn.CachedFrom || kept[len(kept)-1].Sequence < req.Turn.CachedThrough {
			r.calls = append(r.calls, call+" miss")
			return nil, pluginapi.ErrTranscriptNotCached
		}
		first := kept[0].Sequence
		msgs = append(append([]pluginapi.Message(nil), kept[req.Turn.CachedFrom-first:req.Turn.CachedThrough-first+1]...), msgs...)
	}
	r.kept[req.Turn.SessionID] = msgs
	r.calls = append(r.calls, call+" whole="+span(msgs))
	return &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{
		NewMessages: []pluginapi.FrameworkMessage{{Role: pluginapi.RoleAssistant, Text: "ok"}},
	}}, nil
}

func span(msgs []pluginapi.Message) string {
	if len(msgs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%d..%d", msgs[0].Sequence, msgs[len(msgs)-1].Sequence)
}

type cachingRunners struct{ r *cachingRunner }

func (c cachingRunners) Runner(string) (pluginapi.Runner, pluginapi.Capabilities, error) {
	return c.r, pluginapi.Capabilities{TranscriptCache: true}, nil
}

// TestModelCallsSendOnlyNewMessages: the first model call of a session
// sends its whole transcript; later ones read from the store and send only
// the messages the plugin was not sent; a plugin that lost them gets the
// whole transcript again; retention moving the start is named, not sent.
func TestModelCallsSendOnlyNewMessages(t *testing.T) {
	ctx := context.Background()
	st, err := transcript.Open(ctx, transcript.Options{Driver: transcript.DriverSQLite, Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := &cachingRunner{kept: map[string][]pluginapi.Message{}}
	a := &Activities{Runners: cachingRunners{r}, Store: st}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(a.RunModel, activity.RegisterOptions{Name: "RunModel"})

	var gen int64
	// call stores user message last-1 (as BuildUserMessage would) and runs
	// a model call over from..last; the model's answer is message last+1.
	call := func(from, last int64) {
		t.Helper()
		gen++
		user := pluginapi.Message{Sequence: last, Role: pluginapi.RoleUser, Text: fmt.Sprint("u", last), TurnID: "turn-1"}
		if err := st.PutWindow(ctx, "s1", transcript.Writer{Gen: gen, Attempt: 1}, []pluginapi.Message{user}); err != nil {
			t.Fatal(err)
		}
		gen++
		in := session.TurnInput{Agent: "a", SessionID: "s1", TurnID: "turn-1",
			Store: &session.StoreWork{Gen: gen, NextSequence: last + 1}, Transcript: &session.Transcript{From: from, WindowFirst: 1, Last: last}}
		if _, err := env.ExecuteActivity("RunModel", in); err != nil {
			t.Fatal(err)
		}
	}
	call(1, 1)
	call(1, 3)
	call(1, 5)
	delete(r.kept, "s1") // the plugin restarted
	call(1, 7)
	call(5, 9) // retention deleted 1..4
	want := []string{
		"cached=0..0 sent=1..1 whole=1..1",
		"cached=1..1 sent=2..3 whole=1..3",
		"cached=1..3 sent=4..5 whole=1..5",
		"cached=1..5 sent=6..7 miss",
		"cached=0..0 sent=1..7 whole=1..7",
		"cached=5..7 sent=8..9 whole=5..9",
	}
	if fmt.Sprint(r.calls) != fmt.Sprint(want) {
		t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(r.calls, "\n  "), strings.Join(want, "\n  "))
	}
}
