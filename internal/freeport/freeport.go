// Package freeport hands out free loopback TCP ports for servers that bind
// them a moment later: the embedded engine's services, and the test peers
// (PostgreSQL, Redis, the worker's HTTP API in tests). One process never
// gets the same port twice, so servers that start at the same time (tests
// in parallel) never share one.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
)

// minPort is the lowest port Get hands out: above go-plugin's port range
// (PLUGIN_MIN_PORT to PLUGIN_MAX_PORT, 10000 to 25000 by default), where
// runner plugins bind theirs, and below the kernel's ephemeral range, where
// outgoing connections take theirs. A port handed out here is released
// until its server binds it; a plugin starting at that moment must never
// take it (the engine's services panic on a port they cannot bind).
const minPort = 25001

const loopback = "127.0.0.1"

// handedOut are the ports Get gave this process.
var handedOut = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// Get returns a loopback TCP port that was free a moment ago and that
// this process has not handed out before, for a server that binds it soon.
// Where the kernel's ephemeral port range can be read (Linux), the port is
// below it, so an outgoing connection cannot take it as its source port in
// between; elsewhere it is one the kernel picks.
func Get() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if low := ephemeralLow(); low > minPort+1000 {
		for range 500 {
			p := minPort + rand.IntN(low-minPort)
			if handedOut.m[p] {
				continue
			}
			if l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(p))); err == nil {
				_ = l.Close()
				handedOut.m[p] = true
				return p, nil
			}
		}
	}
	for range 500 {
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return 0, fmt.Errorf("freeport: no free port on %s: %w", loopback, err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.m[p] {
			handedOut.m[p] = true
			return p, nil
		}
	}
	return 0, errors.New("freeport: no free port this process has not handed out already")
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
		return 0
	}
	return low
}
