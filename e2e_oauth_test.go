package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/testdata/tsoauth"
)

// TestStdioOAuthAttach attaches the TypeScript SDK's OAuth example server
// to a gateway over stdio, for a client without URL-mode elicitation:
// the first attach answers auth_required with a link, the browser comes
// back to a loopback listener opened for the flow, which closes then, and
// the second attach dials with the token. A forged state is refused, and
// neither the code nor the token reaches the gateway's log.
func TestStdioOAuthAttach(t *testing.T) {
	const urn = "urn:air:ardgate.test:mcp:remote-fixture"
	server := tsoauth.Start(t, "testdata/ts-client")
	g := startStdio(t, env(true, "ARDGATE_ALLOW_LOCAL_URLS=true"), "--catalog", catalogWithRemote(t, server), "--log-level", "debug")
	g.fails("attach_resource", map[string]any{"urn": urn}, "auth_required")
	var body struct {
		AuthorizationURL string `json:"authorization_url"`
	}
	decode(t, g.call("attach_resource", map[string]any{"urn": urn}), &body)
	authURL, err := url.Parse(body.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	back, err := url.Parse(authURL.Query().Get("redirect_uri"))
	if err != nil || back.Hostname() != "127.0.0.1" || back.Path != "/oauth/callback" {
		t.Fatalf("the flow comes back to %q, not a loopback listener", authURL.Query().Get("redirect_uri"))
	}
	if resp, err := http.Get(back.String() + "?state=forged&code=x"); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a forged state at the flow's listener: %v %v, want 400", resp, err)
	}
	var codes []string
	browser := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if c := req.URL.Query().Get("code"); c != "" {
			codes = append(codes, c)
		}
		return nil
	}}
	resp, err := browser.Get(body.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "return to your client") || len(codes) != 1 {
		t.Fatalf("the redirect back: HTTP %d %q, codes %q", resp.StatusCode, page, codes)
	}
	waitClosed(t, back.Host)
	g.ok("attach_resource", map[string]any{"urn": urn}, nil)
	if got := text(g.call("mcp_remote_fixture__greet", map[string]any{"name": "ardgate"})); !strings.Contains(got, "Hello, ardgate") {
		t.Fatalf("greet through the authorized server: %q", got)
	}
	log := g.stderr.String()
	for _, secret := range []string{codes[0], authURL.Query().Get("state"), "Bearer ", "access_token"} {
		if strings.Contains(log, secret) {
			t.Errorf("the gateway's log holds %q", secret)
		}
	}
}

// waitClosed waits until nothing listens at addr any more: the flow's
// listener closes once its redirect back came.
func waitClosed(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return // refused: a loopback address answers at once
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the flow's listener at %s still accepts 10 s after its redirect back", addr)
		}
	}
}
