package attach

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/registry"
)

// The command a consent shows is one a person reads as it runs: an
// argument the shell would split or expand is quoted, the others are not.
func TestLaunchCommandLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"/usr/bin/npx", "-y", "--", "@acme/weather@1.1.0"}, "/usr/bin/npx -y -- @acme/weather@1.1.0"},
		{[]string{"/usr/bin/npx", "--dir", "/a b"}, `/usr/bin/npx --dir "/a b"`},
		{[]string{"uvx", "x;rm -rf ~", ""}, `uvx "x;rm -rf ~" ""`},
		{[]string{"uvx", "$HOME", "a\nb"}, `uvx "$HOME" "a\nb"`},
	} {
		if got := (Launch{Command: tc.args}).CommandLine(); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.args, got, tc.want)
		}
	}
}

// A client is asked in form mode when it declared form, or a bare
// elicitation as clients did before modes; URL mode only when declared.
func TestClientElicits(t *testing.T) {
	t.Parallel()
	on := &struct{}{}
	for _, tc := range []struct {
		name      string
		caps      *mcp.ElicitationCapability
		form, url bool
	}{
		{"none", nil, false, false},
		{"bare", &mcp.ElicitationCapability{}, true, false},
		{"form", &mcp.ElicitationCapability{Form: on}, true, false},
		{"url", &mcp.ElicitationCapability{URL: on}, false, true},
		{"both", &mcp.ElicitationCapability{Form: on, URL: on}, true, true},
	} {
		s := &Session{m: &Manager{}}
		s.SetClient(mcp.ClientCapabilities{Elicitation: tc.caps}, nil)
		if s.ElicitsForm() != tc.form || s.ElicitsURL() != tc.url {
			t.Errorf("%s: form %v url %v, want %v %v", tc.name, s.ElicitsForm(), s.ElicitsURL(), tc.form, tc.url)
		}
	}
}

// Under remote_registries, a launch from a catalog the operator holds is
// not asked about; one from a registry id of no registry configured is,
// as one from a remote registry: consent fails closed.
func TestNeedsConsent(t *testing.T) {
	t.Parallel()
	m := &Manager{Registries: []registry.Registry{registry.NewLocal("catalog", registry.NewIndex("catalog", nil))}}
	for _, tc := range []struct {
		consent, regID string
		want           bool
	}{
		{config.ConsentRemoteRegistries, "catalog", false},
		{config.ConsentRemoteRegistries, "nowhere", true},
		{config.ConsentRemoteRegistries, "", true},
		{config.ConsentAlways, "catalog", true},
		{config.ConsentNever, "nowhere", false},
	} {
		m.Consent = tc.consent
		if got := m.needsConsent(tc.regID); got != tc.want {
			t.Errorf("consent %s, registry %q: asked %v, want %v", tc.consent, tc.regID, got, tc.want)
		}
	}
}
