package a2a

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard"
)

// CardPaths are where hosts publish their card: v0.3, then v0.2.
var CardPaths = []string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// Dialects an agent may be spoken to in, as config's agents[].dialect
// names them: A2A v1.0 JSON-RPC (v1.go), v0.3 JSON-RPC (v03.go), and the
// tasks/send methods of older agents, OpenFang's and kagent's
// (tasksend.go).
const (
	DialectV1    = "v1"
	DialectV03   = "v0.3"
	DialectTasks = "tasks"
)

// cardInfo is what a card says of how its agent is spoken to.
type cardInfo struct {
	card *a2a.AgentCard
	// v1URL is the card's v1.0 JSON-RPC endpoint when it offers no v0.3
	// one ("" otherwise); card.URL is its v0.3 one.
	v1URL string
	// tasks is set when the card is of an agent that speaks only the
	// tasks/send methods: one without protocol version or interfaces
	// (OpenFang), or one whose endpoint is in endpoints[type=a2a]
	// (kagent), whose methods it lists.
	tasks   bool
	methods []string
}

// endpoint is where the agent is spoken to in the card's dialect.
func (i *cardInfo) endpoint() string { return cmp.Or(i.v1URL, i.card.URL) }

// readCard decodes and validates an agent card. It is lenient where
// agents differ from A2A's card: capabilities as a list of strings
// (openribcage's) are set aside, and an endpoint in endpoints[type=a2a]
// is taken as the card's URL. A card that offers no dialect ardgate
// speaks is refused with the versions it offers.
func readCard(data []byte) (*cardInfo, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fault.NotAttachable("the agent card is malformed: %v", err)
	}
	if c := raw["capabilities"]; len(c) > 0 && c[0] == '[' {
		delete(raw, "capabilities") // strings, read by StringCapabilities
	}
	fixed, _ := json.Marshal(raw)
	info := &cardInfo{card: &a2a.AgentCard{}}
	if err := json.Unmarshal(fixed, info.card); err != nil {
		return nil, fault.NotAttachable("the agent card is malformed: %v", err)
	}
	card := info.card
	if ep, ok := a2aEndpoint(raw["endpoints"]); ok && card.URL == "" {
		card.URL, info.tasks, info.methods = ep.URL, true, ep.Methods
	} else if card.URL == "" {
		var err error
		if info.v1URL, err = pickInterface(data, card); err != nil {
			return nil, err
		}
	} else {
		info.tasks = raw["protocolVersion"] == nil && raw["preferredTransport"] == nil &&
			raw["supportedInterfaces"] == nil && raw["additionalInterfaces"] == nil
	}
	switch {
	case card.Name == "":
		return nil, fault.NotAttachable("the agent card has no name")
	case card.URL == "" && info.v1URL == "":
		return nil, fault.NotAttachable("the agent card has no endpoint url")
	}
	return info, nil
}

// cardEndpoint is one of a card's endpoints[] (openribcage's card).
type cardEndpoint struct {
	Type    string   `json:"type"`
	URL     string   `json:"url"`
	Methods []string `json:"methods"`
}

// a2aEndpoint is the endpoint of type a2a among endpoints, a JSON list.
func a2aEndpoint(endpoints json.RawMessage) (cardEndpoint, bool) {
	var list []cardEndpoint
	_ = json.Unmarshal(endpoints, &list) // no list: no endpoints
	for _, ep := range list {
		if strings.EqualFold(ep.Type, "a2a") && ep.URL != "" {
			return ep, true
		}
	}
	return cardEndpoint{}, false
}

// StringCapabilities are the card's capabilities when it lists them as
// strings (openribcage's cards), cleaned and bounded; nil otherwise.
func StringCapabilities(card []byte) []string {
	var c struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	var list []string
	if json.Unmarshal(card, &c) != nil || json.Unmarshal(c.Capabilities, &list) != nil {
		return nil
	}
	out := make([]string, 0, min(len(list), maxCapabilities))
	for _, s := range list[:min(len(list), maxCapabilities)] {
		if s = guard.Text(s, 100); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// maxCapabilities bounds the string capabilities taken of one card.
const maxCapabilities = 64

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
	info, err := readCard(card)
	if err != nil {
		return "", err
	}
	return info.endpoint(), nil
}
