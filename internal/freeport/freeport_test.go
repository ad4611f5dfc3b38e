package freeport

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// TestGetAvoidsTheEphemeralRange: the ports are distinct, free, and below
// the kernel's ephemeral range where it can be read.
func TestGetAvoidsTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d given twice", p)
		}
		seen[p] = true
		if low > minPort+1000 && (p < minPort || p >= low) {
			t.Errorf("port %d is outside %d..%d", p, minPort, low-1)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}

// TestGetAtOnce: goroutines that ask at the same time get distinct ports.
func TestGetAtOnce(t *testing.T) {
	const n = 64
	ports := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := Get()
			if err != nil {
				t.Error(err)
			}
			ports[i] = p
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d given twice", p)
		}
		seen[p] = true
	}
}
