package attach

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ardgate/ardgate/config"
)

// A pinned remote server that the config marks stateless is reached
// through one connection that every session shares, instead of one
// connection (an MCP client, its event stream, its upstream session) per
// session. Never by default: an MCP session may carry state the server
// ties to it, and sharing it would mix sessions. What stays per session is
// everything of the gateway's own: the attachment, its exposed tools, the
// calls in flight and their progress (tokens are the gateway's, unique on
// the connection).

// sharedConn is one shared connection and the attachments using it.
type sharedConn struct {
	mu    sync.Mutex // held while dialling, so sessions dial once
	up    *upstream
	tools []*Definition
	users map[*Attachment]*Session
}

// shared returns the live shared connection to p, dialling it if there is
// none or the last one went down, and records a as one of its users.
func (m *Manager) shared(ctx context.Context, p config.Server, s *Session, a *Attachment) (*upstream, []*Definition, error) {
	m.mu.Lock()
	if m.sharedConns == nil {
		m.sharedConns = map[string]*sharedConn{}
	}
	c := m.sharedConns[p.Name]
	if c == nil {
		c = &sharedConn{users: map[*Attachment]*Session{}}
		m.sharedConns[p.Name] = c
	}
	m.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.up == nil || c.up.downReason() != "" {
		if c.up != nil {
			c.up.close()
		}
		c.up, c.tools = nil, nil
		up, tools, err := m.open(ctx, m.pinnedPlan(p), m.Log.With("upstream", p.Name, "shared", true), nil, watch{listsChanged: func() { m.refreshShared(c) }})
		if err != nil {
			return nil, nil, err
		}
		c.up, c.tools = up, tools
	}
	c.users[a] = s
	return c.up, c.tools, nil
}

// release forgets a as a user of its shared connection; the connection
// stays for the other sessions, and new ones.
func (m *Manager) release(a *Attachment) {
	m.mu.Lock()
	c := m.sharedConns[a.Name]
	m.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.users, a)
	c.mu.Unlock()
}

// refreshShared re-lists a shared server's tools, prompts and resources
// once after it said some changed, and gives every session using it the
// new lists.
func (m *Manager) refreshShared(c *sharedConn) {
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	if up == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up.listOffers(ctx)
	list, err := up.listTools(ctx)
	if err != nil {
		m.Log.Warn("re-listing a shared server's tools failed", "err", err)
		return
	}
	c.mu.Lock()
	c.tools = list
	users := maps.Clone(c.users)
	c.mu.Unlock()
	for a, s := range users {
		a.mu.Lock()
		a.tools = a.expose(slices.Clone(list))
		a.mu.Unlock()
		s.changed()
	}
}

// closeShared ends the shared connections, at shutdown.
func (m *Manager) closeShared() {
	m.mu.Lock()
	conns := m.sharedConns
	m.sharedConns = nil
	m.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		if c.up != nil {
			c.up.close()
		}
		c.mu.Unlock()
	}
}
