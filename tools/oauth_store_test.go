package tools

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/attach/credstore"
	"github.com/ardgate/ardgate/attach/oauth"
	"github.com/ardgate/ardgate/testdata/tsoauth"
)

// With credentials.store set, a grant from the TypeScript SDK's OAuth
// example server survives a restart of the gateway: a second gateway,
// opening the store anew, attaches and calls the server without a new
// flow. The file is mode 0600 and holds no token in the clear. A grant
// that expired with no refresh token is deleted from the store, and the
// user is asked again; a gateway without a store asks, as before.
func TestOAuthGrantSurvivesRestart(t *testing.T) {
	const urn = "urn:air:test:oauth"
	server := tsoauth.Start(t, "../testdata/ts-client")
	path, key := filepath.Join(t.TempDir(), "credentials"), make([]byte, credstore.KeySize)
	_, _ = rand.Read(key)
	gateway := func(store bool) *clientSession {
		tg := newGateway(t, 10*time.Second, remoteEntry(urn, server))
		if store {
			s, err := credstore.Open(path, key)
			if err != nil {
				t.Fatal(err)
			}
			tg.g.manager.Credentials = s
		}
		return tg.connect(t)
	}
	greet := func(s *clientSession) {
		t.Helper()
		if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
			t.Fatalf("attach: %s", firstText(res))
		}
		res := s.call(callAttachedTool, map[string]any{"name": "mcp_oauth__greet", "arguments": map[string]any{"name": "ardgate"}})
		if res.IsError || !strings.Contains(firstText(res), "ardgate") {
			t.Fatalf("a call of the authorized server: %s", firstText(res))
		}
	}

	first := gateway(true)
	body := authRequiredOf(t, first, urn)
	if status, page, _ := get(t, &http.Client{}, body.AuthorizationURL); status != http.StatusOK {
		t.Fatalf("the redirect back: HTTP %d %q", status, page)
	}
	greet(first)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the store: %v, %v; want mode 0600", fi, err)
	}
	id, _ := credstore.GrantID(server)
	raw, _ := os.ReadFile(path)
	saved := savedGrant(t, path, key, id)
	if bytes.Contains(raw, []byte(saved.AccessToken)) || bytes.Contains(raw, []byte("localhost")) {
		t.Fatal("the store holds the grant in the clear")
	}

	greet(gateway(true)) // no auth_required: the grant came from the store
	authRequiredOf(t, gateway(false), urn)

	saved.Expires = time.Now().Add(-time.Hour) // and the example server gives no refresh token
	forged, _ := json.Marshal(saved)
	if err := open(t, path, key).Put(credstore.OAuthGrant, id, forged); err != nil {
		t.Fatal(err)
	}
	authRequiredOf(t, gateway(true), urn)
	if _, ok := open(t, path, key).Get(credstore.OAuthGrant, id); ok {
		t.Fatal("a grant that expired for good is still in the store")
	}
}

// open opens the store at path with key.
func open(t *testing.T, path string, key []byte) *credstore.Store {
	t.Helper()
	s, err := credstore.Open(path, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// savedGrant is the grant the store at path keeps under id.
func savedGrant(t *testing.T, path string, key []byte, id string) oauth.Saved {
	t.Helper()
	data, ok := open(t, path, key).Get(credstore.OAuthGrant, id)
	var s oauth.Saved
	if !ok || json.Unmarshal(data, &s) != nil || s.AccessToken == "" {
		t.Fatalf("the store keeps %q for %s", data, id)
	}
	return s
}
