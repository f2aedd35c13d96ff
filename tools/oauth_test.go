package tools

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/testdata/tsoauth"
)

// authRequiredOf reads an attach's auth_required failure.
func authRequiredOf(t *testing.T, s *clientSession, urn string) authRequiredBody {
	t.Helper()
	res := s.call("attach_resource", map[string]any{"urn": urn})
	var body authRequiredBody
	if err := json.Unmarshal(res.RawStructuredContent, &body); err != nil || body.Code != "auth_required" {
		t.Fatalf("attach of a server that answers 401: %s", firstText(res))
	}
	if body.URN != urn || !strings.Contains(firstText(res), body.AuthorizationURL) || !strings.Contains(firstText(res), "attach_resource again") {
		t.Fatalf("auth_required says %+v, sentence %q", body, firstText(res))
	}
	return body
}

// get GETs raw with hc, returning the status, the body and the URL the
// last redirect led to.
func get(t *testing.T, hc *http.Client, raw string) (int, string, *url.URL) {
	t.Helper()
	resp, err := hc.Get(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), resp.Request.URL
}

// TestAttachOAuthServer attaches the TypeScript SDK's OAuth example
// server over HTTP: the first attach asks for authorization, the browser
// comes back to the gateway's /oauth/callback, and the second attach
// dials with the token; a forged state and a replayed callback are
// refused and change nothing.
func TestAttachOAuthServer(t *testing.T) {
	const urn = "urn:air:test:oauth"
	tg := newGateway(t, 10*time.Second, remoteEntry(urn, tsoauth.Start(t, "../testdata/ts-client")))
	s := tg.connect(t)
	body := authRequiredOf(t, s, urn)
	if again := authRequiredOf(t, s, urn); again.AuthorizationURL != body.AuthorizationURL {
		t.Errorf("a second attach before the redirect back began another flow")
	}
	base := strings.TrimSuffix(tg.url, "/mcp")
	if !strings.Contains(body.AuthorizationURL, url.QueryEscape(base+"/oauth/callback")) {
		t.Errorf("the flow does not come back to the gateway's listener: %s", body.AuthorizationURL)
	}
	browser := &http.Client{}
	if status, _, _ := get(t, browser, base+"/oauth/callback?state=forged&code=x"); status != http.StatusBadRequest {
		t.Errorf("a forged state: HTTP %d, want 400", status)
	}
	status, page, back := get(t, browser, body.AuthorizationURL)
	if status != http.StatusOK || back.Path != "/oauth/callback" || !strings.Contains(page, "return to your client") {
		t.Fatalf("the redirect back to %s: HTTP %d %q", back, status, page)
	}
	if status, _, _ := get(t, browser, back.String()); status != http.StatusBadRequest {
		t.Errorf("a replayed callback: HTTP %d, want 400", status)
	}
	res := s.call("attach_resource", map[string]any{"urn": urn})
	if res.IsError {
		t.Fatalf("attach once authorized: %s", firstText(res))
	}
	res = s.call(callAttachedTool, map[string]any{"name": "mcp_oauth__greet", "arguments": map[string]any{"name": "ardgate"}})
	if res.IsError || !strings.Contains(firstText(res), "ardgate") {
		t.Fatalf("a call of the authorized server: %s", firstText(res))
	}
}

// TestAttachOAuthDeclined: a user who declines at the authorization page
// makes the next attach fail as cancelled, naming what was declined; the
// one after asks again.
func TestAttachOAuthDeclined(t *testing.T) {
	const urn = "urn:air:test:oauth"
	tg := newGateway(t, 10*time.Second, remoteEntry(urn, tsoauth.Start(t, "../testdata/ts-client")))
	s := tg.connect(t)
	body := authRequiredOf(t, s, urn)
	u, err := url.Parse(body.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	declined := strings.TrimSuffix(tg.url, "/mcp") + "/oauth/callback?" + url.Values{"state": {u.Query().Get("state")}, "error": {"access_denied"}}.Encode()
	if status, page, _ := get(t, &http.Client{}, declined); status != http.StatusOK || !strings.Contains(page, "declined") {
		t.Fatalf("the redirect back of a decline: HTTP %d %q", status, page)
	}
	res := s.call("attach_resource", map[string]any{"urn": urn})
	if s.code(res) != "cancelled" || !strings.Contains(firstText(res), "declined") || !strings.Contains(firstText(res), urn) {
		t.Fatalf("attach after a decline: %s", firstText(res))
	}
	if again := authRequiredOf(t, s, urn); again.AuthorizationURL == body.AuthorizationURL {
		t.Error("the attach after the decline was said reused the declined flow")
	}
}
