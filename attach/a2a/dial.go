package a2a

import (
	"cmp"
	"context"
	"net/http"
)

// Dialer connects to agents from their cards. Its owner supplies the
// policy: which endpoints may be reached, and the HTTP client for each.
type Dialer struct {
	// Check refuses an endpoint before any request to it. own: the
	// operator configured the agent.
	Check func(endpoint string, own bool) error
	// HTTP is the client for requests to endpoint: guarded, its answers
	// capped, with the agent's credentials.
	HTTP func(endpoint string, own bool) *http.Client
	// Wrap, when set, wraps each connection's client (tracing); agent is
	// the card's name.
	Wrap func(c Client, agent string) Client
}

// Dial validates a card and connects to its agent in the dialect it
// speaks: v0.3 JSON-RPC through a2a-go (v03.go), or v1.0 JSON-RPC when the
// card offers only that (v1.go). own: the operator configured the agent.
func (d *Dialer) Dial(ctx context.Context, card []byte, own bool) (*Conn, error) {
	c, v1URL, err := readCard(card)
	if err != nil {
		return nil, err
	}
	if err := d.Check(cmp.Or(v1URL, c.URL), own); err != nil {
		return nil, err
	}
	var conn *Conn
	if v1URL != "" {
		conn = d.dialV1(c, v1URL, own)
	} else if conn, err = d.dialV03(ctx, c, own); err != nil {
		return nil, err
	}
	if d.Wrap != nil {
		conn.client = d.Wrap(conn.client, c.Name)
	}
	return conn, nil
}

// http is the client for endpoint, the agent's error messages kept
// (agentErrors).
func (d *Dialer) http(endpoint string, own bool) *http.Client {
	c := d.HTTP(endpoint, own)
	c.Transport = agentErrors{next: c.Transport}
	return c
}
