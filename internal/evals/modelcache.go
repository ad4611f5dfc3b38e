package evals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// ModelCache keeps model answers in a directory, one file per call
// (<key>.json), so that a re-run of a dataset is deterministic and makes
// no model call it made before. It implements steps.ModelCache.
type ModelCache struct {
	Dir string
	// Scope is what besides the turn decides the model's answer: the
	// agent's config and its runner (evalrun sets it). Answers kept under
	// another scope are not used.
	Scope string

	mu           sync.Mutex
	hits, misses int
	err          error
}

// Get returns the answer kept for key.
func (c *ModelCache) Get(key string) (*pluginapi.RunModelStepResponse, bool) {
	b, err := os.ReadFile(c.path(key))
	c.mu.Lock()
	defer c.mu.Unlock()
	var resp pluginapi.RunModelStepResponse
	if err != nil || json.Unmarshal(b, &resp) != nil || (resp.TurnCompleted == nil) == (resp.ToolCallsRequested == nil) {
		c.misses++
		return nil, false
	}
	c.hits++
	return &resp, true
}

// Put keeps an answer. A failure to write is reported by Err; the call's
// answer is used all the same.
func (c *ModelCache) Put(key string, resp *pluginapi.RunModelStepResponse) {
	b, err := json.Marshal(resp)
	if err == nil {
		err = writeFileAtomic(c.path(key), b)
	}
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = fmt.Errorf("model cache %s: %w", c.Dir, err)
		}
		c.mu.Unlock()
	}
}

// path is the file of a call's answer: a hash of the scope and the key.
func (c *ModelCache) path(key string) string {
	sum := sha256.Sum256([]byte(c.Scope + "\x00" + key))
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:])+".json")
}

// Stats are the calls answered from the cache and the ones the model made.
func (c *ModelCache) Stats() (hits, misses int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.err
}

func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".model-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
