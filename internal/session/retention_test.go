package session

import (
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
)

// TestRetentionDeletesOnlyWhatASummaryCovers: without compaction no
// message is deleted (the model's input is every message); with
// compaction, only chunks at or before the summary's last sequence, and
// never the newest retained_limit messages. Sessions recorded before
// RetentionVersion keep the rule they ran with.
func TestRetentionDeletesOnlyWhatASummaryCovers(t *testing.T) {
	state := func(version int, compaction bool, summaryLast int64) *State {
		s := &State{Options: Options{Version: version, Messages: MessageOptions{
			Store: true, WindowSize: 2, ChunkSize: 2, ChunkMaxBytes: 1000, RetainedLimit: 6,
		}}}
		if compaction {
			s.Options.Compaction = &CompactionPolicy{}
		}
		if summaryLast > 0 {
			s.Summary = &Summary{Generation: 1, FirstSequence: 1, LastSequence: summaryLast}
		}
		s.NextSequence, s.RolledThrough = 41, 38
		for seq := int64(39); seq <= 40; seq++ {
			s.Window = append(s.Window, Entry{Message: contract.Message{Sequence: seq}})
		}
		return s
	}
	for _, tt := range []struct {
		name        string
		version     int
		compaction  bool
		summaryLast int64
		want        int64
	}{
		{"no compaction: nothing is deleted", CurrentVersion, false, 0, 0},
		{"compaction, no summary yet: nothing is deleted", CurrentVersion, true, 0, 0},
		{"compaction: only what the summary covers", CurrentVersion, true, 20, 21},
		{"compaction: never the newest 6", CurrentVersion, true, 38, 35},
		{"an older session without compaction deletes as it ran", RetentionVersion - 1, false, 0, 35},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := state(tt.version, tt.compaction, tt.summaryLast).storeWork()
			if w.RetainFrom != tt.want {
				t.Errorf("retain_from = %d, want %d", w.RetainFrom, tt.want)
			}
		})
	}
}
