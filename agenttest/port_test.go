package agenttest

import (
	"fmt"
	"net"
	"testing"
)

// TestFreePortAvoidsTheEphemeralRange: the ports are distinct, free, and
// below the kernel's ephemeral range where it can be read.
func TestFreePortAvoidsTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d given twice", p)
		}
		seen[p] = true
		if low > minTestPort+1000 && (p < minTestPort || p >= low) {
			t.Errorf("port %d is outside %d..%d", p, minTestPort, low-1)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}
