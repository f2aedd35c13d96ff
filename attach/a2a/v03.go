package a2a

import (
	"context"
	"fmt"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/ardgate/ardgate/attach/fault"
)

// dialV03 connects to an agent through a2a-go's client, A2A v0.3
// JSON-RPC: only JSON-RPC, and only through the guarded client, so every
// connection is checked at dial time.
func (d *Dialer) dialV03(ctx context.Context, card *a2a.AgentCard, own bool) (*Conn, error) {
	if card.PreferredTransport == "" {
		card.PreferredTransport = a2a.TransportProtocolJSONRPC
	}
	var ifaces []a2a.AgentInterface
	for _, it := range append([]a2a.AgentInterface{{Transport: card.PreferredTransport, URL: card.URL}}, card.AdditionalInterfaces...) {
		if it.Transport == a2a.TransportProtocolJSONRPC && d.Check(it.URL, own) == nil {
			ifaces = append(ifaces, it)
		}
	}
	if len(ifaces) == 0 {
		return nil, fmt.Errorf("%w: the agent offers no JSON-RPC interface (preferred: %s)", fault.ErrNotImplemented, card.PreferredTransport)
	}
	client, err := a2aclient.NewFromEndpoints(ctx, ifaces,
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(d.http(card.URL, own)),
		a2aclient.WithConfig(a2aclient.Config{Polling: true}))
	if err != nil {
		return nil, fmt.Errorf("connect to agent %s: %w", card.Name, err)
	}
	return &Conn{card: card, client: client, streaming: card.Capabilities.Streaming, protocol: "0.3"}, nil
}
