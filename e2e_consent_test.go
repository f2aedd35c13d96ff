package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/registryfixture"
)

// declining is a user who declines every form, and says what each asked.
type declining chan string

func (d declining) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	d <- req.Params.Message
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

// The config's consent reaches the gateway: by default a package of the
// MCP Registry is asked about, and the user's decline refuses it; with
// consent never, the same user is not asked and it attaches.
func TestConsentConfig(t *testing.T) {
	h, err := registryfixture.MCPRegistry("testdata/registryfixture/versions.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(h)
	defer reg.Close()
	const urn = "urn:air:acme.github.io:mcp:weather-station"
	for _, consent := range []string{"", "never"} {
		cfg := map[string]any{
			"registries":       []any{map[string]any{"id": "mcp", "kind": "mcp-registry", "url": reg.URL}},
			"allow_local_urls": true,
			"stdio":            map[string]any{"allow_from": []string{"mcp"}},
		}
		if consent != "" {
			cfg["consent"] = consent
		}
		user := make(declining, 4)
		g := startStdioClient(t, env(true), []client.ClientOption{client.WithElicitationHandler(user)},
			"--config", writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), cfg))
		if consent == "never" {
			g.ok("attach_resource", map[string]any{"urn": urn}, nil)
			if len(user) > 0 {
				t.Errorf("consent never: the user was asked %q", <-user)
			}
			continue
		}
		msg := g.fails("attach_resource", map[string]any{"urn": urn}, "refused")
		if !strings.Contains(msg, "refused by consent: the user declined to launch "+urn) || len(user) != 1 || !strings.Contains(<-user, "@acme/weather-station@1.1.0") {
			t.Errorf("the default consent: %q", msg)
		}
	}
}
