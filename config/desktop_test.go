package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ardgate/ardgate/config"
)

// Everruns' capability config, exactly as its Quick Start writes it
// (shared/seeds/everruns-ard.txt, "1. Enable the capability on an
// agent"): registries with id, url and federation but no kind.
func TestLoadEverrunsQuickStart(t *testing.T) {
	t.Parallel()
	p := writeConfig(t, `{ "registries": [ { "id": "public", "url": "https://agenticresourcediscovery.org/api/v1", "federation": "none" } ], "require_trust": [], "allow_attach_types": ["application/mcp-server+json", "application/a2a-agent-card+json"], "max_attachments": 5, "allow_local_urls": false}`)
	c, err := config.Load(config.Flags{Config: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Registry{ID: "public", Kind: config.KindARD, URL: "https://agenticresourcediscovery.org/api/v1", Federation: "none"}
	if len(c.Registries) != 1 || !registryEqual(c.Registries[0], want) {
		t.Fatalf("registries = %+v, want %+v", c.Registries, want)
	}
	// The older name of the MCP server card's type allows the newer too.
	if !slices.Equal(c.AllowAttachTypes, []string{config.MediaMCPServerOld, config.MediaA2AAgentCard, config.MediaMCPServerCard}) {
		t.Fatalf("allow_attach_types = %v", c.AllowAttachTypes)
	}
	if c.MaxAttachments != 5 || c.AllowLocalURLs || len(c.RequireTrust) != 0 {
		t.Fatalf("config = %+v", c)
	}
}

// What a desktop block holds becomes a pinned server's fields.
func TestLoadDesktopServers(t *testing.T) {
	t.Parallel()
	p := writeConfig(t, `{"mcpServers": {
		"GitHub": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GH}", "MODE": "ro-${env:MODE_SRC}", "EMPTY": "${NOT_SET}"}},
		"linear.app": {"type": "sse", "url": "https://mcp.linear.app/sse", "headers": {"Authorization": "Bearer ${env:LINEAR}"}},
		"off": {"command": "npx", "disabled": true}
	}}`)
	c, err := config.Load(config.Flags{Config: p}, []string{"GH=ghp_1", "MODE_SRC=x", "LINEAR=lin_2", "PATH=/nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 2 {
		t.Fatalf("servers = %+v", c.Servers)
	}
	gh, lin := c.Servers[0], c.Servers[1]
	if gh.Name != "github" || gh.Command != "npx" || !slices.Equal(gh.Args, []string{"-y", "@modelcontextprotocol/server-github"}) ||
		gh.EnvValues["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_1" || gh.EnvValues["MODE"] != "ro-x" || gh.EnvValues["EMPTY"] != "" {
		t.Errorf("github = %+v", gh)
	}
	if lin.Name != "linear_app" || lin.Transport != config.TransportSSE || lin.URL != "https://mcp.linear.app/sse" || lin.Headers["Authorization"] != "Bearer lin_2" {
		t.Errorf("linear = %+v", lin)
	}
	if !slices.ContainsFunc(c.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "mcpServers.GitHub.env.EMPTY: ${NOT_SET} is not set")
	}) {
		t.Errorf("no warning of the unset variable: %q", c.Warnings)
	}
}

// A desktop block's mistakes name the field as the user wrote it.
func TestLoadDesktopServerProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, field string }{
		{"unknown type", `{"mcpServers": {"a": {"type": "ws", "url": "https://x.example"}}}`, "mcpServers.a.type"},
		{"stdio with a url", `{"mcpServers": {"a": {"type": "stdio", "url": "https://x.example"}}}`, "mcpServers.a.type"},
		{"http with a command", `{"servers": {"a": {"type": "http", "command": "npx"}}}`, "servers.a.type"},
		{"VS Code input", `{"servers": {"a": {"command": "npx", "env": {"K": "${input:key}"}}}, "inputs": [{"id": "key", "type": "promptString"}]}`, "servers.a.env.K"},
		{"not a variable", `{"mcpServers": {"a": {"command": "npx", "env": {"K": "${1x}"}}}}`, "mcpServers.a.env.K"},
		{"env name", `{"mcpServers": {"a": {"command": "npx", "env": {"NOT-A-NAME": "v"}}}}`, "mcpServers.a.env"},
		{"env of a url server", `{"mcpServers": {"a": {"url": "https://x.example", "env": {"K": "v"}}}}`, "mcpServers.a.env.K"},
		{"unknown field", `{"mcpServers": {"a": {"command": "npx", "cwd": "/tmp"}}}`, "mcpServers.a.cwd"},
		{"name taken twice", `{"mcpServers": {"my-fs": {"command": "npx"}, "my_fs": {"command": "npx"}}}`, "mcpServers.my_fs.name"},
		{"native env_values of a url server", `{"servers": [{"name": "a", "url": "https://x.example", "env_values": {"K": "v"}}]}`, "servers[0].env_values.K"},
		{"native transport", `{"servers": [{"name": "a", "command": "npx", "transport": "sse"}]}`, "servers[0].transport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(config.Flags{Config: writeConfig(t, tc.body)}, nil)
			if probs := problems(t, err); !hasField(probs, tc.field) {
				t.Fatalf("problems %q do not name %s", probs, tc.field)
			}
		})
	}
}

// Names as users write them become ardgate's; names that cannot are
// still refused with their reason.
func TestLoadNormalisesNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"openfang-agents", "openfang_agents"},
		{"My Server", "my_server"},
		{"a.b--c", "a_b_c"},
		{"files", "files"},
	} {
		p := writeConfig(t, `{"servers": [{"name": "`+tc.in+`", "url": "https://x.example/mcp"}], "agents": [{"name": "`+tc.in+`-agent", "url": "https://a.example"}]}`)
		c, err := config.Load(config.Flags{Config: p}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if c.Servers[0].Name != tc.want || c.Agents[0].Name != tc.want+"_agent" {
			t.Errorf("%q became %q and %q", tc.in, c.Servers[0].Name, c.Agents[0].Name)
		}
	}
}
