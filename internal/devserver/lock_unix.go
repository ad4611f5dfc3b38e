//go:build unix

package devserver

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// dirLock is an exclusive advisory lock (flock) on a file in the data
// directory. flock locks belong to the open file description, so a second
// Start on the same directory conflicts even inside the same process.
type dirLock struct{ f *os.File }

func acquireDirLock(path string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, dataFileMode)
	if err != nil {
		return nil, fmt.Errorf("data dir is not writable: cannot create lock file %q: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir is in use by another dev server (lock %q is held)", path)
		}
		return nil, fmt.Errorf("cannot lock %q: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
