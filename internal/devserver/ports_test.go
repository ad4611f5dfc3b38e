package devserver

import (
	"sync"
	"testing"
)

// TestPlansAtOnceShareNoPort: servers that plan their ports at the same
// time in one process (tests in parallel) never get the same port, though
// each plan closes its listeners before its server binds them.
func TestPlansAtOnceShareNoPort(t *testing.T) {
	t.Parallel()
	const n = 16
	plans := make([]portPlan, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { plans[i], errs[i] = planPorts(0, 0) })
	}
	wg.Wait()
	owner := map[int]int{}
	for i, p := range plans {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for _, port := range []int{p.frontend.grpc, p.frontend.membership, p.history.grpc, p.history.membership,
			p.matching.grpc, p.matching.membership, p.worker.grpc, p.worker.membership} {
			if j, ok := owner[port]; ok {
				t.Errorf("port %d is in plan %d and plan %d", port, j, i)
			}
			owner[port] = i
		}
	}
}
