package attach

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"

	"go.uber.org/goleak"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/testdata/tsoauth"
)

// A flow belongs to the session that began it: its redirect back
// authorizes that session alone, and the session's end closes the
// loopback listener of a flow still waiting and forgets its state.
func TestAuthFlowOfOneSession(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const urn = "urn:air:ardgate.test:mcp:up"
	m := remoteManager(urn, tsoauth.Start(t, "../testdata/ts-client"))
	m.Dialer = &guard.Dialer{AllowLocal: true}
	m.HTTP = m.Dialer.Client()
	defer m.HTTP.CloseIdleConnections()
	defer m.Shutdown()
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
