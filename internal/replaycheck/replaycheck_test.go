package replaycheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

// recorded is where the repository keeps its recorded session histories.
var recorded = filepath.Join("..", "sessionflow", "testdata", "histories")

func checker(t *testing.T) *Checker {
	t.Helper()
	cfg, err := config.Load(filepath.Join("testdata", "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg)
}

func TestRecordedHistoriesReplay(t *testing.T) {
	hs, err := ReadDir(recorded)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) < 20 {
		t.Fatalf("%d recorded histories; want every one of %s", len(hs), recorded)
	}
	c := checker(t)
	for _, h := range hs {
		// legacy_approval_turn.json ran before sessions recorded their
		// settings: it replays only under the ones it ran with (see
		// sessionflow's TestReplayOfALegacyHistoryNeedsItsOwnSettings).
		if strings.HasPrefix(filepath.Base(h.Name), "legacy_") {
			continue
		}
		if r := c.Check(h); !r.OK() || r.Events == 0 || r.WorkflowType == "" {
			t.Errorf("%s: %+v", h.Name, r)
		}
	}
}

// A history whose Step has another activity type than this build
// schedules (as if the workflow code changed) fails, naming the workflow
// task that scheduled it: the last WorkflowTaskCompleted before it.
func TestAChangedWorkflowIsReportedWithItsEvent(t *testing.T) {
	for _, c := range []struct {
		file, from, to string
		nth            int // which occurrence of from is changed
	}{
		{"approval_turn.json", `"RunModel"`, `"CallTool"`, 1},
		{"approval_turn.json", `"RunModel"`, `"CallTool"`, 2},
		{"plan_turns.json", `"RunModel"`, `"CallTool"`, 3},
		{"store_turns.json", `"CallSingleAttemptTool"`, `"CallTool"`, 1},
	} {
		t.Run(fmt.Sprintf("%s/%s#%d", c.file, c.from, c.nth), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(recorded, c.file))
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			at := -1
			for range c.nth {
				next := strings.Index(text[at+1:], c.from)
				if next < 0 {
					t.Fatalf("%s has fewer than %d %s", c.file, c.nth, c.from)
				}
				at += 1 + next
			}
			bad := text[:at] + c.to + text[at+len(c.from):]
			want := lastCompletedBefore(t, text[:at])
			path := filepath.Join(t.TempDir(), "changed.json")
			if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			h, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := checker(t).Check(h)
			if r.OK() || r.EventID != want {
				t.Fatalf("a changed history: event %d, error %q; want the error at event %d", r.EventID, r.Error, want)
			}
		})
	}
}

// lastCompletedBefore is the ID of the last WorkflowTaskCompleted event
// in a history's JSON text cut short.
func lastCompletedBefore(t *testing.T, text string) int64 {
	t.Helper()
	i := strings.LastIndex(text, `"EVENT_TYPE_WORKFLOW_TASK_COMPLETED"`)
	if i < 0 {
		t.Fatal("no workflow task completed before the change")
	}
	j := strings.LastIndex(text[:i], `"eventId"`)
	var id int64
	if _, err := fmt.Sscanf(strings.TrimLeft(text[j+len(`"eventId"`):], ` :"`), "%d", &id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestWhatCannotBeReplayed(t *testing.T) {
	c := checker(t)
	h, err := ReadFile(filepath.Join(recorded, "approval_turn.json"))
	if err != nil {
		t.Fatal(err)
	}
	cut := &historypb.History{Events: h.History.GetEvents()[1:]}
	if r := c.Check(History{Name: "cut", History: cut}); !strings.Contains(r.Error, "does not begin with WorkflowExecutionStarted") {
		t.Errorf("a history without its start: %+v", r)
	}
	cfg, err := config.Load(filepath.Join("testdata", "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents = cfg.Agents[1:] // TestAgent removed
	if r := New(cfg).Check(h); !strings.Contains(r.Error, "workflow type TestAgent is no agent's flow type in the config (TestAgentHelper)") {
		t.Errorf("a history of a removed agent: %+v", r)
	}
	if _, err := ReadFile(filepath.Join("testdata", "recorded.yaml")); err == nil || !strings.Contains(err.Error(), "not a workflow history in JSON") {
		t.Errorf("a file that is no history: %v", err)
	}
	if _, err := ReadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no *.json history") {
		t.Errorf("an empty directory: %v", err)
	}
}
