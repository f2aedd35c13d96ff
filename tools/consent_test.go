package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/registryfixture"
)

// The entries the consent tests launch: a package of the MCP Registry
// (registryfixture's versions.json), and one of a local catalog.
const (
	remoteURN    = "urn:air:acme.github.io:mcp:weather-station"
	remoteLaunch = "-y -- @acme/weather-station@1.1.0"
	localURN     = "urn:air:team.test:mcp:local-tool"
	localLaunch  = "-y -- local-tool@1.0.0"
)

// consentUser answers the gateway's consent forms as a person would,
// through the client's form: with answer, or the client fails with err.
// asked hears each form.
type consentUser struct {
	answer mcp.ElicitationResponseAction
	err    error
	asked  chan mcp.ElicitationParams
	// away, when set, holds every answer until it closes: a user who
	// never looks.
	away chan struct{}
}

func (u *consentUser) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.asked <- req.Params
	if u.away != nil {
		select {
		case <-u.away:
		case <-ctx.Done():
		}
		return nil, errors.New("the user went away")
	}
	if u.err != nil {
		return nil, u.err
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: u.answer}}, nil
}

// consentRig is a gateway whose registries hold the two entries, each a
// package that npx runs: npx is a stand-in that writes its arguments to
// launched, then runs the fixture server.
type consentRig struct {
	g        *Gateway
	npx      string
	launched string
}

// newConsentRig serves a rig of opts under consent mode, with pinned
// servers.
func newConsentRig(t *testing.T, fixture, mode string, opts Options, pinned ...config.Server) *consentRig {
	t.Helper()
	bin := t.TempDir()
	r := &consentRig{npx: filepath.Join(bin, "npx"), launched: filepath.Join(bin, "launched")}
	script := "#!/bin/sh\necho \"$*\" >> '" + r.launched + "'\nexec '" + fixture + "' \"$@\"\n"
	if err := os.WriteFile(r.npx, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h, err := registryfixture.MCPRegistry("../testdata/registryfixture/versions.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(h)
	t.Cleanup(reg.Close)
	d := &guard.Dialer{AllowLocal: true}
	hc := d.Client()
	t.Cleanup(hc.CloseIdleConnections)
	remote, err := registry.NewMCPRegistry("mcp", reg.URL, registry.RemoteOptions{HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	card := `{"name":"local-tool","packages":[{"registryType":"npm","identifier":"local-tool","version":"1.0.0","transport":{"type":"stdio"}}]}`
	local := registry.NewLocal("team", registry.NewIndex("team", []registry.Entry{
		{Identifier: localURN, DisplayName: "Local tool", Type: config.MediaMCPServerCard, Data: json.RawMessage(card),
			TrustManifest: json.RawMessage(`{"identity":"https://team.test","attestations":[{"type":"SOC2"}]}`)}}))
	m := &attach.Manager{Registries: []registry.Registry{remote, local}, HTTP: hc, Dialer: d, AllowTypes: config.DefaultAllowAttachTypes,
		MaxAttachments: 5, CallTimeout: 10 * time.Second, StartTimeout: 10 * time.Second, Log: quietLog, Consent: mode, Pinned: pinned,
		Stdio: guard.Stdio{AllowFrom: []string{"mcp", "team"}, Launchers: config.DefaultLaunchers}}
	r.g = New(m, quietLog, opts)
	return r
}

// launches are the argument lists npx was run with so far.
func (r *consentRig) launches(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(r.launched)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// consentClients connect a client of opts, declaring caps beside what
// its handlers declare, to a rig's gateway: over real streamable HTTP
// (with the event stream the gateway asks on), and over stdio.
var consentClients = map[string]func(t *testing.T, g *Gateway, caps mcp.ClientCapabilities, opts ...client.ClientOption) *client.Client{
	"http": func(t *testing.T, g *Gateway, caps mcp.ClientCapabilities, opts ...client.ClientOption) *client.Client {
		h := g.NewHTTP(HTTPOptions{})
		ts := httptest.NewServer(h)
		t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close() })
		tr, err := transport.NewStreamableHTTP(ts.URL+"/mcp", transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20251125)}, opts...)...)
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		init := mcp.InitializeRequest{}
		init.Params.Capabilities = caps
		if _, err := c.Initialize(context.Background(), init); err != nil {
			t.Fatal(err)
		}
		return c
	},
	"stdio": func(t *testing.T, g *Gateway, caps mcp.ClientCapabilities, opts ...client.ClientOption) *client.Client {
		if caps.Elicitation != nil {
			t.Skip("serveStdio declares what the client's handlers declare")
		}
		return serveStdio(t, g, opts...)
	},
}

// attachConsent calls attach_resource of urn through c.
func attachConsent(t *testing.T, c *client.Client, urn string) (*mcp.CallToolResult, failureBody) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "attach_resource"
	req.Params.Arguments = map[string]any{"urn": urn}
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("attach %s: %v", urn, err)
	}
	var f failureBody
	if res.IsError {
		_ = json.Unmarshal(res.RawStructuredContent, &f)
	}
	return res, f
}

// The user is asked before a launch of code the operator did not pick,
// when the client declared form elicitation: by default a package of a
// remote registry (the MCP Registry's, served by registryfixture), with
// always a local catalog's too, with never none. The form shows the
// command line as it runs and the publisher; accept launches, decline and
// cancel refuse by the rule consent, naming what was declined, and the
// process never starts; a client that fails to ask refuses too. A client
// without elicitation, or with URL elicitation only, is not asked and
// attaches as stdio.allow_from lets it.
func TestConsentBeforeLaunch(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("npx is a shell script here")
	}
	fixture := buildFixture(t)
	urlOnly := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}
	for _, tc := range []struct {
		name   string
		mode   string
		urn    string
		user   *consentUser // nil: a client that declares no elicitation
		caps   mcp.ClientCapabilities
		asked  bool
		refuse string // what the refusal says; "" when it attaches
	}{
		{"remote accepted", config.ConsentRemoteRegistries, remoteURN, &consentUser{answer: mcp.ElicitationResponseActionAccept}, mcp.ClientCapabilities{}, true, ""},
		{"remote declined", config.ConsentRemoteRegistries, remoteURN, &consentUser{answer: mcp.ElicitationResponseActionDecline}, mcp.ClientCapabilities{}, true, "the user declined to launch " + remoteURN},
		{"remote cancelled", "", remoteURN, &consentUser{answer: mcp.ElicitationResponseActionCancel}, mcp.ClientCapabilities{}, true, "the user cancelled the launch of " + remoteURN},
		{"client fails to ask", config.ConsentRemoteRegistries, remoteURN, &consentUser{err: errors.New("no one is at the screen")}, mcp.ClientCapabilities{}, true, "could not be had"},
		{"local catalog by default", config.ConsentRemoteRegistries, localURN, &consentUser{answer: mcp.ElicitationResponseActionDecline}, mcp.ClientCapabilities{}, false, ""},
		{"local catalog, always, accepted", config.ConsentAlways, localURN, &consentUser{answer: mcp.ElicitationResponseActionAccept}, mcp.ClientCapabilities{}, true, ""},
		{"local catalog, always, declined", config.ConsentAlways, localURN, &consentUser{answer: mcp.ElicitationResponseActionDecline}, mcp.ClientCapabilities{}, true, "the user declined to launch " + localURN},
		{"remote, never", config.ConsentNever, remoteURN, &consentUser{answer: mcp.ElicitationResponseActionDecline}, mcp.ClientCapabilities{}, false, ""},
		{"no elicitation", config.ConsentAlways, remoteURN, nil, mcp.ClientCapabilities{}, false, ""},
		{"url elicitation only", config.ConsentAlways, remoteURN, &consentUser{answer: mcp.ElicitationResponseActionDecline}, urlOnly, false, ""},
	} {
		for _, side := range []string{"http", "stdio"} {
			t.Run(tc.name+" over "+side, func(t *testing.T) {
				r := newConsentRig(t, fixture, tc.mode, Options{Version: "test"})
				var opts []client.ClientOption
				if tc.user != nil {
					tc.user.asked = make(chan mcp.ElicitationParams, 8)
					opts = append(opts, client.WithElicitationHandler(tc.user))
				}
				c := consentClients[side](t, r.g, tc.caps, opts...)
				res, f := attachConsent(t, c, tc.urn)
				launch := remoteLaunch
				if tc.urn == localURN {
					launch = localLaunch
				}
				checkConsentAsked(t, tc.user, tc.asked, r.npx+" "+launch, consentFacts[tc.urn])
				switch {
				case tc.refuse == "" && res.IsError:
					t.Fatalf("attach: %s", firstText(res))
				case tc.refuse == "" && !slices.Contains(r.launches(t), launch):
					t.Fatalf("attached, but npx ran %q", r.launches(t))
				case tc.refuse != "" && (f.Code != "refused" || !strings.Contains(f.Error, "refused by consent: ") || !strings.Contains(f.Error, tc.refuse)):
					t.Fatalf("a launch without consent: %s; want refused by consent, saying %q", firstText(res), tc.refuse)
				case tc.refuse != "" && len(r.launches(t)) > 0:
					t.Fatalf("refused, yet npx ran %q", r.launches(t))
				}
			})
		}
	}
}

// consentFacts are what the form says of each entry: its publisher and
// trust facts.
var consentFacts = map[string][]string{
	remoteURN: {"Publisher: acme.github.io", "from the remote registry mcp", "no trust manifest"},
	localURN:  {"Publisher: team.test", "from the catalog team", "identity https://team.test (checked", "claimed by the publisher, not proven: SOC2"},
}

// checkConsentAsked checks that user was asked once, in form mode, about
// command, with facts, when asked is set, and never otherwise.
func checkConsentAsked(t *testing.T, user *consentUser, asked bool, command string, facts []string) {
	t.Helper()
	if user == nil {
		return
	}
	var forms []mcp.ElicitationParams
	for len(user.asked) > 0 {
		forms = append(forms, <-user.asked)
	}
	switch {
	case !asked && len(forms) > 0:
		t.Fatalf("the user was asked %q", forms[0].Message)
	case !asked:
	case len(forms) != 1:
		t.Fatalf("the user was asked %d times, want once", len(forms))
	case forms[0].Mode != mcp.ElicitationModeForm || forms[0].RequestedSchema == nil:
		t.Fatalf("the form: mode %q, schema %v", forms[0].Mode, forms[0].RequestedSchema)
	case !strings.Contains(forms[0].Message, command):
		t.Fatalf("the form says %q; want the command %q", forms[0].Message, command)
	}
	for _, f := range facts {
		if asked && !strings.Contains(forms[0].Message, f) {
			t.Errorf("the form says %q; want it to say %q", forms[0].Message, f)
		}
	}
}

// A pinned server is the operator's own pick: its launch is never asked
// about, under always too.
func TestConsentNotAskedForPinned(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("npx is a shell script here")
	}
	r := newConsentRig(t, buildFixture(t), config.ConsentAlways, Options{Version: "test"}, config.Server{Name: "own", Command: "npx", Args: []string{"own-server"}})
	user := &consentUser{answer: mcp.ElicitationResponseActionDecline, asked: make(chan mcp.ElicitationParams, 8)}
	c := consentClients["http"](t, r.g, mcp.ClientCapabilities{}, client.WithElicitationHandler(user))
	waitUntil(t, 10*time.Second, "the pinned server's tools listed", func() bool {
		res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		return err == nil && slices.ContainsFunc(res.Tools, func(tool mcp.Tool) bool { return strings.HasPrefix(tool.Name, "mcp_own__") })
	})
	if len(user.asked) > 0 {
		t.Fatalf("the user was asked about a pinned server: %q", (<-user.asked).Message)
	}
	if !slices.Contains(r.launches(t), "own-server") {
		t.Fatalf("npx ran %q", r.launches(t))
	}
}

// A user who never answers holds the attach no longer than the bound on
// the wait (Options.ConsentWait): it is refused by consent, saying so,
// and nothing starts.
func TestConsentUnanswered(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("npx is a shell script here")
	}
	fixture := buildFixture(t)
	for _, side := range []string{"http", "stdio"} {
		t.Run(side, func(t *testing.T) {
			r := newConsentRig(t, fixture, config.ConsentRemoteRegistries, Options{Version: "test", ConsentWait: 200 * time.Millisecond})
			user := &consentUser{asked: make(chan mcp.ElicitationParams, 8), away: make(chan struct{})}
			c := consentClients[side](t, r.g, mcp.ClientCapabilities{}, client.WithElicitationHandler(user))
			t.Cleanup(func() { close(user.away) })
			res, f := attachConsent(t, c, remoteURN)
			if f.Code != "refused" || !strings.Contains(f.Error, "refused by consent: ") || !strings.Contains(f.Error, "the user did not answer within 200ms") {
				t.Fatalf("an attach the user never answered: %s", firstText(res))
			}
			if len(r.launches(t)) > 0 {
				t.Fatalf("unanswered, yet npx ran %q", r.launches(t))
			}
		})
	}
}
