//go:build !unix

package devserver

import (
	"fmt"
	"os"
)

// dirLock on non-unix systems only checks that the lock file can be created;
// it does not prevent two servers from sharing a data directory.
type dirLock struct{ f *os.File }

func acquireDirLock(path string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, dataFileMode)
	if err != nil {
		return nil, fmt.Errorf("data dir is not writable: cannot create lock file %q: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Close()
	l.f = nil
}
