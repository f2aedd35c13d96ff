package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// A grant saved and restored, as across a restart, is the grant: its
// token reaches the server, and once expired it refreshes with the
// client, resource and refresh token saved; the refresh is heard
// (OnChange), its new refresh token with it. A saved grant is refused
// for another origin, another version, or a token endpoint the guard
// refuses.
func TestSavedGrantRestored(t *testing.T) {
	c, _ := testConfig(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	fk := newFake(t)
	fk.expiresIn = 60
	data, err := json.Marshal(authorized(t, c, fk).Save())
	if err != nil {
		t.Fatal(err)
	}
	var saved Saved
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	g, err := c.Restore(fk.url("/mcp"), saved)
	if err != nil {
		t.Fatal(err)
	}
	if code := get(t, c, g, fk.url("/mcp")); code != http.StatusOK {
		t.Fatalf("GET /mcp with the restored grant: HTTP %d", code)
	}
	var heard []Saved
	g.OnChange(func(s Saved) { heard = append(heard, s) })
	fk.expire()
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if code := get(t, c, g, fk.url("/mcp")); code != http.StatusOK {
		t.Fatalf("GET /mcp after expiry: HTTP %d, want a refreshed token", code)
	}
	reqs := fk.requests()
	if len(reqs) != 2 || reqs[1].Get("refresh_token") != saved.RefreshToken || reqs[1].Get("resource") != fk.url("/mcp") || reqs[1].Get("client_id") != saved.ClientID {
		t.Fatalf("token requests %v, want a refresh with the saved client, resource and refresh token", reqs)
	}
	if len(heard) != 1 || heard[0].RefreshToken == saved.RefreshToken || heard[0].AccessToken == saved.AccessToken || !heard[0].Expires.After(now) {
		t.Fatalf("the refresh was heard as %+v", heard)
	}
	for name, s := range map[string]Saved{
		"another version":        func() Saved { s := saved; s.Version = 2; return s }(),
		"a refused token URL":    func() Saved { s := saved; s.TokenURL = "http://169.254.169.254/token"; return s }(),
		"no access token either": func() Saved { s := saved; s.AccessToken = ""; return s }(),
	} {
		if _, err := c.Restore(fk.url("/mcp"), s); !errors.Is(err, ErrSavedGrant) {
			t.Errorf("%s: %v, want ErrSavedGrant", name, err)
		}
	}
	if _, err := c.Restore("http://127.0.0.2:1/mcp", saved); !errors.Is(err, ErrOtherOrigin) {
		t.Errorf("restored for another origin: %v", err)
	}
}
