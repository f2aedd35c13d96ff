package attach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"

	"go.uber.org/goleak"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/tsoauth"
)

// A flow belongs to the session that began it: its redirect back
// authorizes that session alone, and the session's end closes the
// loopback listener of a flow still waiting and forgets its state.
func TestAuthFlowOfOneSession(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const urn = "urn:air:ardgate.test:mcp:up"
	m := oauthManager(t, urn)
	one, two := m.NewSession("one"), m.NewSession("two")
	flowOf := func(s *Session) *url.URL {
		t.Helper()
		_, _, err := s.Attach(context.Background(), Request{URN: urn})
		var ar *AuthRequired
		if !errors.As(err, &ar) {
			t.Fatalf("attach of a server that answers 401: %v", err)
		}
		u, err := url.Parse(ar.URL)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	first, second := flowOf(one), flowOf(two)
	resp, err := (&http.Client{}).Get(first.String()) // to one's listener
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the redirect back: HTTP %d", resp.StatusCode)
	}
	if _, _, err := one.Attach(context.Background(), Request{URN: urn}); err != nil {
		t.Fatalf("the session authorized: %v", err)
	}
	if _, _, err := two.Attach(context.Background(), Request{URN: urn}); !errors.Is(err, ErrAuthRequired) {
		t.Fatalf("the other session: %v, want it to wait for its own authorization", err)
	}
	back, _ := url.Parse(second.Query().Get("redirect_uri"))
	two.Close()
	if c, err := net.Dial("tcp", back.Host); err == nil {
		c.Close()
		t.Error("the flow's listener still accepts after its session ended")
	}
	if _, err := m.Callback(context.Background(), second.Query()); !errors.Is(err, ErrUnknownState) {
		t.Errorf("a callback of an ended session's flow: %v", err)
	}
}

// A session holds at most maxAuthFlows flows: the next 401 is refused
// before discovery or a registration reaches any server, saying so. A
// declined flow is forgotten once an attach said its refusal, which makes
// room for a new one.
func TestAuthFlowCap(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	urn := func(i int) string { return fmt.Sprintf("urn:air:ardgate.test:mcp:up%d", i) }
	// Two servers: the peer refuses a 21st client registration a minute.
	var remotes []registry.Entry
	for range 2 {
		e, _, err := remoteManager(urn(0), tsoauth.Start(t, "../testdata/ts-client")).Resolve(context.Background(), urn(0), "")
		if err != nil {
			t.Fatal(err)
		}
		remotes = append(remotes, e)
	}
	var entries []registry.Entry
	for i := range maxAuthFlows + 1 {
		e := remotes[2*i/(maxAuthFlows+1)]
		e.Identifier = urn(i)
		entries = append(entries, e)
	}
	m := remoteManager(urn(0), "")
	m.Registries = []registry.Registry{registry.NewLocal("test", registry.NewIndex("test", entries))}
	m.MaxAttachments = maxAuthFlows + 1
	m.Dialer = &guard.Dialer{AllowLocal: true}
	m.HTTP = m.Dialer.Client()
	defer m.HTTP.CloseIdleConnections()
	defer m.Shutdown()
	s := m.NewSession("one")
	defer s.Close()
	var first *url.URL
	for i := range maxAuthFlows {
		_, _, err := s.Attach(context.Background(), Request{URN: urn(i)})
		var ar *AuthRequired
		if !errors.As(err, &ar) {
			t.Fatalf("attach %d of a server that answers 401: %v", i, err)
		}
		if i == 0 {
			first, _ = url.Parse(ar.URL)
		}
	}
	_, _, err := s.Attach(context.Background(), Request{URN: urn(maxAuthFlows)})
	if !errors.Is(err, ErrCapReached) || errors.Is(err, ErrAuthRequired) {
		t.Fatalf("attach past %d flows: %v, want ErrCapReached", maxAuthFlows, err)
	}
	declined := url.Values{"state": {first.Query().Get("state")}, "error": {"access_denied"}}
	if _, err := m.Callback(context.Background(), declined); !errors.Is(err, ErrAuthDeclined) {
		t.Fatalf("the decline: %v", err)
	}
	if _, _, err := s.Attach(context.Background(), Request{URN: urn(0)}); !errors.Is(err, ErrAuthDeclined) {
		t.Fatalf("the attach after the decline: %v, want it said", err)
	}
	if _, _, err := s.Attach(context.Background(), Request{URN: urn(maxAuthFlows)}); !errors.Is(err, ErrAuthRequired) {
		t.Fatalf("attach once the declined flow was said: %v, want a flow", err)
	}
}

// oauthManager is a manager of one entry, urn: the TypeScript SDK's
// OAuth example server, on loopback, reached through a guarded dialer.
// The manager is shut down, and its idle connections closed, with t.
func oauthManager(t *testing.T, urn string) *Manager {
	t.Helper()
	m := remoteManager(urn, tsoauth.Start(t, "../testdata/ts-client"))
	m.Dialer = &guard.Dialer{AllowLocal: true}
	m.HTTP = m.Dialer.Client()
	t.Cleanup(m.HTTP.CloseIdleConnections)
	t.Cleanup(m.Shutdown) // first, as the deferred calls ran
	return m
}
