package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FileGate stops a process at an exact point so a test can act there (kill
// a worker, count calls). The code under test calls Wait, which marks the
// gate reached and blocks until the test releases it; the test calls
// WaitUntilReached, acts, then Release. Gates work across processes: their
// state is files in Dir.
type FileGate struct {
	Dir  string
	Name string
}

func (g FileGate) path(suffix string) string { return filepath.Join(g.Dir, "gate-"+g.Name+"."+suffix) }

// Arm makes the gate stop the next caller of WaitIfArmed.
func (g FileGate) Arm() error { return os.WriteFile(g.path("armed"), nil, 0o644) }

// Armed reports whether the gate is armed.
func (g FileGate) Armed() bool {
	_, err := os.Stat(g.path("armed"))
	return err == nil
}

// Wait marks the gate reached (recording this process's PID) and blocks
// until the test releases it or ctx ends.
func (g FileGate) Wait(ctx context.Context) error {
	if err := os.WriteFile(g.path("reached"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(g.path("release")); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// WaitIfArmed waits at the gate when it is armed; otherwise it returns at once.
func (g FileGate) WaitIfArmed(ctx context.Context) error {
	if !g.Armed() {
		return nil
	}
	return g.Wait(ctx)
}

// Reached reports whether a process reached the gate, and its PID.
func (g FileGate) Reached() (pid int, ok bool) {
	b, err := os.ReadFile(g.path("reached"))
	if err != nil {
		return 0, false
	}
	pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, true
}

// WaitUntilReached waits until a process reached the gate and returns its PID.
func (g FileGate) WaitUntilReached(ctx context.Context) (int, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if pid, ok := g.Reached(); ok {
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("gate %s not reached: %w", g.Name, ctx.Err())
		case <-t.C:
		}
	}
}

// Release lets every waiter, present and future, pass.
func (g FileGate) Release() error { return os.WriteFile(g.path("release"), nil, 0o644) }

// InvocationLog counts real tool and model calls across processes. Each
// record is one appended line, written with O_APPEND in a single write, so
// concurrent writers never interleave.
type InvocationLog struct {
	Path string
	mu   sync.Mutex
}

// Record appends one invocation of kind (such as "tool" or "model") and name.
func (l *InvocationLog) Record(kind, name, detail string) error {
	line := kind + "\t" + name + "\t" + strings.ReplaceAll(detail, "\n", " ") + "\n"
	if len(line) > 4000 {
		return errors.New("invocation record too long")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(line)
	return err
}

// Invocation is one record of an InvocationLog.
type Invocation struct {
	Kind, Name, Detail string
}

// Read returns every record, in order.
func (l *InvocationLog) Read() ([]Invocation, error) {
	f, err := os.Open(l.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Invocation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "\t", 3)
		if len(parts) == 3 {
			out = append(out, Invocation{Kind: parts[0], Name: parts[1], Detail: parts[2]})
		}
	}
	return out, sc.Err()
}

// Count returns how many records have kind and name.
func (l *InvocationLog) Count(kind, name string) int {
	recs, _ := l.Read()
	n := 0
	for _, r := range recs {
		if r.Kind == kind && r.Name == name {
			n++
		}
	}
	return n
}
