package devserver

import (
	"testing"

	"go.temporal.io/server/common/dynamicconfig"
)

// The engine has one history shard, so each task queue processor's
// per-shard poll rate is the machine's: the dev config raises it from the
// server's 20 polls/s, at which a workflow task after an activity waited up
// to 50 ms once the limiter's burst was spent.
func TestOneShardPollsAtAMachinesRate(t *testing.T) {
	dc := dynamicConfig()
	for _, key := range []dynamicconfig.Key{
		dynamicconfig.TransferProcessorMaxPollRPS.Key(), dynamicconfig.TimerProcessorMaxPollRPS.Key(),
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(), dynamicconfig.OutboundProcessorMaxPollRPS.Key(),
	} {
		if v, ok := dc[key].(int); !ok || v < 500 {
			t.Errorf("%s = %v, want at least 500 polls/s for the one shard", key, dc[key])
		}
	}
}
