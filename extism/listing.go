package extism

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// listings caches what a plugin's list_tools answers, per module and
// configuration. Every tool of a multi-tool plugin (the six filesystem
// tools share one module) would otherwise instantiate the plugin at load
// just to read the same list, and a one-shot host (host call) would pay for
// compiling every tool it never calls. With a cache directory the answer is
// kept beside the transformed module, so a warm start instantiates nothing
// until the first call.
type listings struct {
	mu sync.Mutex
	m  map[string][]byte
}

// listingKey names a module's listing: its transform key and its
// configuration (a plugin may list tools according to its config).
func listingKey(t *wasmTool) string {
	keys := make([]string, 0, len(t.spec.Source.Config))
	for k := range t.spec.Source.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cfg := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		cfg = append(cfg, k, t.spec.Source.Config[k])
	}
	b, _ := json.Marshal(cfg)
	return sha256Hex([]byte(t.key + "\x00" + string(b)))
}

// listTools returns the list_tools output of t's plugin, from the cache
// when possible; otherwise it compiles t and runs list_tools once.
func (a *Adapter) listTools(ctx context.Context, t *wasmTool) ([]byte, error) {
	key := listingKey(t)
	a.lists.mu.Lock()
	if out, ok := a.lists.m[key]; ok {
		a.lists.mu.Unlock()
		return out, nil
	}
	a.lists.mu.Unlock()
	var file string
	if a.modDir != "" {
		file = filepath.Join(a.modDir, key+".tools.json")
		if out, err := os.ReadFile(file); err == nil && json.Valid(out) {
			a.remember(key, out)
			return out, nil
		}
	}
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	out, _, _, err := t.run(ctx, nil, exportListTools, []byte(`{}`))
	if err != nil {
		return nil, err
	}
	a.remember(key, out)
	if file != "" && json.Valid(out) {
		if err := writeFileAtomic(file, out); err != nil {
			a.log.Warn("caching list_tools", "file", file, "error", err)
		}
	}
	return out, nil
}

func (a *Adapter) remember(key string, out []byte) {
	a.lists.mu.Lock()
	defer a.lists.mu.Unlock()
	if a.lists.m == nil {
		a.lists.m = map[string][]byte{}
	}
	a.lists.m[key] = out
}
