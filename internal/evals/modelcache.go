package evals

import (
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

	mu           sync.Mutex
	hits, misses int
	err          error
}

// Get returns the answer kept for key.
func (c *ModelCache) Get(key string) (*pluginapi.RunModelStepResponse, bool) {
	b, err := os.ReadFile(filepath.Join(c.Dir, key+".json"))
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
		err = writeFileAtomic(filepath.Join(c.Dir, key+".json"), b)
	}
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = fmt.Errorf("model cache %s: %w", c.Dir, err)
		}
		c.mu.Unlock()
	}
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
