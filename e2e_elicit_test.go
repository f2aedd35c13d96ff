package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/browser"
	"github.com/ardgate/ardgate/testdata/tsoauth"
)

// needChromium returns Debian's chromium, the user's browser in the
// tests where a person opens a link; without it the test skips, or fails
// when CI is set.
func needChromium(t *testing.T) string { return browser.Need(t) }

// browse opens raw in headless chromium as a person would, following its
// redirects, and returns the page it ended on. Chromium resolves no name
// but localhost and asks nothing of its own: no packet leaves the machine.
func browse(ctx context.Context, chromium, dir, raw string) (string, error) {
	out, err := exec.CommandContext(ctx, chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+dir, "--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
		"--dump-dom", raw).Output()
	if err != nil {
		return "", fmt.Errorf("chromium: %w", err)
	}
	return string(out), nil
}

// urlUser is a client's side of URL-mode elicitation, with its user: it
// opens the link in chromium and accepts, or answers as action says
// (decline, cancel), or with an error.
type urlUser struct {
	chromium, dir string
	action        mcp.ElicitationResponseAction // "" opens the link
	refuse        error

	mu    sync.Mutex
	asked []mcp.ElicitationParams
	pages []string // what chromium ended on
}

// seen returns what the client was asked, and the pages its browser
// ended on.
func (u *urlUser) seen() ([]mcp.ElicitationParams, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.asked, u.pages
}

func (u *urlUser) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.mu.Lock()
	u.asked = append(u.asked, req.Params)
	u.mu.Unlock()
	if u.refuse != nil {
		return nil, u.refuse
	}
	if u.action != "" {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: u.action}}, nil
	}
	page, err := browse(ctx, u.chromium, u.dir, req.Params.URL)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	u.pages = append(u.pages, page)
	u.mu.Unlock()
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// urlMode declares elicitation with URL mode, as of MCP 2025-11-25.
var urlMode = client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}})

// TestURLElicitationOAuthAttach attaches the TypeScript SDK's OAuth
// example server for a client that declared URL-mode elicitation, over
// stdio and over HTTP: the gateway asks the client to send its user to
// the authorization URL, the user's browser (headless chromium) goes
// there and is sent back to the gateway, and the attach succeeds in that
// one call, beating progress meanwhile; the client is told the
// elicitation completed, and the server's tool answers. A user who
// declines or cancels fails the attach as cancelled, naming what was
// declined; a client that answers the elicitation with an error, or
// declared form mode alone, gets auth_required with the link, as a
// client without elicitation does.
func TestURLElicitationOAuthAttach(t *testing.T) {
	const urn = "urn:air:ardgate.test:mcp:remote-fixture"
	chromium := needChromium(t)
	server := tsoauth.Start(t, "testdata/ts-client")
	catalog := catalogWithRemote(t, server)
	environ := env(true, "ARDGATE_ALLOW_LOCAL_URLS=true")
	connect := map[string]func(t *testing.T, opts ...client.ClientOption) *gateway{
		"stdio": func(t *testing.T, opts ...client.ClientOption) *gateway {
			return startStdioClient(t, environ, opts, "--catalog", catalog)
		},
		"http": func(t *testing.T, opts ...client.ClientOption) *gateway {
			url, stderr := startHTTP(t, environ, "--catalog", catalog)
			tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
			if err != nil {
				t.Fatal(err)
			}
			g := &gateway{t: t, stderr: stderr}
			g.connect(tr, append([]client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20251125)}, opts...)...)
			t.Cleanup(func() { _ = g.c.Close() })
			return g
		},
	}
	for _, side := range []string{"stdio", "http"} {
		t.Run(side+", accepted", func(t *testing.T) {
			user := &urlUser{chromium: chromium, dir: t.TempDir()}
			g := connect[side](t, urlMode, client.WithElicitationHandler(user))
			token := "elicit-" + side
			res := g.callMeta("attach_resource", map[string]any{"urn": urn}, &mcp.Meta{ProgressToken: token})
			if res.IsError {
				t.Fatalf("attach through URL elicitation: %s", text(res))
			}
			elicited, pages := user.seen()
			if len(elicited) != 1 || len(pages) != 1 {
				t.Fatalf("the client was asked %d times, the browser opened %d pages; want 1 and 1", len(elicited), len(pages))
			}
			asked := elicited[0]
			authURL, err := url.Parse(asked.URL)
			if err != nil || asked.Mode != mcp.ElicitationModeURL || asked.ElicitationID == "" || authURL.Query().Get("code_challenge") == "" {
				t.Fatalf("the elicitation: %+v", asked)
			}
			for _, named := range []string{urn, "published by ardgate.test", "authorize ardgate"} {
				if !strings.Contains(asked.Message, named) {
					t.Errorf("the elicitation's message %q does not say %q", asked.Message, named)
				}
			}
			if !strings.Contains(pages[0], "ardgate is authorized for "+urn) {
				t.Errorf("the browser ended on %q, not the gateway's page of the redirect back", pages[0])
			}
			g.waitNoteThat(string(mcp.MethodNotificationElicitationComplete), 5*time.Second, func(n mcp.JSONRPCNotification) bool {
				return n.Params.AdditionalFields["elicitationId"] == asked.ElicitationID
			})
			g.waitNoteThat(string(mcp.MethodNotificationProgress), 5*time.Second, func(n mcp.JSONRPCNotification) bool {
				msg, _ := n.Params.AdditionalFields["message"].(string)
				return n.Params.AdditionalFields["progressToken"] == token && strings.HasPrefix(msg, "waiting for the user to authorize ardgate for "+urn)
			})
			if got := text(g.call("mcp_remote_fixture__greet", map[string]any{"name": "ardgate"})); !strings.Contains(got, "Hello, ardgate") {
				t.Fatalf("greet through the authorized server: %q", got)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		user   *urlUser
		opts   []client.ClientOption
		code   string
		saying []string
	}{
		{"declined", &urlUser{action: mcp.ElicitationResponseActionDecline}, []client.ClientOption{urlMode}, "cancelled",
			[]string{"the user declined", "authorize ardgate for " + urn, "published by ardgate.test"}},
		{"cancelled", &urlUser{action: mcp.ElicitationResponseActionCancel}, []client.ClientOption{urlMode}, "cancelled",
			[]string{"the user cancelled", "authorize ardgate for " + urn}},
		{"an error answer", &urlUser{refuse: errors.New("no browser here")}, []client.ClientOption{urlMode}, "auth_required",
			[]string{"Show the user this link"}},
		{"form mode alone", &urlUser{action: mcp.ElicitationResponseActionAccept},
			[]client.ClientOption{client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}})},
			"auth_required", []string{"Show the user this link"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := connect["stdio"](t, append(tc.opts, client.WithElicitationHandler(tc.user))...)
			msg := g.fails("attach_resource", map[string]any{"urn": urn}, tc.code)
			for _, s := range tc.saying {
				if !strings.Contains(msg, s) {
					t.Errorf("the failure %q does not say %q", msg, s)
				}
			}
			elicited, _ := tc.user.seen()
			if asked := len(elicited); asked != 1 && tc.name != "form mode alone" || asked != 0 && tc.name == "form mode alone" {
				t.Errorf("the client was asked %d times", asked)
			}
			if n := g.notesSince(string(mcp.MethodNotificationElicitationComplete)); len(n) != 0 {
				t.Errorf("notifications/elicitation/complete of a step never done: %v", n)
			}
		})
	}
}
