package attach

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// Sessions that attach the same server get the same tool listing, and
// share one decoded copy of each of its tools, schemas included, instead
// of keeping one each: with a server of large schemas, most of an
// attachment's memory. A tool listed again as it was is not decoded
// again either. A definition is kept while an upstream's latest listing
// has it. Sessions hold it by pointer, and nothing changes it once
// decoded: the gateway exposes a copy of the struct under another name,
// which shares the rest.
type toolDefs struct {
	mu   sync.Mutex
	defs map[toolKey]*toolDef
}

// toolKey identifies a tool's definition: a hash of its JSON as listed.
type toolKey [sha256.Size]byte

type toolDef struct {
	def  Definition
	refs int // the upstreams whose latest listing has it
}

// Definition is an upstream's own definition of one tool, whole schemas
// included, as the sessions that attached servers listing it share it.
// Nothing changes it once decoded.
type Definition struct {
	mcp.Tool

	// listed is the tool encoded as a tools/list result lists it, made on
	// first use: what comes before the name's value, and after it.
	listed struct {
		once       sync.Once
		head, tail []byte
		err        error
	}
}

// encoded returns the definition as mcp-go's server encodes a tool in a
// tools/list result, cut around the value of its name.
func (d *Definition) encoded() (head, tail []byte, err error) {
	l := &d.listed
	l.once.Do(func() {
		b, err := json.Marshal(d.Tool)
		if err != nil {
			l.err = err
			return
		}
		var name []byte
		_ = jsonrpc.ScanCheckedObject(b, func(member, value []byte) { // encoded just now
			if string(member) == "name" {
				name = value
			}
		})
		if name == nil {
			l.err = fmt.Errorf("tool %s: encoded without its name", d.Name)
			return
		}
		// name is a slice of b: where it starts, from how much of b is
		// left after it.
		start := cap(b) - cap(name)
		l.head, l.tail = b[:start], b[start+len(name):]
	})
	return l.head, l.tail, l.err
}

// take returns the decoded definition of raw, shared with every upstream
// that listed the same bytes and not to be changed, and its key, to give
// back with drop. A nil toolDefs shares nothing.
func (d *toolDefs) take(raw json.RawMessage) (*Definition, toolKey, error) {
	if d == nil { // nothing shared
		t, err := decodeTool(raw)
		return &Definition{Tool: t}, toolKey{}, err
	}
	key := toolKey(sha256.Sum256(raw))
	if t, ok := d.shared(key); ok {
		return t, key, nil
	}
	t, err := decodeTool(raw) // outside the lock: a listing may be large
	if err != nil {
		return nil, key, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if def := d.defs[key]; def != nil { // decoded meanwhile for another
		def.refs++
		return &def.def, key, nil
	}
	if d.defs == nil {
		d.defs = map[toolKey]*toolDef{}
	}
	def := &toolDef{def: Definition{Tool: t}, refs: 1}
	d.defs[key] = def
	return &def.def, key, nil
}

func (d *toolDefs) shared(key toolKey) (*Definition, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	def := d.defs[key]
	if def == nil {
		return nil, false
	}
	def.refs++
	return &def.def, true
}

// drop gives back the definitions of keys; one no upstream lists any more
// goes.
func (d *toolDefs) drop(keys []toolKey) {
	if d == nil || len(keys) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range keys {
		if def := d.defs[k]; def != nil {
			if def.refs--; def.refs <= 0 {
				delete(d.defs, k)
			}
		}
	}
}

// size is how many distinct definitions are kept.
func (d *toolDefs) size() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.defs)
}
