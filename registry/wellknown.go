package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardgate/ardgate/attach/a2a"
	"github.com/ardgate/ardgate/guard"
)

// WellKnown is a registry made of what configured hosts publish under
// /.well-known/: an ARD catalog (ai-catalog.json, or ard.json) and an A2A
// agent card (agent-card.json, or agent.json on A2A v0.2 hosts), or the
// cards of a namespace (agentCards). A host may have a path
// (http://host:8083/api/a2a/kagent), under which its well-known paths
// are. It is indexed locally and refreshed by Run.
type WellKnown struct {
	id      string
	hosts   []*remote
	log     *slog.Logger
	index   atomic.Pointer[Index]
	mu      sync.Mutex
	health  map[string]HostHealth
	refresh time.Duration
	// ready closes after the first refresh: searches made at start-up wait
	// for it instead of finding an empty index.
	ready     chan struct{}
	readyOnce sync.Once
}

// HostHealth is the state of one well-known host.
type HostHealth struct {
	Host string `json:"host"`
	OK   bool   `json:"ok"`
	// Entries is what a well-known host published; nil for a registry's
	// host, whose size a search does not tell.
	Entries   *int      `json:"entries,omitempty"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"` // zero: not asked yet
}

// MarshalJSON says a host not asked yet is so, not that it failed: a
// registry listed "ok": false, "checked_at": "0001-01-01T00:00:00Z" until
// its first search.
func (h HostHealth) MarshalJSON() ([]byte, error) {
	type plain HostHealth
	out := struct {
		plain
		OK         *bool      `json:"ok,omitempty"`
		CheckedAt  *time.Time `json:"checked_at,omitempty"`
		NotChecked bool       `json:"not_checked_yet,omitempty"`
	}{plain: plain(h)}
	if h.CheckedAt.IsZero() {
		out.NotChecked = true
	} else {
		out.OK, out.CheckedAt = &h.OK, &h.CheckedAt
	}
	return json.Marshal(out)
}

// NewWellKnown returns a registry over hosts (origins such as
// https://agents.example.com). It holds nothing until Refresh or Run.
func NewWellKnown(id string, hosts []string, o RemoteOptions, log *slog.Logger) (*WellKnown, error) {
	w := &WellKnown{id: id, log: log, health: map[string]HostHealth{}, refresh: 5 * time.Minute, ready: make(chan struct{})}
	for _, h := range hosts {
		o.TTL = -1 // Run decides when to fetch again: answers are not kept
		r, err := newRemote(id, h, o)
		if err != nil {
			return nil, err
		}
		w.hosts = append(w.hosts, r)
	}
	w.index.Store(NewIndex(id, nil))
	return w, nil
}

// ID implements Registry.
func (w *WellKnown) ID() string { return w.id }

// Search implements Registry.
func (w *WellKnown) Search(ctx context.Context, q Query) (Page, error) {
	if err := w.wait(ctx); err != nil {
		return Page{}, err
	}
	return w.index.Load().Search(q)
}

// Lookup implements Registry.
func (w *WellKnown) Lookup(ctx context.Context, urn string) (Entry, error) {
	if err := w.wait(ctx); err != nil {
		return Entry{}, err
	}
	return w.index.Load().Lookup(urn)
}

func (w *WellKnown) wait(ctx context.Context) error {
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("registry %s: hosts not fetched yet: %w", w.id, ctx.Err())
	}
}

// Health returns each host's state from the last refresh.
func (w *WellKnown) Health() []HostHealth {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]HostHealth, 0, len(w.hosts))
	for _, h := range w.hosts {
		out = append(out, w.health[h.base.String()])
	}
	return out
}

// Run refreshes now and then every refresh interval until ctx ends.
func (w *WellKnown) Run(ctx context.Context) {
	t := time.NewTicker(w.refresh)
	defer t.Stop()
	for {
		w.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh fetches every host in parallel and swaps in a new index. A host
// that fails keeps the entries it had, and its health says why.
func (w *WellKnown) Refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fresh := make([][]Entry, len(w.hosts))
	errs := make([]error, len(w.hosts))
	var wg sync.WaitGroup
	for i, h := range w.hosts {
		wg.Go(func() { fresh[i], errs[i] = fetchHost(ctx, h) })
	}
	wg.Wait()

	old := w.index.Load()
	var all []Entry
	w.mu.Lock()
	for i, h := range w.hosts {
		key := h.base.String()
		hh := HostHealth{Host: key, OK: errs[i] == nil, CheckedAt: time.Now()}
		if errs[i] != nil {
			hh.Error = errs[i].Error()
			// Keep what this host published last time, marked down.
			for _, e := range old.Entries() {
				if hostOf(e) == key {
					fresh[i] = append(fresh[i], markedDown(e, errs[i]))
				}
			}
			if w.log != nil {
				w.log.Warn("well-known host failed", "registry", w.id, "host", key, "err", errs[i])
			}
		}
		n := len(fresh[i])
		hh.Entries = &n
		w.health[key] = hh
		all = append(all, fresh[i]...)
	}
	w.mu.Unlock()
	w.index.Store(NewIndex(w.id, all))
	w.readyOnce.Do(func() { close(w.ready) })
}

// HostDownKey is the metadata key of an entry whose well-known host
// failed its last refresh: what failed, cleaned and bounded. The entry is
// what the host published before.
const HostDownKey = "wellKnownHostDown"

// HostDown is why the well-known host of e failed its last refresh; ""
// when it did not, or e is of no well-known host.
func HostDown(e *Entry) string {
	s, _ := e.Metadata[HostDownKey].(string)
	return s
}

// markedDown is e, of a host that failed with err, saying so.
func markedDown(e Entry, err error) Entry {
	e.Metadata = maps.Clone(e.Metadata)
	e.Metadata[HostDownKey] = guard.Text(err.Error(), 300)
	return e
}

// hostOf reads the URL a well-known entry was fetched from.
func hostOf(e Entry) string {
	if s, ok := e.Metadata["wellKnownHost"].(string); ok {
		return s
	}
	return ""
}

// fetchHost reads a host's catalog and agent card; either may be absent,
// but a host publishing neither is an error.
func fetchHost(ctx context.Context, h *remote) ([]Entry, error) {
	var entries []Entry
	var problems []string
	catalog, err := firstFound(ctx, h, "/.well-known/ai-catalog.json", "/.well-known/ard.json")
	switch {
	case err == nil:
		list, skipped, err := LoadCatalogBytes(catalog, h.base.String())
		if err != nil {
			problems = append(problems, err.Error())
		}
		problems = append(problems, skipped...)
		entries = append(entries, list...)
	case !errors.Is(err, ErrNotFound):
		problems = append(problems, err.Error())
	}
	card, err := firstFound(ctx, h, "/.well-known/agent-card.json", "/.well-known/agent.json")
	switch {
	case err == nil:
		for _, c := range agentCards(card) {
			e, cerr := agentCardEntry(h.base, c)
			if cerr != nil {
				problems = append(problems, cerr.Error())
			} else {
				entries = append(entries, e)
			}
		}
	case !errors.Is(err, ErrNotFound):
		problems = append(problems, err.Error())
	}
	entries = boundedHost(entries)
	for i := range entries {
		if entries[i].Metadata == nil {
			entries[i].Metadata = map[string]any{}
		}
		entries[i].Metadata["wellKnownHost"] = h.base.String()
	}
	if len(entries) == 0 {
		if len(problems) == 0 {
			problems = append(problems, "publishes neither /.well-known/ai-catalog.json nor an agent card")
		}
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return entries, nil
}

// maxHostEntries bounds the entries kept of one well-known host: a
// catalog of 8 MiB holds tens of thousands of small ones.
const maxHostEntries = 1000

// boundedHost is what is kept of the entries a host published: the
// first maxHostEntries, each bounded.
func boundedHost(entries []Entry) []Entry {
	out := make([]Entry, 0, min(len(entries), maxHostEntries))
	for _, e := range entries {
		if len(out) == maxHostEntries {
			break
		}
		if e, ok := bounded(e); ok {
			out = append(out, e)
		}
	}
	return out
}

func firstFound(ctx context.Context, h *remote, paths ...string) ([]byte, error) {
	var last error
	for _, p := range paths {
		data, err := h.do(ctx, http.MethodGet, p, nil, nil)
		if err == nil {
			return data, nil
		}
		last = err
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	return nil, last
}

// agentCards are the cards of data, what a host's well-known card path
// published: one card, or the cards of a namespace (openribcage's
// DiscoverFromHost), listed as {"agents": [...]} (OpenFang's GET
// /a2a/agents) or as a bare list.
func agentCards(data []byte) []json.RawMessage {
	var list []json.RawMessage
	if json.Unmarshal(data, &list) == nil {
		return list
	}
	var listing struct {
		Agents []json.RawMessage `json:"agents"`
		Name   string            `json:"name"`
	}
	if json.Unmarshal(data, &listing) == nil && listing.Agents != nil && listing.Name == "" {
		return listing.Agents
	}
	return []json.RawMessage{data}
}

// agentCardEntry makes an entry of an A2A agent card published by host.
// A card that could not be attached (a2a.CardEndpoint) is refused here,
// so that discovery never lists it attachable. Capabilities are the
// skills' ids, and the card's own capabilities when it lists them as
// strings (openribcage's cards).
func agentCardEntry(host *url.URL, data []byte) (Entry, error) {
	var card struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Version     string `json:"version"`
		Skills      []struct {
			ID   string   `json:"id"`
			Name string   `json:"name"`
			Tags []string `json:"tags"`
		} `json:"skills"`
	}
	if err := json.Unmarshal(data, &card); err != nil || card.Name == "" {
		return Entry{}, fmt.Errorf("agent card of %s is malformed or has no name", host)
	}
	slug := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, strings.ToLower(card.Name)), "-")
	e := Entry{
		Identifier:  "urn:air:" + strings.ToLower(host.Hostname()) + ":agent:" + slug,
		DisplayName: card.Name, Type: "application/a2a-agent-card+json", Data: data,
		Description: card.Description, Version: card.Version,
	}
	if _, err := a2a.CardEndpoint(data); err != nil {
		return Entry{}, fmt.Errorf("agent card %q of %s: %w", guard.Text(card.Name, 100), host, err)
	}
	for _, s := range card.Skills {
		e.Capabilities = append(e.Capabilities, s.ID)
		e.Tags = append(e.Tags, s.Tags...)
	}
	e.Capabilities = append(e.Capabilities, a2a.StringCapabilities(data)...)
	if err := checkEntry(&e); err != nil {
		return Entry{}, fmt.Errorf("agent card of %s: %w", host, err)
	}
	return e, nil
}
