package attach

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"go.uber.org/goleak"
)

// An attach's AuthRequired is a UserStep whose StepDone closes when its
// flow ends, however it ends, and only then: the gateway waits on it to
// attach again in the same call (URL-mode elicitation). Each end leaves
// the attach after it its own answer.
func TestAuthRequiredStepDone(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const urn = "urn:air:ardgate.test:mcp:up"
	m := oauthManager(t, urn)
	browse := func(t *testing.T, raw string) {
		t.Helper()
		resp, err := (&http.Client{}).Get(raw)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the redirect back: HTTP %d", resp.StatusCode)
		}
	}
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, s *Session, authURL *url.URL)
		// then checks the attach after the end.
		then func(err error) bool
	}{
		{"granted", func(t *testing.T, _ *Session, u *url.URL) { browse(t, u.String()) },
			func(err error) bool { return err == nil }},
		{"declined", func(t *testing.T, _ *Session, u *url.URL) {
			back := u.Query().Get("redirect_uri") + "?" + url.Values{"state": {u.Query().Get("state")}, "error": {"access_denied"}}.Encode()
			browse(t, back)
		}, func(err error) bool { return errors.Is(err, ErrAuthDeclined) }},
		{"expired", func(_ *testing.T, s *Session, _ *url.URL) {
			s.auth.mu.Lock()
			f := s.auth.byURN[urn]
			s.auth.mu.Unlock()
			s.auth.forget(f) // as its AuthFlowTTL timer does
		}, func(err error) bool { return errors.Is(err, ErrAuthRequired) }},
		{"session closed", func(_ *testing.T, s *Session, _ *url.URL) { s.Close() },
			func(err error) bool { return errors.Is(err, ErrSessionClosed) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := m.NewSession(tc.name)
			defer s.Close()
			_, _, err := s.Attach(context.Background(), Request{URN: urn})
			var step UserStep
			if !errors.As(err, &step) {
				t.Fatalf("attach of a server that answers 401: %v, not a UserStep", err)
			}
			u, err := url.Parse(step.StepURL())
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-step.StepDone():
				t.Fatal("StepDone closed before the user did anything")
			default:
			}
			tc.end(t, s, u)
			<-step.StepDone() // the test's deadline bounds it
			if _, _, err := s.Attach(context.Background(), Request{URN: urn}); !tc.then(err) {
				t.Fatalf("the attach after the step ended: %v", err)
			}
		})
	}
}
