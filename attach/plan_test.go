package attach

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

func TestPlanFor(t *testing.T) {
	env := map[string]string{"PATH": "/usr/bin", "API_KEY": "k", "SECRET": "s"}
	policy := &guard.Stdio{
		AllowFrom: []string{"builtin"}, Launchers: []string{"npx", "uvx"}, PassEnv: []string{"API_KEY"},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	npm := func(extra string) string {
		return `{"packages":[{"registryType":"npm","identifier":"@scope/srv","version":"1.2.3","runtimeHint":"npx","transport":{"type":"stdio"}` + extra + `}]}`
	}
	cases := []struct {
		name, card, registry string
		wantArgs             []string
		wantURL              string
		wantErr              string
		wantUnset            []string
		wantKeys             []keySpec
		wantFraming          string
	}{
		{name: "npm package", card: npm(""), wantArgs: []string{"-y", "--", "@scope/srv@1.2.3"}},
		{name: "npm args", card: npm(`,"packageArguments":[{"type":"positional","value":"/srv"},{"type":"named","name":"--port","value":"9"},{"type":"positional","valueHint":"dir"}]`),
			wantArgs: []string{"-y", "--", "@scope/srv@1.2.3", "/srv", "--port", "9"}},
		{name: "pypi package", card: `{"packages":[{"registryType":"pypi","identifier":"mcp-server-time","version":"0.6.2"}]}`, wantArgs: []string{"mcp-server-time==0.6.2"}},
		{name: "remote preferred", card: npm("")[:len(npm(""))-1] + `,"remotes":[{"type":"sse","url":"https://a.example/sse"},{"type":"streamable-http","url":"https://a.example/mcp"}]}`, wantURL: "https://a.example/mcp"},
		{name: "refused remote falls back to package", card: `{"remotes":[{"type":"streamable-http","url":"ftp://a.example/mcp"}],` + npm("")[1:], wantArgs: []string{"-y", "--", "@scope/srv@1.2.3"}},
		{name: "tools only", card: `{"tools":[{"name":"x"}]}`, wantErr: "lists tools but gives no endpoint"},
		{name: "nothing", card: `{}`, wantErr: "no endpoint"},
		{name: "runtime arguments", card: npm(`,"runtimeArguments":[{"type":"positional","value":"-c"}]`), wantErr: "runtimeArguments"},
		{name: "option smuggling", card: `{"packages":[{"registryType":"npm","identifier":"-e=evil","version":"1"}]}`, wantErr: "not a valid npm package name"},
		{name: "a named argument holding its value too (the seed's shape)", card: npm(`,"packageArguments":[{"type":"named","name":"--actors a/b,c/d","value":"--actors a/b,c/d","isRequired":true}]`),
			wantArgs: []string{"-y", "--", "@scope/srv@1.2.3", "--actors", "a/b,c/d"}},
		{name: "your-x placeholder", card: npm(`,"packageArguments":[{"type":"named","name":"--apiClientId your-atlas-client-id","value":"--apiClientId your-atlas-client-id","isRequired":true}]`),
			wantErr: "needs argument --apiClientId"},
		{name: "$VARIABLE placeholder", card: npm(`,"packageArguments":[{"type":"named","name":"--directory","value":"$REPOSITORY_DIRECTORY","isRequired":true}]`),
			wantErr: "needs argument --directory"},
		{name: "<x> in a value", card: npm(`,"packageArguments":[{"type":"named","name":"--directory <absolute_path_to_folder>","value":"--directory <absolute_path_to_folder>","isRequired":true}]`),
			wantErr: "needs argument --directory"},
		{name: "required placeholder argument", card: npm(`,"packageArguments":[{"type":"positional","value":"${input:dir}","isRequired":true,"valueHint":"dir"}]`), wantErr: "needs argument dir"},
		{name: "required env passed through", card: npm(`,"environmentVariables":[{"name":"API_KEY","isRequired":true}]`), wantArgs: []string{"-y", "--", "@scope/srv@1.2.3"}},
		{name: "required env not passed: asked of the user", card: npm(`,"environmentVariables":[{"name":"SECRET","isRequired":true,"description":"the \u001b[31mkey"},{"name":"SECRET","isRequired":true},{"name":"REGION","isRequired":true,"isSecret":false}]`),
			wantArgs: []string{"-y", "--", "@scope/srv@1.2.3"}, wantKeys: []keySpec{{Name: "SECRET", Label: "the [31mkey", Secret: true}, {Name: "REGION"}}},
		{name: "required launcher variable not passed", card: npm(`,"environmentVariables":[{"name":"NODE_OPTIONS","isRequired":true},{"name":"SECRET","isRequired":true}]`), wantErr: "needs environment variables NODE_OPTIONS;"},
		{name: "declared env not passed", card: npm(`,"environmentVariables":[{"name":"GITHUB_TOKEN","description":"your_github_token"},{"name":"API_KEY"},{"name":"LEVEL","default":"info"},{"name":"GITHUB_TOKEN"},{"name":"$(rm -rf)"}]`),
			wantArgs: []string{"-y", "--", "@scope/srv@1.2.3"}, wantUnset: []string{"GITHUB_TOKEN"}},
		{name: "content-length framing", card: `{"packages":[{"registryType":"npm","identifier":"@scope/srv","version":"1.2.3","transport":{"type":"stdio","framing":"content-length"}}]}`,
			wantArgs: []string{"-y", "--", "@scope/srv@1.2.3"}, wantFraming: "content-length"},
		{name: "unknown framing", card: `{"packages":[{"registryType":"npm","identifier":"@scope/srv","version":"1.2.3","transport":{"type":"stdio","framing":"morse"}}]}`, wantErr: `framing "morse"`},
		{name: "registry not allowed", card: npm(""), registry: "remote-reg", wantErr: "stdio.allow_from"},
		{name: "oci", card: `{"packages":[{"registryType":"oci","identifier":"ghcr.io/x/y"}]}`, wantErr: "cannot be launched"},
		{name: "other runtime", card: `{"packages":[{"registryType":"npm","identifier":"x","runtimeHint":"bunx"}]}`, wantErr: `runtime "bunx"`},
		{name: "remote needs header", card: `{"remotes":[{"type":"streamable-http","url":"https://a.example/mcp","headers":[{"name":"Authorization","isRequired":true,"value":"Bearer {token}"}]}]}`, wantErr: "needs header Authorization"},
		{name: "remote fixed header", card: `{"remotes":[{"type":"streamable-http","url":"https://a.example/mcp","headers":[{"name":"X-Team","value":"a"}]}]}`, wantURL: "https://a.example/mcp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var card serverCard
			if err := json.Unmarshal([]byte(c.card), &card); err != nil {
				t.Fatalf("bad test card: %v", err)
			}
			reg := c.registry
			if reg == "" {
				reg = "builtin"
			}
			p, err := planFor(&card, reg, policy)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, ErrNotAttachable) {
					t.Fatalf("err = %v, want ErrNotAttachable saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.wantURL != "" {
				if p.URL != c.wantURL {
					t.Fatalf("url %q, want %q", p.URL, c.wantURL)
				}
				return
			}
			if !slices.Equal(p.Args, c.wantArgs) {
				t.Fatalf("args %q, want %q", p.Args, c.wantArgs)
			}
			if !slices.Equal(p.Unset, c.wantUnset) {
				t.Errorf("unset %q, want %q", p.Unset, c.wantUnset)
			}
			if !slices.Equal(p.Keys, c.wantKeys) {
				t.Errorf("keys %+v, want %+v", p.Keys, c.wantKeys)
			}
			if p.Framing != c.wantFraming {
				t.Errorf("framing %q, want %q", p.Framing, c.wantFraming)
			}
			// The child's environment is PATH and the pass-through list only.
			for _, kv := range p.Env {
				if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "API_KEY=") {
					t.Fatalf("child env leaks %q", kv)
				}
			}
		})
	}
}

// A remote's endpoint, as clients see it in listings, masks a password in
// its URL and its query, which often holds a key.
func TestEndpointRedacted(t *testing.T) {
	for raw, want := range map[string]string{
		"https://tools.example/mcp":                           "https://tools.example/mcp",
		"https://user:pw123@tools.example/mcp?api_key=KEY999": "https://user:xxxxx@tools.example/mcp?xxxxx",
		"https://tools.example/mcp?k=v":                       "https://tools.example/mcp?xxxxx",
	} {
		if got := (Plan{Transport: TransportStreamableHTTP, URL: raw}).Endpoint(); got != want {
			t.Errorf("%s: %s, want %s", raw, got, want)
		}
	}
}

// Discovery says an entry whose endpoint the guard refuses before any
// lookup is not attachable, and why: remotes at localhost were listed
// attachable, and their attach refused. A name is not looked up. It
// checks with the Manager's Dialer: one that knows an address (Own) lets
// it pass, as its dial would.
func TestAssessEndpoints(t *testing.T) {
	remote := func(url string) registry.Entry {
		return registry.Entry{Identifier: "urn:air:a.example:mcp:x", DisplayName: "x", Type: config.MediaMCPServerCard,
			Data: []byte(`{"remotes":[{"type":"streamable-http","url":"` + url + `"}]}`)}
	}
	card := func(url string) registry.Entry {
		return registry.Entry{Identifier: "urn:air:a.example:mcp:x", DisplayName: "x", Type: config.MediaMCPServerCard, URL: url}
	}
	agent := func(url string) registry.Entry {
		return registry.Entry{Identifier: "urn:air:a.example:agent:x", DisplayName: "x", Type: config.MediaA2AAgentCard, URL: url}
	}
	for _, c := range []struct {
		name       string
		e          registry.Entry
		allowLocal bool
		want       string // "" for attachable
	}{
		{"a remote at localhost", remote("http://localhost:8080/mcp"), false, "localhost always means this machine"},
		{"a remote at loopback", remote("http://127.0.0.1:8080/mcp"), false, "loopback, private or link-local"},
		{"a remote at a private address", remote("http://10.1.2.3/mcp"), false, "loopback, private or link-local"},
		{"a remote at a name", remote("https://mcp.a.example/mcp"), false, ""},
		{"a remote at localhost, allowed", remote("http://localhost:8080/mcp"), true, ""},
		{"a card at localhost", card("http://localhost/card.json"), false, "localhost always means this machine"},
		{"an agent at a metadata address, allowed local", agent("http://169.254.169.254/"), true, "cloud metadata address"},
		// The operator's own addresses, as the dialer reaches them.
		{"a remote at an address of the operator's", remote("http://127.0.0.1:7334/mcp"), false, ""},
		{"a remote at localhost, the operator's", remote("http://LOCALHOST:9090/mcp"), false, ""},
		{"a card at the operator's https host, default port", card("https://mcp.internal/card.json"), false, ""},
		{"a remote at another port of it", remote("http://127.0.0.1:7335/mcp"), false, "loopback, private or link-local"},
		{"a remote at its host, the default port", remote("http://localhost/mcp"), false, "localhost always means this machine"},
	} {
		own := []string{"127.0.0.1:7334", "localhost:9090", "mcp.internal:443"}
		m := &Manager{AllowTypes: config.DefaultAllowAttachTypes, Dialer: &guard.Dialer{AllowLocal: c.allowLocal, Own: own}}
		err := m.Assess(&c.e, "builtin").Err
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v; want attachable", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}
