package devserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Reset empties a data dir, as dev --reset does: the Temporal database (every
// session) and everything else in it, such as the message store and a demo's
// files, so that the next Start begins anew. It refuses while a dev server
// runs on the directory (where flock exists), and it refuses a directory that
// holds files but no temporal.db: that is not a data dir, and nothing in it
// is removed. A missing directory is left missing.
func Reset(dir string) error {
	if dir == "" {
		return errors.New("devserver: reset: the data dir is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("devserver: reset %q: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("devserver: reset %q: %w", abs, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(abs, dbFileName)); err != nil {
		return fmt.Errorf("devserver: reset %q: it has no %s, so it is not a dev data dir; nothing was removed", abs, dbFileName)
	}
	lock, err := acquireDirLock(filepath.Join(abs, lockFileName))
	if err != nil {
		return fmt.Errorf("devserver: reset %q: %w; stop it first", abs, err)
	}
	defer lock.release()
	// This process must not open a new database at the same path while it
	// holds a cached connection to the old one (see checkNotReplaced).
	if err := checkNotReplaced(filepath.Join(abs, dbFileName), nil); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == lockFileName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(abs, e.Name())); err != nil {
			return fmt.Errorf("devserver: reset %q: %w", abs, err)
		}
	}
	return nil
}
