package registry

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/ardgate/ardgate/config"
)

// Registry is one configured source the gateway searches and attaches from.
type Registry interface {
	// ID is the registry's id from the config.
	ID() string
	// Search ranks the registry's entries against q.
	Search(ctx context.Context, q Query) (Page, error)
	// Lookup returns the entry with that URN, or an error wrapping
	// ErrNotFound.
	Lookup(ctx context.Context, urn string) (Entry, error)
}

// Runner is implemented by registries that refresh in the background
// (well-known hosts); Run returns when ctx ends.
type Runner interface {
	Run(ctx context.Context)
}

// HealthReporter is implemented by registries that reach hosts over the
// network; local catalogs are always reachable.
type HealthReporter interface {
	Health() []HostHealth
}

// ErrUnsupportedKind reports a registry kind this build cannot open.
var ErrUnsupportedKind = errors.New("registry kind not supported by this build")

//go:embed builtin/ai-catalog.json
var builtinCatalog []byte

// BuiltinCatalog returns the embedded catalog document.
func BuiltinCatalog() []byte { return builtinCatalog }

// OpenOptions are what Open needs besides the registry's config.
type OpenOptions struct {
	// HTTP is the gateway's guarded client, for remote registries.
	HTTP *http.Client
	// Log receives warnings about catalog entries left out.
	Log *slog.Logger
	// Version is the gateway's, named in the User-Agent of its requests.
	Version string
}

// OpenAll opens every configured registry, in config order.
func OpenAll(rcs []config.Registry, o OpenOptions) ([]Registry, error) {
	regs := make([]Registry, 0, len(rcs))
	for _, rc := range rcs {
		r, err := Open(rc, o)
		if err != nil {
			return nil, err
		}
		regs = append(regs, r)
	}
	warnShadowed(regs, o.Log)
	return regs, nil
}

// warnShadowed logs each URN that more than one catalog registry holds:
// attach_resource takes it from the first in config order unless its
// registry_id names another, so an operator's copy of a builtin entry
// was passed over in silence.
func warnShadowed(regs []Registry, log *slog.Logger) {
	if log == nil {
		return
	}
	first := map[string]string{} // URN → the registry that has it first
	for _, r := range regs {
		l, ok := r.(*Local)
		if !ok {
			continue
		}
		for _, e := range l.Index().Entries() {
			urn := CanonicalURN(e.Identifier)
			switch at, seen := first[urn]; {
			case !seen:
				first[urn] = l.ID()
			case at != l.ID():
				log.Warn("a URN is in two catalogs: attach_resource takes the first in config order, unless registry_id names the other",
					"urn", urn, "taken_from", at, "passed_over", l.ID())
			}
		}
	}
}

// Open builds the registry a config entry describes. Entries a catalog
// file holds that break the rules are logged and left out.
func Open(rc config.Registry, o OpenOptions) (Registry, error) {
	log := o.Log
	remote := RemoteOptions{HTTP: o.HTTP, Token: rc.Token, Version: o.Version}
	switch rc.Kind {
	case config.KindARD:
		return NewARD(rc.ID, rc.URL, rc.Federation, remote)
	case config.KindMCPRegistry:
		return NewMCPRegistry(rc.ID, rc.URL, remote)
	case config.KindWellKnown:
		return NewWellKnown(rc.ID, rc.Hosts, remote, log)
	case config.KindCatalog:
		var (
			entries []Entry
			skipped []string
			err     error
		)
		// The file's name, not its path: results go to clients, which
		// learnt where the operator keeps files.
		source := "catalog:" + filepath.Base(rc.Path)
		if rc.Path == "" {
			source = "builtin:ai-catalog.json"
			entries, skipped, err = LoadCatalogBytes(builtinCatalog, "builtin")
		} else {
			entries, skipped, err = LoadCatalogFile(rc.Path)
		}
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w", rc.ID, err)
		}
		for _, s := range skipped {
			log.Warn("catalog entry left out", "registry", rc.ID, "problem", s)
		}
		return NewLocal(rc.ID, NewIndex(source, entries)), nil
	default:
		return nil, fmt.Errorf("registry %s: kind %q: %w", rc.ID, rc.Kind, ErrUnsupportedKind)
	}
}

// Local is a registry served from an in-memory index of catalog files.
type Local struct {
	id    string
	index *Index
}

// NewLocal returns a registry named id over index.
func NewLocal(id string, index *Index) *Local { return &Local{id: id, index: index} }

// ID implements Registry.
func (l *Local) ID() string { return l.id }

// Index returns the registry's search index.
func (l *Local) Index() *Index { return l.index }

// Search implements Registry.
func (l *Local) Search(_ context.Context, q Query) (Page, error) { return l.index.Search(q) }

// Lookup implements Registry.
func (l *Local) Lookup(_ context.Context, urn string) (Entry, error) { return l.index.Lookup(urn) }
