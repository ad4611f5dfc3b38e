package daemon

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

// pollModelQueues returns the model queues a process polls, sorted, from
// the --model-queues value spec: "" or "all" for every queue the config
// declares, "none" for none, or a comma-separated list of declared names.
//
// Temporal bounds the calls of a task queue by rate across every worker
// (activities_per_second) and by count per worker
// (max_concurrent_per_worker). Polling a queue from a fixed set of
// processes only is what bounds its calls by count across the deployment:
// at most the set's size times max_concurrent_per_worker run at once.
func pollModelQueues(cfg *config.Config, spec string) ([]string, error) {
	declared := slices.Sorted(maps.Keys(cfg.ModelQueues))
	switch strings.TrimSpace(spec) {
	case "", "all":
		return declared, nil
	case "none":
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("--model-queues %q: an empty name (want all, none, or queue names separated by commas)", spec)
		case name == "all" || name == "none":
			return nil, fmt.Errorf("--model-queues %q: %s stands alone, not in a list of names", spec, name)
		case !slices.Contains(declared, name):
			if len(declared) == 0 {
				return nil, fmt.Errorf("--model-queues %q: the config declares no model_queues", spec)
			}
			return nil, fmt.Errorf("--model-queues %q: model_queues declares no queue %q (it declares %s)", spec, name, strings.Join(declared, ", "))
		case slices.Contains(out, name):
			return nil, fmt.Errorf("--model-queues %q: queue %q is named twice", spec, name)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// unpolledModelQueues returns the declared queues that polled leaves out.
func unpolledModelQueues(cfg *config.Config, polled []string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.ModelQueues)) {
		if !slices.Contains(polled, name) {
			out = append(out, name)
		}
	}
	return out
}
