package mcpwire

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A server's configured headers go with every request to its origin, and
// with none to another origin a redirect leads to.
func TestWithHeaders(t *testing.T) {
	got := map[string]string{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got["other"] = r.Header.Get("Authorization") + "|" + r.Header.Get("X-Team")
	}))
	defer other.Close()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got[r.Method] = r.Header.Get("Authorization") + "|" + r.Header.Get("X-Team")
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
		}
	}))
	defer server.Close()
	c := WithHeaders(&http.Client{}, server.URL+"/mcp", map[string]string{"Authorization": "Bearer t", "X-Team": "a"})
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodDelete, server.URL+"/mcp", nil),
		httptest.NewRequest(http.MethodGet, server.URL+"/away", nil),
	} {
		req.RequestURI = ""
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got["DELETE"] != "Bearer t|a" || got["GET"] != "Bearer t|a" || got["other"] != "|" {
		t.Fatalf("headers seen: %v; want them at the server on every request, none at the other origin", got)
	}
}
