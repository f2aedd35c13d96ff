package a2a

import (
	"context"
	"net/http"

	"github.com/ardgate/ardgate/attach/fault"
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
// speaks: v0.3 JSON-RPC through a2a-go (v03.go), v1.0 JSON-RPC when the
// card offers only that (v1.go), or tasks/send (tasksend.go) when it is of
// an older agent. dialect, when set (Dialect*), is spoken whatever the
// card says. own: the operator configured the agent.
func (d *Dialer) Dial(ctx context.Context, card []byte, own bool, dialect string) (*Conn, error) {
	info, err := readCard(card)
	if err != nil {
		return nil, err
	}
	if err := d.Check(info.endpoint(), own); err != nil {
		return nil, err
	}
	conn, err := d.dialIn(ctx, info, own, dialect)
	if err != nil {
		return nil, err
	}
	if d.Wrap != nil {
		conn.client = d.Wrap(conn.client, info.card.Name)
	}
	return conn, nil
}

// dialIn connects in dialect, or the card's when it is "". A v0.3 agent
// of the card's choosing falls back to tasks/send on its first message
// when it knows no v0.3 method (fallback).
func (d *Dialer) dialIn(ctx context.Context, info *cardInfo, own bool, dialect string) (*Conn, error) {
	switch {
	case dialect == DialectTasks || dialect == "" && info.tasks:
		return d.dialTasks(info, own), nil
	case dialect == DialectV1:
		return d.dialV1(info.card, info.endpoint(), own), nil
	case dialect == DialectV03 && info.card.URL == "":
		return nil, fault.NotAttachable("the agent card offers no v0.3 endpoint, and agents[].dialect is %q", dialect)
	case dialect == "" && info.v1URL != "":
		return d.dialV1(info.card, info.v1URL, own), nil
	}
	conn, err := d.dialV03(ctx, info.card, own)
	if err != nil || dialect != "" {
		return conn, err
	}
	conn.fallback = &fallback{Client: conn.client, tasks: d.dialTasks(info, own).client}
	conn.client = conn.fallback
	return conn, nil
}

// http is the client for endpoint, the agent's error messages kept
// (agentErrors).
func (d *Dialer) http(endpoint string, own bool) *http.Client {
	c := d.HTTP(endpoint, own)
	c.Transport = agentErrors{next: c.Transport}
	return c
}
