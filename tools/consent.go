package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
)

// The user's consent to a launch (attach/consent.go) is asked of the
// session's client as an elicitation in form mode, sent as the requests
// of attached servers are (client_requests.go): a message that shows what
// would run, and an empty form, whose accept or decline is the answer.

// DefaultConsentWait bounds the wait for the user's answer, unless
// Options.ConsentWait says otherwise: a person reads the command first,
// and a client that shows the form to no one must not hold the attach
// for good.
const DefaultConsentWait = 5 * time.Minute

// consentSchema is the form of a consent: no fields, only accept or
// decline.
var consentSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// consent is how the user of session s is asked to consent to a launch;
// nil when its client declared no form elicitation, whose user is not
// asked (stdio.allow_from alone decides).
func (g *Gateway) consent(s *session) attach.Consent {
	if !s.att.ElicitsForm() {
		return nil
	}
	relay, bound := g.relay(s), cmp.Or(g.opts.ConsentWait, DefaultConsentWait)
	return func(ctx context.Context, l attach.Launch) (mcp.ElicitationResponseAction, error) {
		wait, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		answer, err := elicit(wait, relay, mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: consentMessage(l), RequestedSchema: consentSchema})
		switch {
		case errors.Is(err, errNoAction):
			return "", err
		case err != nil && ctx.Err() == nil && errors.Is(wait.Err(), context.DeadlineExceeded):
			return "", fmt.Errorf("the user did not answer within %s", bound)
		case err != nil:
			return "", fmt.Errorf("the client could not ask the user: %w", err)
		}
		return answer, nil
	}
}

// askedOnce is ask that answers accept, without asking again, for a
// launch the user accepted in this call already: an attach that went on
// to a user step (a package's keys) and is tried again once it is done
// would put the same consent to them twice.
func askedOnce(ask attach.Consent) attach.Consent {
	if ask == nil {
		return nil
	}
	var mu sync.Mutex
	var accepted []string
	return func(ctx context.Context, l attach.Launch) (mcp.ElicitationResponseAction, error) {
		launch := l.URN + "\x00" + l.CommandLine()
		mu.Lock()
		again := slices.Contains(accepted, launch)
		mu.Unlock()
		if again {
			return mcp.ElicitationResponseActionAccept, nil
		}
		answer, err := ask(ctx, l)
		if err == nil && answer == mcp.ElicitationResponseActionAccept {
			mu.Lock()
			accepted = append(accepted, launch)
			mu.Unlock()
		}
		return answer, err
	}
}

// consentMessage asks the user about l: what runs, whose it is, where it
// was found, and what the trust gate knows of it. Its registry's text is
// cleaned and cut, as everything shown is.
func consentMessage(l attach.Launch) string {
	where := "the catalog " + l.RegistryID
	if l.Remote {
		where = "the remote registry " + l.RegistryID
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ardgate was asked to launch a program on this machine, an MCP server from %s:\n\n", where)
	fmt.Fprintf(&b, "    %s\n\n", guard.Text(l.CommandLine(), 2000))
	fmt.Fprintf(&b, "Entry: %s\nPublisher: %s\nTrust: %s\n\n", l.URN, guard.Text(l.Publisher, 200), trustFacts(l.Trust))
	if len(l.Keys) > 0 {
		fmt.Fprintf(&b, "It is given the values you type on ardgate's keys page for: %s.\n\n", strings.Join(l.Keys, ", "))
	}
	b.WriteString("Accept to run it with your user's rights; decline, and it does not run.")
	return b.String()
}

// trustFacts says in a line what the trust gate found: the checked
// identity, what was verified, and what is only claimed.
func trustFacts(r guard.TrustReport) string {
	if r.Identity == "" {
		return "no trust manifest: nothing about the publisher is checked"
	}
	facts := []string{"identity " + r.Identity}
	if r.IdentityMatchesPublisher {
		facts[0] += " (checked: it belongs to the publisher)"
	}
	if len(r.DigestVerified) > 0 {
		facts = append(facts, "verified by digest: "+strings.Join(r.DigestVerified, ", "))
	}
	claims := slices.DeleteFunc(slices.Clone(r.Claimed), func(c string) bool { return slices.Contains(r.DigestVerified, c) })
	if len(claims) > 0 {
		facts = append(facts, "claimed by the publisher, not proven: "+strings.Join(claims, ", "))
	}
	return guard.Text(strings.Join(facts, "; "), 1000)
}
