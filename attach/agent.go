package attach

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// Skill is one skill an attached agent advertises.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// agentConn is one live A2A agent connection.
type agentConn struct {
	card      *a2a.AgentCard
	client    agentClient
	streaming bool
	protocol  string // "0.3" or "1.0"
}

// agentCardPaths are where hosts publish their card: v0.3, then v0.2.
var agentCardPaths = []string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// agentCard returns the card of an A2A entry: inline data, or fetched from
// its URL (a card document, or a host whose well-known path serves one).
func (m *Manager) agentCard(ctx context.Context, e *registry.Entry) ([]byte, error) {
	if len(e.Data) > 0 {
		return e.Data, nil
	}
	return m.fetchCard(ctx, e.URL, false)
}

// fetchCard fetches a card from url; a bare origin is looked up at the
// well-known paths. own: the operator configured url (client).
func (m *Manager) fetchCard(ctx context.Context, url string, own bool) ([]byte, error) {
	u, err := guard.CheckURL(url)
	if err != nil {
		return nil, err
	}
	if u.Path != "" && u.Path != "/" {
		return m.fetchLimited(ctx, m.client(own), url, maxCardSize)
	}
	var last error
	for _, p := range agentCardPaths {
		data, err := m.fetchLimited(ctx, m.client(own), strings.TrimSuffix(url, "/")+p, maxCardSize)
		if err == nil {
			return data, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no agent card at %s: %w", url, last)
}

// readAgentCard decodes and validates an agent card: the card, its URL
// its v0.3 JSON-RPC endpoint, and v1URL its v1.0 one when it offers no
// v0.3 interface ("" otherwise). A card that offers neither is refused
// with the versions it offers.
func readAgentCard(data []byte) (card *a2a.AgentCard, v1URL string, err error) {
	card = &a2a.AgentCard{}
	if err := json.Unmarshal(data, card); err != nil {
		return nil, "", notAttachable("the agent card is malformed: %v", err)
	}
	var v1 struct {
		SupportedInterfaces []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"supportedInterfaces"`
	}
	_ = json.Unmarshal(data, &v1)
	if card.URL == "" && len(v1.SupportedInterfaces) > 0 {
		// A v1.0 card: prefer a v0.3 JSON-RPC interface (a2a-go), else
		// speak v1.0 JSON-RPC with our own client.
		var offered []string
		for _, it := range v1.SupportedInterfaces {
			offered = append(offered, it.ProtocolBinding+" "+it.ProtocolVersion)
			switch {
			case !strings.EqualFold(it.ProtocolBinding, "JSONRPC"):
			case strings.HasPrefix(it.ProtocolVersion, "0.3") && card.URL == "":
				card.URL, card.PreferredTransport = it.URL, a2a.TransportProtocolJSONRPC
			case strings.HasPrefix(it.ProtocolVersion, "1.") && v1URL == "":
				v1URL = it.URL
			}
		}
		switch {
		case card.URL != "":
			v1URL = ""
		case v1URL == "":
			return nil, "", fmt.Errorf("%w: the agent offers only %s; ardgate speaks A2A JSON-RPC v0.3 and v1.0", ErrNotImplemented, strings.Join(offered, ", "))
		}
	}
	switch {
	case card.Name == "":
		return nil, "", notAttachable("the agent card has no name")
	case card.URL == "" && v1URL == "":
		return nil, "", notAttachable("the agent card has no endpoint url")
	}
	return card, v1URL, nil
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

// dialAgent validates a card and builds the client for it. It speaks A2A
// v0.3 JSON-RPC through the guarded client, or v1.0 JSON-RPC when the
// card offers only that (readAgentCard). own: the operator configured
// the agent (client).
func (m *Manager) dialAgent(ctx context.Context, data []byte, own bool) (*agentConn, error) {
	card, v1URL, err := readAgentCard(data)
	if err != nil {
		return nil, err
	}
	if err := m.checkAgentEndpoint(cmp.Or(v1URL, card.URL), own); err != nil {
		return nil, err
	}
	if v1URL != "" {
		return m.dialV1(card, v1URL, own)
	}
	if card.PreferredTransport == "" {
		card.PreferredTransport = a2a.TransportProtocolJSONRPC
	}
	// Only JSON-RPC, and only through the guarded client: every
	// connection is checked at dial time.
	var ifaces []a2a.AgentInterface
	for _, it := range append([]a2a.AgentInterface{{Transport: card.PreferredTransport, URL: card.URL}}, card.AdditionalInterfaces...) {
		if it.Transport == a2a.TransportProtocolJSONRPC && m.checkAgentEndpoint(it.URL, own) == nil {
			ifaces = append(ifaces, it)
		}
	}
	if len(ifaces) == 0 {
		return nil, fmt.Errorf("%w: the agent offers no JSON-RPC interface (preferred: %s)", ErrNotImplemented, card.PreferredTransport)
	}
	client, err := a2aclient.NewFromEndpoints(ctx, ifaces,
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(m.agentHTTP(card.URL, own)),
		a2aclient.WithConfig(a2aclient.Config{Polling: true}))
	if err != nil {
		return nil, fmt.Errorf("connect to agent %s: %w", card.Name, err)
	}
	return &agentConn{card: card, client: m.traced(client, card.Name), streaming: card.Capabilities.Streaming, protocol: "0.3"}, nil
}

// dialV1 connects to an agent through its v1.0 JSON-RPC interface, at
// endpoint, checked.
func (m *Manager) dialV1(card *a2a.AgentCard, endpoint string, own bool) (*agentConn, error) {
	card.URL = endpoint
	return &agentConn{card: card, client: m.traced(&v1Client{url: endpoint, http: m.agentHTTP(endpoint, own)}, card.Name),
		streaming: card.Capabilities.Streaming, protocol: "1.0"}, nil
}

// traced is c, each request to the agent named traced when tracing is on.
func (m *Manager) traced(c agentClient, agent string) agentClient {
	if m.Tracing == nil {
		return c
	}
	return tracedAgent{agentClient: c, t: m.Tracing, agent: agent}
}

// agentHTTP returns the client for an agent endpoint: the guarded client,
// its answers capped (capped.go), plus the bearer token of a configured
// agent at the same origin, sent to that origin only (also across
// redirects), the trace context when tracing is on, and the agent's
// error messages kept (agentErrors).
func (m *Manager) agentHTTP(endpoint string, own bool) *http.Client {
	c := m.agentClientHTTP(endpoint, m.client(own))
	c.Transport = agentErrors{next: m.Tracing.Transport(c.Transport)}
	return c
}

func (m *Manager) agentClientHTTP(endpoint string, hc *http.Client) *http.Client {
	u, err := url.Parse(endpoint)
	if err != nil {
		return capped(hc, nil)
	}
	for _, a := range m.Agents {
		au, err := url.Parse(a.URL)
		if err != nil || a.Token == "" || !sameOrigin(au, u) {
			continue
		}
		c := *hc
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = bearerFor{origin: u, token: a.Token, next: next}
		return capped(&c, nil)
	}
	return capped(hc, nil)
}

// bearerFor adds a bearer token to requests for one origin only.
type bearerFor struct {
	origin *url.URL
	token  string
	next   http.RoundTripper
}

func (b bearerFor) RoundTrip(r *http.Request) (*http.Response, error) {
	if sameOrigin(r.URL, b.origin) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// skills lists the card's skills, text sanitised: it is registry data.
func (c *agentConn) skills() []Skill {
	out := make([]Skill, 0, len(c.card.Skills))
	for _, s := range c.card.Skills {
		sk := Skill{ID: guard.Text(s.ID, 100), Name: guard.Text(s.Name, 120), Description: guard.Text(s.Description, 300)}
		for _, t := range s.Tags {
			sk.Tags = append(sk.Tags, guard.Text(t, 60))
		}
		out = append(out, sk)
	}
	return out
}

func (c *agentConn) close() {
	if c.client != nil {
		_ = c.client.Destroy()
	}
}

// reached records how a request to agent a went, for its status: one
// that could not be reached is down until a request or a health check
// reaches it again. Only the health check, once a minute, told: an agent
// that was gone was listed up for a minute, and one back down for as long.
func (a *Attachment) reached(err error) {
	op, down := unreachable(err)
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
// attachments of it, agentRequestsAtOnce cards at a time: 30 sessions that
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
	fewAtATime(ctx, slices.Collect(maps.Keys(of)), func(c card) {
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
