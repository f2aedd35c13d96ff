package attach

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// Before it launches code the operator did not pick, the gateway may ask
// the user (Manager.Consent says which launches): a model that reads a
// prompt injection can attach, but not run, what a registry offers. The
// asking is the caller's (Request.Consent: tools sends the session's
// client an elicitation); what is asked about, and what an answer other
// than yes means, are decided here.

// ConsentRule names the rule a launch the user did not accept is refused
// by.
const ConsentRule = "consent"

// Launch is what the user is asked to consent to: a registry entry's
// local process.
type Launch struct {
	URN        string
	RegistryID string
	// Remote: the registry is one the operator does not hold as a file.
	Remote    bool
	Publisher string
	// Command is the command line as the guard will run it: the program
	// as PATH finds it, then its arguments.
	Command []string
	// Keys are the variables whose values the user gives on ardgate's
	// keys page (keys.go), passed to the launch's environment.
	Keys []string
	// Trust is what the trust gate found of the entry.
	Trust guard.TrustReport
}

// CommandLine is the command shown to a person: each argument quoted
// where the shell would read it as more than one word.
func (l Launch) CommandLine() string {
	out := make([]string, len(l.Command))
	for i, a := range l.Command {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`;&|<>()*?[]{}!#~") {
			out[i] = strconv.Quote(a)
		}
	}
	return strings.Join(out, " ")
}

// Consent asks the user whether l may run: it returns their answer, one
// of mcp's elicitation actions (accept, decline, cancel), or why none
// came.
type Consent func(ctx context.Context, l Launch) (mcp.ElicitationResponseAction, error)

// needsConsent tells whether a launch of an entry of registry regID is
// asked about under the operator's setting.
func (m *Manager) needsConsent(regID string) bool {
	switch m.Consent {
	case config.ConsentAlways:
		return true
	case config.ConsentNever:
		return false
	}
	return m.remoteRegistry(regID)
}

// remoteRegistry tells whether registry regID is one the operator does
// not hold as a file: not a catalog, nor the builtin one. An id of no
// registry configured is remote: consent fails closed, asked, not
// skipped, for a launch whose source is not known.
func (m *Manager) remoteRegistry(regID string) bool {
	r, ok := m.Registry(regID)
	_, local := r.(*registry.Local)
	return !ok || !local
}

// consent asks, through ask, for the launch plan describes, when the
// operator's setting asks about it; nil lets it run. ask nil (a client
// that cannot be asked) lets every launch run, as stdio.allow_from alone
// decides then.
func (m *Manager) consent(ctx context.Context, ask Consent, l Launch, plan Plan) error {
	if ask == nil || plan.Transport != TransportStdio || !m.needsConsent(l.RegistryID) {
		return nil
	}
	l.Remote = m.remoteRegistry(l.RegistryID)
	l.Command = commandLine(plan)
	answer, err := ask(ctx, l)
	switch {
	case err != nil:
		return &guard.Refusal{Rule: ConsentRule, Reason: fmt.Sprintf("the user's consent to launch %s (%s) could not be had, so it is not launched: %v", l.URN, l.CommandLine(), err)}
	case answer == mcp.ElicitationResponseActionAccept:
		return nil
	case answer == mcp.ElicitationResponseActionCancel:
		return &guard.Refusal{Rule: ConsentRule, Reason: fmt.Sprintf("the user cancelled the launch of %s (%s), so it is not launched; attach it again to ask again", l.URN, l.CommandLine())}
	}
	return &guard.Refusal{Rule: ConsentRule, Reason: fmt.Sprintf("the user declined to launch %s (%s); do not attach it again unless the user asks for it", l.URN, l.CommandLine())}
}

// commandLine is plan's command as the guard will run it; as planned when
// the guard cannot build it (its program is not on PATH), which then
// fails to start.
func commandLine(plan Plan) []string {
	if cmd, err := guard.Command(plan.Program, plan.Args, plan.Env); err == nil {
		return cmd.Args
	}
	return append([]string{plan.Program}, plan.Args...)
}

// ElicitsForm reports whether the session's client declared form-mode
// elicitation: capabilities.elicitation.form, or a bare elicitation, as
// clients declared it before modes (MCP 2025-11-25). A consent can then
// be asked of the user.
func (s *Session) ElicitsForm() bool {
	c := s.clientRequests()
	if c == nil || c.caps.Elicitation == nil {
		return false
	}
	return c.caps.Elicitation.Form != nil || c.caps.Elicitation.URL == nil
}
