package guard_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ardgate/ardgate/guard"
)

// wantRefusal asserts err is a *guard.Refusal by rule, wrapping
// guard.ErrRefused, and mentions each of mention.
func wantRefusal(t *testing.T, err error, rule string, mention ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want a refusal by %s", rule)
	}
	var r *guard.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("error %v (%T) is not a *guard.Refusal", err, err)
	}
	if r.Rule != rule {
		t.Errorf("refused by %q, want %q (%v)", r.Rule, rule, err)
	}
	if !errors.Is(err, guard.ErrRefused) {
		t.Errorf("errors.Is(%v, ErrRefused) is false", err)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
}

func TestStdioCheckRegistry(t *testing.T) {
	p := &guard.Stdio{AllowFrom: []string{"builtin", "team"}}
	tests := []struct {
		id string
		ok bool
	}{
		{"builtin", true},
		{"team", true},
		{"public", false},
		{"", false},
		{"Builtin", false},
		{"team ", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := p.CheckRegistry(tt.id)
			if tt.ok {
				if err != nil {
					t.Errorf("CheckRegistry(%q) = %v", tt.id, err)
				}
				return
			}
			wantRefusal(t, err, "stdio.allow_from", strconv.Quote(tt.id))
		})
	}
	t.Run("empty policy refuses all", func(t *testing.T) {
		// Saying so: it read "only [] may".
		wantRefusal(t, (&guard.Stdio{}).CheckRegistry("builtin"), "stdio.allow_from", "stdio.allow_from lets no registry")
	})
}

func TestStdioCheckLauncher(t *testing.T) {
	p := &guard.Stdio{Launchers: []string{"npx", "uvx"}}
	tests := []struct {
		launcher string
		ok       bool
	}{
		{"npx", true},
		{"uvx", true},
		{"bash", false},
		{"sh", false},
		{"/usr/bin/npx", false},
		{"npx ", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.launcher, func(t *testing.T) {
			err := p.CheckLauncher(tt.launcher)
			if tt.ok {
				if err != nil {
					t.Errorf("CheckLauncher(%q) = %v", tt.launcher, err)
				}
				return
			}
			wantRefusal(t, err, "stdio.launchers", strconv.Quote(tt.launcher))
		})
	}
	t.Run("empty policy refuses all", func(t *testing.T) {
		wantRefusal(t, (&guard.Stdio{}).CheckLauncher("npx"), "stdio.launchers")
	})
}

func TestCheckPackage(t *testing.T) {
	tests := []struct {
		typ, id, version string
		ok               bool
	}{
		// Real names and versions.
		{"npm", "@modelcontextprotocol/server-everything", "", true},
		{"npm", "@modelcontextprotocol/server-everything", "2026.8.31", true},
		{"npm", "@modelcontextprotocol/server-filesystem", "1.0.0-beta.1", true},
		{"npm", "mcp-remote", "0.1.18", true},
		{"npm", "left-pad", "1.0.0+build.5", true},
		{"npm", "lodash.merge", "latest", true},
		{"npm", "@a/b", "", true},
		{"npm", "x_y~z", "", true},
		{"pypi", "mcp-server-fetch", "", true},
		{"pypi", "mcp-server-fetch", "2026.8.31", true},
		{"pypi", "mcp_server_git", "1.0.0rc1", true},
		{"pypi", "Django", "1!2.0.post1", true},
		{"pypi", "zope.interface", "6.0+local.1", true},
		{"pypi", "a", "1", true},
		// Option smuggling.
		{"npm", "-e", "", false},
		{"npm", "--yes", "", false},
		{"npm", "-c", "", false},
		{"npm", "--call=id", "", false},
		{"pypi", "-e", "", false},
		{"pypi", "--with", "", false},
		{"pypi", "--from=evil", "", false},
		{"npm", "good", "--foo", false},
		{"npm", "good", "-1", false},
		{"pypi", "good", "--foo", false},
		{"pypi", "good", "-e", false},
		// Paths, specs and scopes that are not package names.
		{"npm", "@scope/../x", "", false},
		{"npm", "../x", "", false},
		{"npm", "./local", "", false},
		{"npm", "/abs/path", "", false},
		{"npm", "@scope/", "", false},
		{"npm", "@/x", "", false},
		{"npm", "@scope/a/b", "", false},
		{"npm", "github:user/repo", "", false},
		{"npm", "git+https://x.example.com/r.git", "", false},
		{"npm", "foo@1.0.0", "", false},
		// Archive files, which npx and uvx install from disk.
		{"npm", "evil.tgz", "", false},
		{"npm", "evil.TAR", "", false},
		{"npm", "@scope/evil.tar.gz", "", false},
		{"npm", "good", "evil.tgz", false},
		{"pypi", "evil.whl", "", false},
		{"pypi", "evil.tar.gz", "", false},
		{"pypi", "evil.zip", "", false},
		{"pypi", "good", "1.0.tar.gz", false},
		{"pypi", "evil.tar.zst", "", false},
		{"pypi", "evil.txz", "", false},
		{"pypi", "evil.tar.lzma", "", false},
		{"npm", "tgz", "", true},
		{"pypi", "zipp", "", true},
		{"npm", "socket.io", "4.7.5", true},
		{"npm", "JSONStream", "", true}, // legacy upper-case names exist
		{"npm", "_private", "", false},
		{"npm", "", "", false},
		{"npm", strings.Repeat("a", 215), "", false},
		{"pypi", "pkg==1.0", "", false},
		{"pypi", "pkg[extra]", "", false},
		{"pypi", "git+https://x.example.com/r.git", "", false},
		{"pypi", ".hidden", "", false},
		{"pypi", "trailing-", "", false},
		{"pypi", "", "", false},
		{"pypi", strings.Repeat("a", 101), "", false},
		// Spaces and shell metacharacters.
		{"npm", "a b", "", false},
		{"npm", "a;id", "", false},
		{"npm", "a|id", "", false},
		{"npm", "a&&id", "", false},
		{"npm", "$(id)", "", false},
		{"npm", "`id`", "", false},
		{"npm", "a\nb", "", false},
		{"npm", "a>b", "", false},
		{"pypi", "a b", "", false},
		{"pypi", "a;id", "", false},
		{"pypi", "$(id)", "", false},
		{"npm", "good", "1.0 || 2", false},
		{"npm", "good", "1.0;id", false},
		{"npm", "good", "^1.0.0", false},
		{"npm", "good", "1.0.0\n", false},
		{"pypi", "good", ">=1.0", false},
		{"pypi", "good", "1.0,<2", false},
		{"pypi", "good", "1.0 ; id", false},
		{"npm", "good", strings.Repeat("1", 65), false},
		// Registry types that cannot be launched.
		{"oci", "docker.io/library/alpine", "3", false},
		{"NPM", "left-pad", "", false},
		{"", "left-pad", "", false},
		{"nuget", "Some.Package", "", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%q@%q", tt.typ, tt.id, tt.version), func(t *testing.T) {
			err := guard.CheckPackage(tt.typ, tt.id, tt.version)
			if tt.ok {
				if err != nil {
					t.Errorf("CheckPackage = %v, want ok", err)
				}
				return
			}
			wantRefusal(t, err, "stdio.package")
		})
	}
}

func TestStdioEnv(t *testing.T) {
	gateway := map[string]string{
		"PATH":                  "/usr/local/bin:/usr/bin",
		"HOME":                  "/home/gw",
		"LANG":                  "C.UTF-8",
		"EMPTY":                 "",
		"AWS_SECRET_ACCESS_KEY": "do-not-leak",
		"ARDGATE_AUTH_TOKEN":    "do-not-leak-either",
		"NODE_OPTIONS":          "--require /tmp/evil.js",
	}
	tests := []struct {
		name    string
		passEnv []string
		extra   []string
		noPath  bool
		want    []string
	}{
		{"PATH only", nil, nil, false, []string{"PATH=/usr/local/bin:/usr/bin"}},
		{"pass env", []string{"HOME", "LANG"}, nil, false, []string{"PATH=/usr/local/bin:/usr/bin", "HOME=/home/gw", "LANG=C.UTF-8"}},
		{"extra", nil, []string{"HOME"}, false, []string{"PATH=/usr/local/bin:/usr/bin", "HOME=/home/gw"}},
		{"missing names are skipped", []string{"NOPE", "HOME"}, []string{"ALSO_NOPE"}, false, []string{"PATH=/usr/local/bin:/usr/bin", "HOME=/home/gw"}},
		{"set but empty is passed", []string{"EMPTY"}, nil, false, []string{"PATH=/usr/local/bin:/usr/bin", "EMPTY="}},
		{"no duplicates", []string{"HOME", "PATH", "HOME"}, []string{"LANG", "HOME", "PATH", "LANG"}, false,
			[]string{"PATH=/usr/local/bin:/usr/bin", "HOME=/home/gw", "LANG=C.UTF-8"}},
		{"no PATH in gateway", []string{"HOME"}, nil, true, []string{"HOME=/home/gw"}},
		{"names with = are not variables", []string{"HOME=/evil"}, []string{"PATH=/evil", "=x"}, false, []string{"PATH=/usr/local/bin:/usr/bin"}},
		{"nothing at all", nil, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var looked []string
			lookup := func(name string) (string, bool) {
				mu.Lock()
				looked = append(looked, name)
				mu.Unlock()
				if tt.noPath && name == "PATH" {
					return "", false
				}
				v, ok := gateway[name]
				return v, ok
			}
			p := &guard.Stdio{PassEnv: tt.passEnv, LookupEnv: lookup}
			got := p.Env(tt.extra)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Env = %q, want %q", got, tt.want)
			}
			asked := slices.Concat(guard.BaseEnv, tt.passEnv, tt.extra)
			for _, kv := range got {
				name, value, _ := strings.Cut(kv, "=")
				if !slices.Contains(asked, name) {
					t.Errorf("Env leaked %q, which nobody asked for", kv)
				}
				if gateway[name] != value {
					t.Errorf("Env has %q, gateway value is %q", kv, gateway[name])
				}
				if strings.Contains(value, "do-not-leak") {
					t.Errorf("Env leaked a secret: %q", kv)
				}
			}
			for _, name := range looked {
				if !slices.Contains(asked, name) {
					t.Errorf("Env looked up %q, which nobody asked for", name)
				}
			}
			if uniq := slices.Compact(slices.Sorted(slices.Values(looked))); len(uniq) != len(looked) {
				t.Errorf("Env looked up a name twice: %q", looked)
			}
		})
	}

	t.Run("real environment by default", func(t *testing.T) {
		t.Setenv("ARDGATE_GUARD_TEST_PASS", "yes")
		t.Setenv("ARDGATE_GUARD_TEST_SECRET", "no")
		got := (&guard.Stdio{PassEnv: []string{"ARDGATE_GUARD_TEST_PASS"}}).Env(nil)
		if !slices.Contains(got, "ARDGATE_GUARD_TEST_PASS=yes") {
			t.Errorf("Env = %q, want the passed variable", got)
		}
		if path, ok := os.LookupEnv("PATH"); ok && !slices.Contains(got, "PATH="+path) {
			t.Errorf("Env = %q, want PATH", got)
		}
		for _, kv := range got {
			if strings.HasPrefix(kv, "ARDGATE_GUARD_TEST_SECRET=") {
				t.Errorf("Env leaked %q", kv)
			}
		}
		for _, kv := range got {
			if name, _, _ := strings.Cut(kv, "="); name != "ARDGATE_GUARD_TEST_PASS" && !slices.Contains(guard.BaseEnv, name) {
				t.Errorf("Env has %q, neither passed nor one every child gets", kv)
			}
		}
	})
}
