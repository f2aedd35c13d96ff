package a2a

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/ardgate/ardgate/attach/fault"
)

// CardPaths are where hosts publish their card: v0.3, then v0.2.
var CardPaths = []string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// readCard decodes and validates an agent card: the card, its URL its
// v0.3 JSON-RPC endpoint, and v1URL its v1.0 one when it offers no v0.3
// interface ("" otherwise). A card that offers neither is refused with
// the versions it offers.
func readCard(data []byte) (card *a2a.AgentCard, v1URL string, err error) {
	card = &a2a.AgentCard{}
	if err := json.Unmarshal(data, card); err != nil {
		return nil, "", fault.NotAttachable("the agent card is malformed: %v", err)
	}
	if card.URL == "" {
		if v1URL, err = pickInterface(data, card); err != nil {
			return nil, "", err
		}
	}
	switch {
	case card.Name == "":
		return nil, "", fault.NotAttachable("the agent card has no name")
	case card.URL == "" && v1URL == "":
		return nil, "", fault.NotAttachable("the agent card has no endpoint url")
	}
	return card, v1URL, nil
}

// pickInterface reads the interfaces of a v1.0 card, data: it prefers a
// v0.3 JSON-RPC one (a2a-go), set as card's URL, else returns the v1.0
// JSON-RPC one (v1URL) for our own client. A card that lists no
// interfaces is left as it is.
func pickInterface(data []byte, card *a2a.AgentCard) (v1URL string, err error) {
	var v1 struct {
		SupportedInterfaces []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"supportedInterfaces"`
	}
	_ = json.Unmarshal(data, &v1)
	if len(v1.SupportedInterfaces) == 0 {
		return "", nil
	}
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
		return "", nil
	case v1URL == "":
		return "", fmt.Errorf("%w: the agent offers only %s; ardgate speaks A2A JSON-RPC v0.3 and v1.0", fault.ErrNotImplemented, strings.Join(offered, ", "))
	}
	return v1URL, nil
}

// CardEndpoint is the endpoint Dial would speak to of card, or why the
// card is refused: for discovery, which checks it before any request.
func CardEndpoint(card []byte) (string, error) {
	c, v1URL, err := readCard(card)
	if err != nil {
		return "", err
	}
	return cmp.Or(v1URL, c.URL), nil
}
