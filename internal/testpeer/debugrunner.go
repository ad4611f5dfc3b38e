package testpeer

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// StartDebugRunner starts the runner plugin at path by hand in debug mode
// (DEX_RUNNER_DEBUG=1, as a developer does under a debugger), waits for the
// --reattach value it prints, and returns the process and that value
// (PID:NETWORK:ADDRESS). The process is killed when the test ends.
func StartDebugRunner(t testing.TB, path string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), "DEX_RUNNER_DEBUG=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	value := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, v, ok := strings.Cut(sc.Text(), "--reattach NAME="); ok {
				value <- strings.TrimSpace(v)
			}
		}
	}()
	select {
	case v := <-value:
		return cmd, v
	case <-time.After(30 * time.Second):
		t.Fatalf("the runner %s printed no --reattach value in debug mode", path)
		return nil, ""
	}
}
