// Package proto holds the runner contract, dex/runner/v1/runner.proto, and
// the test vectors every runner SDK replays (testdata/vectors, described
// in its README). It embeds the vectors, so plugin check can send their
// requests to any runner.
package proto

import (
	"embed"
	"io/fs"
	"path"
	"sort"
)

//go:embed testdata/vectors/*.json
var vectors embed.FS

// VectorFiles returns every vector file's name and bytes, by name.
func VectorFiles() (map[string][]byte, error) {
	names, err := fs.Glob(vectors, "testdata/vectors/*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := vectors.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out[path.Base(n)] = b
	}
	return out, nil
}
