package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/a2afixture"
)

// An agent entry whose card is inline, in its data, naming a loopback
// endpoint, is checked as a remote MCP server's URL is: with
// allow_local_urls off it is listed not attachable, saying why, and its
// attach is refused before any request; with it on it attaches and is up.
// It was listed attachable, attached, and listed up, its endpoint refused
// only at spawn_agent.
func TestInlineAgentCardEndpointChecked(t *testing.T) {
	t.Parallel()
	agent := a2afixture.Start(t)
	card, err := json.Marshal(a2afixture.NewCard(agent.URL + a2afixture.RPCPath))
	if err != nil {
		t.Fatal(err)
	}
	const urn = "urn:air:agents.test:agent:inline"
	entry := registry.Entry{Identifier: urn, DisplayName: "Inline agent", Type: config.MediaA2AAgentCard, Data: card, Description: "an agent whose card is inline"}
	for _, tc := range []struct {
		allowLocal bool
		code, why  string
	}{
		{false, "refused", "the agent card's endpoint: refused by ssrf: 127.0.0.1 is a loopback, private or link-local address (allow_local_urls is off)"},
		{true, "", ""},
	} {
		s := agentGateway(t, tc.allowLocal, entry).connect(t)
		var d struct {
			Results []struct {
				Attachable bool
				Why        string `json:"why_not_attachable"`
			}
		}
		if err := json.Unmarshal(s.call("discover_resources", map[string]any{"text": "inline agent"}).RawStructuredContent, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Results) != 1 || d.Results[0].Attachable != tc.allowLocal || !strings.Contains(d.Results[0].Why, tc.why) {
			t.Fatalf("allow_local_urls %v: discovered %+v", tc.allowLocal, d.Results)
		}
		res := s.call("attach_resource", map[string]any{"urn": urn})
		if got := s.code(res); got != tc.code || !strings.Contains(firstText(res), tc.why) {
			t.Fatalf("allow_local_urls %v: attach: %s %s", tc.allowLocal, got, firstText(res))
		}
		if want := map[bool]string{false: "", true: attach.StatusUp}[tc.allowLocal]; s.statusOf("inline") != want {
			t.Fatalf("allow_local_urls %v: listed %q, want %q", tc.allowLocal, s.statusOf("inline"), want)
		}
	}
}
