package devserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	dbFileName   = "temporal.db"
	lockFileName = dbFileName + ".lock"
	// initMarkerSuffix names a marker file that exists while a new database
	// is being created, so a half-initialised temporal.db is recognised.
	initMarkerSuffix = ".init"
)

// openedDBs remembers, per database path, the file this process has opened.
// The server's SQLite plugin caches connections per DSN for the life of the
// process and never closes them, so if the file at a path is replaced while
// the process runs, a restart would silently keep using the old (deleted)
// file. We detect that and fail instead.
var openedDBs = struct {
	sync.Mutex
	m map[string]os.FileInfo
}{m: map[string]os.FileInfo{}}

// checkNotReplaced fails when this process has opened a different file at
// dbPath before (current == nil: any file).
func checkNotReplaced(dbPath string, current os.FileInfo) error {
	openedDBs.Lock()
	defer openedDBs.Unlock()
	prev, ok := openedDBs.m[dbPath]
	if !ok || (current != nil && prev != nil && os.SameFile(prev, current)) {
		return nil
	}
	return fmt.Errorf("devserver: database file %q was removed or replaced since this process opened it; "+
		"the SQLite connection is cached per process, so restart the process to use the new file", dbPath)
}

func rememberDB(dbPath string) {
	fi, err := os.Stat(dbPath)
	if err != nil {
		fi = nil // still remember that a connection may be cached
	}
	openedDBs.Lock()
	defer openedDBs.Unlock()
	openedDBs.m[dbPath] = fi
}

// sqliteHeader is the magic string at the start of every SQLite 3 file.
var sqliteHeader = []byte("SQLite format 3\x00")

// Modes of what the dev server creates: the data dir and every file in it
// are the user's alone (the database holds every session's conversation).
const (
	dataDirMode  fs.FileMode = 0o700
	dataFileMode fs.FileMode = 0o600
)

// prepareDataDir makes sure dir exists and is a directory, and returns its
// absolute path. A new directory is created 0700; an existing one that
// other users may enter is left as it is, with a warning on logger.
func prepareDataDir(dir string, logger *slog.Logger) (string, error) {
	if dir == "" {
		return "", errors.New("devserver: Options.DataDir is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("devserver: data dir %q: %w", dir, err)
	}
	// The path ends up in a SQLite URI ("file:<path>?..."); these characters
	// would be read as URI syntax.
	if strings.ContainsAny(abs, "?#%") {
		return "", fmt.Errorf("devserver: data dir %q: path must not contain '?', '#' or '%%'", abs)
	}
	fi, err := os.Stat(abs)
	switch {
	case err == nil && !fi.IsDir():
		return "", fmt.Errorf("devserver: data dir %q exists and is not a directory", abs)
	case err == nil && fi.Mode().Perm()&0o077 != 0:
		logger.Warn("the data dir is open to other users; it holds every session's conversation",
			"data_dir", abs, "mode", fi.Mode().Perm().String(), "fix", "chmod 700 "+abs)
	}
	if err := os.MkdirAll(abs, dataDirMode); err != nil {
		return "", fmt.Errorf("devserver: cannot create data dir %q: %w", abs, err)
	}
	return abs, nil
}

// sqlConfig is the SQLite store configuration for the database file at path.
func sqlConfig(path string) *config.SQL {
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: path,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "2", // FULL: a committed transaction survives power loss
		},
	}
}

// namespaceConfig builds the persisted namespace record used when the
// namespace does not exist yet.
func namespaceConfig(name string, retention time.Duration, keywordLists []string) (*sqliteschema.NamespaceConfig, error) {
	sas := make(map[string]enumspb.IndexedValueType, len(keywordLists))
	for _, sa := range keywordLists {
		sas[sa] = enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST
	}
	nsc, err := sqliteschema.NewNamespaceConfig(clusterName, name, false, sas)
	if err != nil {
		return nil, err
	}
	nsc.Detail.Config.Retention = durationpb.New(retention)
	return nsc, nil
}

// prepareDatabase creates DataDir/temporal.db with the schema and the
// namespace when it does not exist (or an earlier creation did not finish),
// or checks that the existing file is a SQLite database and adds the
// namespace when missing (the search attributes of an existing namespace are
// reconciled through the API after start). It returns the SQL config the
// server must use and whether the database is new.
func prepareDatabase(dataDir string, ns *sqliteschema.NamespaceConfig) (*config.SQL, bool, error) {
	dbPath := filepath.Join(dataDir, dbFileName)
	cfg := sqlConfig(dbPath)

	fi, statErr := os.Stat(dbPath)
	_, markerErr := os.Stat(dbPath + initMarkerSuffix)
	unfinished := markerErr == nil
	switch {
	case errors.Is(statErr, fs.ErrNotExist) || unfinished ||
		(statErr == nil && fi.Mode().IsRegular() && fi.Size() == 0):
		if err := createDatabase(dbPath, cfg, ns); err != nil {
			return nil, false, err
		}
		return cfg, true, nil
	case statErr != nil:
		return nil, false, fmt.Errorf("devserver: database file %q: %w", dbPath, statErr)
	case !fi.Mode().IsRegular():
		return nil, false, fmt.Errorf("devserver: database file %q is not a regular file", dbPath)
	}

	if err := checkNotReplaced(dbPath, fi); err != nil {
		return nil, false, err
	}
	if err := checkSQLiteFile(dbPath); err != nil {
		return nil, false, err
	}
	err := sqliteschema.CreateNamespaces(cfg, ns)
	rememberDB(dbPath)
	if err != nil {
		return nil, false, fmt.Errorf("devserver: database file %q is unusable (corrupt or not a Temporal database?): %w", dbPath, err)
	}
	return cfg, false, nil
}

// createDatabase creates the schema and the namespace in a new dbPath.
// A marker file exists while this runs, so a creation interrupted by a crash
// is detected and redone on the next start.
func createDatabase(dbPath string, cfg *config.SQL, ns *sqliteschema.NamespaceConfig) error {
	if err := checkNotReplaced(dbPath, nil); err != nil {
		return err
	}
	marker := dbPath + initMarkerSuffix
	if err := os.WriteFile(marker, []byte("schema setup in progress; temporal.db is incomplete while this file exists\n"), dataFileMode); err != nil {
		return fmt.Errorf("devserver: cannot write %q: %w", marker, err)
	}
	for _, p := range []string{dbPath, dbPath + "-wal", dbPath + "-shm", dbPath + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("devserver: cannot remove stale %q: %w", p, err)
		}
	}
	// SQLite creates a database 0644, and its -wal and -shm files with the
	// database's mode: an empty file of mode 0600 is a new database that
	// keeps all three private.
	f, err := os.OpenFile(dbPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, dataFileMode)
	if err != nil {
		return fmt.Errorf("devserver: cannot create database %q: %w", dbPath, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("devserver: cannot create database %q: %w", dbPath, err)
	}
	// From here on the plugin caches a connection to this file.
	defer rememberDB(dbPath)
	if err := sqliteschema.SetupSchema(cfg); err != nil {
		return fmt.Errorf("devserver: cannot create database %q: %w", dbPath, err)
	}
	if err := sqliteschema.CreateNamespaces(cfg, ns); err != nil {
		return fmt.Errorf("devserver: cannot create namespace in %q: %w", dbPath, err)
	}
	if err := os.Remove(marker); err != nil {
		return fmt.Errorf("devserver: cannot remove %q: %w", marker, err)
	}
	return nil
}

// checkSQLiteFile fails clearly when path is not a SQLite 3 database.
func checkSQLiteFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("devserver: cannot open database file %q: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteHeader) {
		return fmt.Errorf("devserver: database file %q is not a SQLite database (corrupt?); move it away to start with a fresh one", path)
	}
	return nil
}
