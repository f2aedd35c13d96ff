package attach

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ardgate/ardgate/attach/a2a"
	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/attach/mcpwire"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// Skill is one skill an attached agent advertises.
type Skill = a2a.Skill

// agentCard returns the card of an A2A entry: inline data, or fetched from
// its URL (a card document, or a host whose well-known path serves one).
func (m *Manager) agentCard(ctx context.Context, e *registry.Entry) ([]byte, error) {
	if len(e.Data) > 0 {
		return e.Data, nil
	}
	return m.fetchCard(ctx, e.URL, false)
}

// fetchCard fetches a card from url: the card itself when url has a
// path, else the well-known paths under it. A URL with a path that is no
// document (404, 405) is also looked under: an agent's URL, as
// openribcage names kagent's agents, whose card is under it. own: the
// operator configured url (client).
func (m *Manager) fetchCard(ctx context.Context, url string, own bool) ([]byte, error) {
	u, err := guard.CheckURL(url)
	if err != nil {
		return nil, err
	}
	if u.Path != "" && u.Path != "/" {
		data, err := m.fetchLimited(ctx, m.client(own), url, maxCardSize)
		var se *statusError
		if err == nil || !errors.As(err, &se) || se.code != http.StatusNotFound && se.code != http.StatusMethodNotAllowed {
			return data, err
		}
		if data, under := m.fetchWellKnown(ctx, url, own); under == nil {
			return data, nil
		}
		return nil, err
	}
	data, err := m.fetchWellKnown(ctx, url, own)
	if err != nil {
		return nil, fmt.Errorf("no agent card at %s: %w", url, err)
	}
	return data, nil
}

// fetchWellKnown fetches the card at the first of the well-known paths
// under url that has one.
func (m *Manager) fetchWellKnown(ctx context.Context, url string, own bool) ([]byte, error) {
	var last error
	for _, p := range a2a.CardPaths {
		data, err := m.fetchLimited(ctx, m.client(own), strings.TrimSuffix(url, "/")+p, maxCardSize)
		if err == nil {
			return data, nil
		}
		last = err
	}
	return nil, last
}

// checkAgentEndpoint is what the guard refuses of the endpoint of an
// agent's card before any lookup, as of a remote MCP server's URL
// (checkEndpoint): a card that names 127.0.0.1 was listed attachable,
// attached and stayed up, its requests refused only once sent. own: the
// operator configured the agent, whose own addresses its client reaches.
func (m *Manager) checkAgentEndpoint(endpoint string, own bool) error {
	if own {
		_, err := guard.CheckURL(endpoint)
		return err
	}
	if err := m.checkEndpoint(endpoint); err != nil {
		return fmt.Errorf("the agent card's endpoint: %w", err)
	}
	return nil
}

// dialAgent validates a card and connects to its agent (a2a.Dialer),
// through the guarded client, in dialect ("": the card's). own: the
// operator configured the agent (client).
func (m *Manager) dialAgent(ctx context.Context, data []byte, own bool, dialect string) (*a2a.Conn, error) {
	d := a2a.Dialer{Check: m.checkAgentEndpoint, HTTP: m.agentHTTP}
	if m.Tracing != nil {
		d.Wrap = func(c a2a.Client, agent string) a2a.Client { return tracedAgent{Client: c, t: m.Tracing, agent: agent} }
	}
	return d.Dial(ctx, data, own, dialect)
}

// agentHTTP returns the client for an agent endpoint: the guarded client,
// its answers capped (mcpwire.Capped), plus the bearer token of a configured
// agent at the same origin, sent to that origin only (also across
// redirects), and the trace context when tracing is on.
func (m *Manager) agentHTTP(endpoint string, own bool) *http.Client {
	c := m.agentClientHTTP(endpoint, m.client(own))
	c.Transport = m.Tracing.Transport(c.Transport)
	return c
}

func (m *Manager) agentClientHTTP(endpoint string, hc *http.Client) *http.Client {
	u, err := url.Parse(endpoint)
	if err != nil {
		return mcpwire.Capped(hc, nil)
	}
	for _, a := range m.Agents {
		au, err := url.Parse(a.URL)
		if err != nil || a.Token == "" || !mcpwire.SameOrigin(au, u) {
			continue
		}
		c := *hc
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = bearerFor{origin: u, token: a.Token, next: next}
		return mcpwire.Capped(&c, nil)
	}
	return mcpwire.Capped(hc, nil)
}

// bearerFor adds a bearer token to requests for one origin only.
type bearerFor struct {
	origin *url.URL
	token  string
	next   http.RoundTripper
}

func (b bearerFor) RoundTrip(r *http.Request) (*http.Response, error) {
	if mcpwire.SameOrigin(r.URL, b.origin) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// reached records how a request to agent a went, for its status: one
// that could not be reached is down until a request or a health check
// reaches it again. Only the health check, once a minute, told: an agent
// that was gone was listed up for a minute, and one back down for as long.
func (a *Attachment) reached(err error) {
	op, down := fault.Unreachable(err)
	if err != nil && !down {
		return // the agent answered, or the request ended for its own reasons
	}
	a.mu.Lock()
	a.unwell = ""
	if down {
		a.unwell = "the last request could not reach it: " + op.Error()
	}
	a.mu.Unlock()
}

// AgentCheckInterval is how often Run checks attached agents.
const AgentCheckInterval = time.Minute

// Run checks the attached agents of every session until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(AgentCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.CheckAgents(ctx)
		}
	}
}

// CheckAgents fetches the card of every attached agent that has a card
// URL and records whether it answered; listings show an agent that did
// not as down, with the reason. A card is fetched once for all the
// attachments of it, a few cards at a time (a2a.FewAtATime): 30 sessions that
// attached one agent sent it 31 requests in the same second.
func (m *Manager) CheckAgents(ctx context.Context) {
	type card struct {
		url string
		own bool // fetched with the operator's client (fetchCard)
	}
	of := map[card][]*Attachment{}
	for _, s := range m.Sessions() {
		for _, a := range s.Attachments() {
			a.mu.Lock()
			check, c := a.agent != nil && a.cardURL != "", card{a.cardURL, a.Pinned}
			a.mu.Unlock()
			if check {
				of[c] = append(of[c], a)
			}
		}
	}
	a2a.FewAtATime(ctx, slices.Collect(maps.Keys(of)), func(c card) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := m.fetchCard(ctx, c.url, c.own)
		for _, a := range of[c] {
			a.mu.Lock()
			a.unwell = ""
			if err != nil {
				a.unwell = "health check failed: " + err.Error()
			}
			a.mu.Unlock()
		}
	})
}
