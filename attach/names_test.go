package attach

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// Tool names must match this on every client we know of.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func TestServerName(t *testing.T) {
	cases := map[string]string{
		"everything":                           "everything",
		"sequential-thinking":                  "sequential_thinking",
		"Weather.API v2":                       "weather_api_v2",
		"--x--":                                "x",
		"":                                     "server",
		"日本語":                                  "server",
		"a-very-long-server-name-that-goes-on": "a_very_long_server_name",
	}
	for in, want := range cases {
		if got := serverName(in); got != want {
			t.Errorf("serverName(%q) = %q, want %q", in, got, want)
		}
	}
}

// hash6 is the short hash a tool name is given of s.
func hash6(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:3])
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 80)
	cases := []struct{ server, tool, want string }{
		{"everything", "echo", "mcp_everything__echo"},
		{"everything", "get-annotated-message", "mcp_everything__get-annotated-message"},
		{"fs", "read file", "mcp_fs__read_file"},
		{"fs", "ümlaut", "mcp_fs___mlaut"},
		// No letter or digit left: "tool" and a hash of the name, where
		// 天気 and お天気 were mcp_weird____ and mcp_weird_____.
		{"weird", "天気", "mcp_weird__tool_" + hash6("天気")},
		{"weird", "お天気", "mcp_weird__tool_" + hash6("お天気")},
		{"weird", "--", "mcp_weird__tool_" + hash6("--")},
	}
	for _, c := range cases {
		if got := toolName(c.server, c.tool); got != c.want {
			t.Errorf("toolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
	a, b := toolName("srv", long), toolName("srv", long+"y")
	if len(a) != 64 || len(b) != 64 || a == b || !toolNamePattern.MatchString(a) {
		t.Errorf("long names not cut to distinct valid 64-char names: %q %q", a, b)
	}
	if toolName("srv", long) != a {
		t.Error("shortening is not deterministic")
	}
}

// Two upstream names that sanitise alike stay apart, and the names do not
// depend on the order the upstream listed its tools in.
func TestExposeToolsCollisionsAndOrder(t *testing.T) {
	def := func(name string) *Definition { return &Definition{Tool: mcp.Tool{Name: name}} }
	fs := &Attachment{Name: "fs"}
	first := fs.expose([]*Definition{def("read file"), def("read_file"), def("echo")})
	reversed := fs.expose([]*Definition{def("echo"), def("read_file"), def("read file")})
	names := map[string]string{}
	for _, tl := range first {
		if !toolNamePattern.MatchString(tl.Name) {
			t.Errorf("invalid name %q", tl.Name)
		}
		if prev, dup := names[tl.Name]; dup {
			t.Errorf("%q and %q both exposed as %q", prev, tl.Upstream.Name, tl.Name)
		}
		names[tl.Name] = tl.Upstream.Name
	}
	for i := range first {
		if first[i].Name != reversed[i].Name || first[i].Upstream.Name != reversed[i].Upstream.Name {
			t.Errorf("order-dependent naming: %v vs %v", first, reversed)
		}
	}
}

// A server's "tools" patterns let through only the tools they match.
func TestExposeOnly(t *testing.T) {
	def := func(name string) *Definition { return &Definition{Tool: mcp.Tool{Name: name}} }
	list := []*Definition{def("write_file"), def("read_file"), def("read_dir"), def("echo")}
	for _, c := range []struct {
		only []string
		want []string
	}{
		{nil, []string{"mcp_fs__echo", "mcp_fs__read_dir", "mcp_fs__read_file", "mcp_fs__write_file"}},
		{[]string{"read_*"}, []string{"mcp_fs__read_dir", "mcp_fs__read_file"}},
		{[]string{"echo", "read_file"}, []string{"mcp_fs__echo", "mcp_fs__read_file"}},
		{[]string{"nothing"}, []string{}},
	} {
		var got []string
		for _, tl := range (&Attachment{Name: "fs", Only: c.only}).expose(slices.Clone(list)) {
			got = append(got, tl.Name)
		}
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("only %q: %v, want %v", c.only, got, c.want)
		}
	}
}

// Names given: on a first listing a name that needs no cleaning gets
// exactly its own whatever is listed beside it, and one cleaned to a name
// taken gets a hash; at a later listing every name given stays its item's
// (a tool added later never takes another's name, which a client may be
// about to call); a hashed name that is taken too gets another; a name
// listed twice is named once.
func TestExposedNames(t *testing.T) {
	unique := func(list []string, got map[string]string) {
		t.Helper()
		seen := map[string]bool{}
		for _, n := range got {
			if seen[n] || !toolNamePattern.MatchString(n) {
				t.Errorf("%q: %q given twice, or not a tool name: %v", list, n, got)
			}
			seen[n] = true
		}
		if len(got) != len(slices.Compact(slices.Sorted(slices.Values(list)))) {
			t.Errorf("%q: %d names for %v", list, len(got), got)
		}
	}
	for _, list := range [][]string{{"a b", "a_b"}, {"a_b", "a b"}, {"a b", "a_b", "a-b", "a_b"}} {
		got := exposedNames("fx", list, nil)
		if got["a_b"] != "mcp_fx__a_b" || !strings.HasPrefix(got["a b"], "mcp_fx__a_b_") {
			t.Errorf("%q: %v; want a_b its own name, a b a hashed one", list, got)
		}
		unique(list, got)
	}

	// sha256("hello world") begins b94d27: its hashed name is listed too.
	clash := []string{"hello world", "hello_world", "hello_world_b94d27"}
	unique(clash, exposedNames("fx", clash, nil))

	first := exposedNames("fx", []string{"hello world"}, nil)
	later := []string{"hello world", "hello_world", "hello_world_b94d27"}
	got := exposedNames("fx", later, first)
	if got["hello world"] != first["hello world"] || got["hello world"] != "mcp_fx__hello_world" {
		t.Errorf("a name given before changed: %v, was %v", got, first)
	}
	unique(later, got)
}

// A detach that finds nothing names what is attached, and the one meant
// when the name asked differs from it only in case, dashes or dots.
func TestAttachedNames(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("s%d", i)
	}
	for _, c := range []struct {
		asked string
		names []string
		want  string
	}{
		{"ghost", nil, ", which has nothing attached"},
		{"remote-fixture", []string{"fx", "remote_fixture"}, ": did you mean remote_fixture?"},
		{"Remote.Fixture", []string{"remote_fixture"}, ": did you mean remote_fixture?"},
		{"ghost", []string{"fx", "memory"}, ", which has fx, memory attached"},
		{"ghost", many, ", which has s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 and 2 more attached"},
	} {
		if got := attachedNames(c.asked, c.names); got != c.want {
			t.Errorf("attachedNames(%q, %v) = %q, want %q", c.asked, c.names, got, c.want)
		}
	}
}
