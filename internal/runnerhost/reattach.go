package runnerhost

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/go-plugin"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// ParseReattach reads the PID:NETWORK:ADDRESS a runner prints in debug
// mode (such as 4242:unix:/tmp/plugin123 or 4242:tcp:127.0.0.1:40001)
// into go-plugin's reattach configuration. An error names what is wrong.
func ParseReattach(s string) (*plugin.ReattachConfig, error) {
	pidText, rest, ok := strings.Cut(s, ":")
	network, address, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || address == "" {
		return nil, fmt.Errorf("reattach %q: want PID:NETWORK:ADDRESS, as the runner prints it in debug mode (DEX_RUNNER_DEBUG=1)", s)
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("reattach %q: %q is not a process ID", s, pidText)
	}
	var addr net.Addr
	switch network {
	case "unix":
		addr, err = net.ResolveUnixAddr("unix", address)
	case "tcp":
		addr, err = net.ResolveTCPAddr("tcp", address)
	default:
		return nil, fmt.Errorf("reattach %q: network %q, want unix or tcp", s, network)
	}
	if err != nil {
		return nil, fmt.Errorf("reattach %q: %w", s, err)
	}
	return &plugin.ReattachConfig{Protocol: plugin.ProtocolGRPC, ProtocolVersion: pluginapi.ProtocolVersion, Addr: addr, Pid: pid, Test: true}, nil
}
