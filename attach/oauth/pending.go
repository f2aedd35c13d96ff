package oauth

import (
	"context"
	"net/url"
	"sync"
)

// Pending holds the flows awaiting their redirect back, by state, for
// the listener that receives it. A flow stays until removed, so a
// callback replayed after completion is refused as a reuse.
type Pending struct {
	mu    sync.Mutex
	flows map[string]*Flow
}

// Add holds f until Remove.
func (p *Pending) Add(f *Flow) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.flows == nil {
		p.flows = map[string]*Flow{}
	}
	p.flows[f.state] = f
}

// Remove forgets f, as when its attach ends or gives up waiting.
func (p *Pending) Remove(f *Flow) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.flows, f.state)
}

// Callback completes the flow the query's state names (Flow.Callback);
// a state no flow holds is ErrStateMismatch.
func (p *Pending) Callback(ctx context.Context, q url.Values) (*Flow, *Grant, error) {
	p.mu.Lock()
	f := p.flows[q.Get("state")]
	p.mu.Unlock()
	if f == nil {
		return nil, nil, ErrStateMismatch
	}
	g, err := f.Callback(ctx, q)
	return f, g, err
}
