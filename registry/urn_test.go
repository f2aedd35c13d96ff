package registry

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseURN(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		publisher string
		namespace []string
		urnName   string
	}{
		{"air prefix", "urn:air:acme.com:mcp:weather", "acme.com", []string{"mcp"}, "weather"},
		{"legacy ai prefix", "urn:ai:acme.com:mcp:weather", "acme.com", []string{"mcp"}, "weather"},
		{"upper-case prefix", "URN:AIR:acme.com:mcp:weather", "acme.com", []string{"mcp"}, "weather"},
		{"mixed-case legacy prefix", "Urn:Ai:acme.com:x", "acme.com", nil, "x"},
		{"publisher lower-cased", "urn:air:Acme.COM:mcp:weather", "acme.com", []string{"mcp"}, "weather"},
		{"namespace and name keep their case", "urn:air:acme.com:MCP:Weather", "acme.com", []string{"MCP"}, "Weather"},
		{"no namespace", "urn:air:acme.com:weather", "acme.com", nil, "weather"},
		{"several namespaces", "urn:air:acme.com:a:b:c:name", "acme.com", []string{"a", "b", "c"}, "name"},
		{"segment punctuation", "urn:air:a-b.example:ns:name_1.v2-x", "a-b.example", []string{"ns"}, "name_1.v2-x"},
		{"single-label publisher", "urn:air:localhost:x", "localhost", nil, "x"},
		{"digits in publisher", "urn:air:1.2.3.4:x", "1.2.3.4", nil, "x"},
		{"punycode publisher", "urn:air:xn--bcher-kva.example:mcp:b", "xn--bcher-kva.example", []string{"mcp"}, "b"},
		{"63-character label", "urn:air:" + strings.Repeat("a", 63) + ".com:x", strings.Repeat("a", 63) + ".com", nil, "x"},
		{"exactly the length limit", "urn:air:acme.com:" + strings.Repeat("n", maxURNLength-len("urn:air:acme.com:")),
			"acme.com", nil, strings.Repeat("n", maxURNLength-len("urn:air:acme.com:"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := ParseURN(tt.in)
			if err != nil {
				t.Fatalf("ParseURN(%q): %v", tt.in, err)
			}
			if u.Publisher != tt.publisher || !slices.Equal(u.Namespace, tt.namespace) || u.Name != tt.urnName {
				t.Fatalf("ParseURN(%q) = %+v; want publisher %q, namespace %q, name %q",
					tt.in, u, tt.publisher, tt.namespace, tt.urnName)
			}
		})
	}
}

func TestParseURNRefusals(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"other NID", "urn:x:acme.com:a"},
		{"no urn scheme", "air:acme.com:a"},
		{"prefix without colon", "urn:airacme.com:a"},
		{"prefix only", "urn:air:"},
		{"no name", "urn:air:acme.com"},
		{"legacy, no name", "urn:ai:acme.com"},
		{"empty publisher", "urn:air::x"},
		{"publisher starts with hyphen", "urn:air:-x.com:a"},
		{"publisher label ends with hyphen", "urn:air:x-.com:a"},
		{"publisher empty label", "urn:air:a..b:x"},
		{"publisher trailing dot", "urn:air:acme.com.:x"},
		{"publisher leading dot", "urn:air:.acme.com:x"},
		{"publisher underscore", "urn:air:ac_me.com:x"},
		{"publisher 64-character label", "urn:air:" + strings.Repeat("a", 64) + ".com:x"},
		{"publisher non-ASCII", "urn:air:bücher.example:x"},
		{"empty namespace", "urn:air:acme.com::a"},
		{"empty name", "urn:air:acme.com:mcp:"},
		{"space in segment", "urn:air:acme.com:a b"},
		{"slash in segment", "urn:air:acme.com:a/b"},
		{"query char in segment", "urn:air:acme.com:a?b"},
		{"hash in segment", "urn:air:acme.com:a#b"},
		{"at sign in segment", "urn:air:acme.com:a@b"},
		{"non-ASCII segment", "urn:air:acme.com:é"},
		{"NUL in segment", "urn:air:acme.com:a\x00b"},
		{"newline in segment", "urn:air:acme.com:a\nb"},
		{"over-long", "urn:air:acme.com:" + strings.Repeat("a", 600)},
		{"over-long by one", "urn:air:acme.com:" + strings.Repeat("n", maxURNLength-len("urn:air:acme.com:")+1)},
		// A legacy identifier at the limit grows past it when canonicalised.
		{"legacy over-long once canonical", "urn:ai:acme.com:" + strings.Repeat("n", maxURNLength-len("urn:ai:acme.com:"))},
		{"javascript", "javascript:alert(1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := ParseURN(tt.in)
			if !errors.Is(err, ErrBadURN) {
				t.Fatalf("ParseURN(%q) = %+v, %v; want ErrBadURN", tt.in, u, err)
			}
		})
	}
}

func TestCanonicalURN(t *testing.T) {
	tests := []struct{ in, want string }{
		{"urn:air:acme.com:mcp:weather", "urn:air:acme.com:mcp:weather"},
		{"urn:ai:acme.com:mcp:weather", "urn:air:acme.com:mcp:weather"},
		{"URN:AI:Acme.COM:mcp:weather", "urn:air:acme.com:mcp:weather"},
		{"uRn:AiR:ACME.com:Mcp:Weather", "urn:air:acme.com:Mcp:Weather"},
		{"urn:air:acme.com:x", "urn:air:acme.com:x"},
		// Not URNs: returned unchanged.
		{"urn:x:foo", "urn:x:foo"},
		{"", ""},
		{"urn:air:-x.com:a", "urn:air:-x.com:a"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := CanonicalURN(tt.in); got != tt.want {
				t.Fatalf("CanonicalURN(%q) = %q; want %q", tt.in, got, tt.want)
			}
			// Canonicalising is idempotent.
			if again := CanonicalURN(tt.want); again != tt.want {
				t.Fatalf("CanonicalURN(%q) = %q; not idempotent", tt.want, again)
			}
		})
	}
}

func TestURNString(t *testing.T) {
	tests := []struct {
		u    URN
		want string
	}{
		{URN{Publisher: "acme.com", Name: "x"}, "urn:air:acme.com:x"},
		{URN{Publisher: "acme.com", Namespace: []string{"mcp"}, Name: "x"}, "urn:air:acme.com:mcp:x"},
		{URN{Publisher: "acme.com", Namespace: []string{"a", "b"}, Name: "x"}, "urn:air:acme.com:a:b:x"},
	}
	for _, tt := range tests {
		if got := tt.u.String(); got != tt.want {
			t.Errorf("%+v.String() = %q; want %q", tt.u, got, tt.want)
		}
	}
}

// FuzzParseURN: ParseURN never panics, and any accepted input round-trips:
// ParseURN(u.String()) gives back the same URN, already canonical.
func FuzzParseURN(f *testing.F) {
	for _, s := range []string{
		"urn:air:acme.com:mcp:weather",
		"urn:ai:ACME.com:x",
		"URN:AIR:Acme.COM:MCP:Name",
		"urn:air:a:b:c:d:e",
		"urn:air::x",
		"urn:air:acme.com::x",
		"urn:air:-x.com:a",
		"urn:air:a..b:x",
		"urn:air:acme.com:é",
		"urn:air:xn--bcher-kva.example:mcp:b",
		"urn:air:1.2.3.4:x",
		"urn:air:acme.com:a b",
		"",
		// Inputs at the length limit are in the table tests above: as
		// seeds they make the fuzzer spend its time minimising.
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseURN(s)
		if err != nil {
			if !errors.Is(err, ErrBadURN) {
				t.Fatalf("ParseURN(%q): error %v does not wrap ErrBadURN", s, err)
			}
			if CanonicalURN(s) != s {
				t.Fatalf("CanonicalURN changed %q, which does not parse", s)
			}
			return
		}
		canon := u.String()
		again, err := ParseURN(canon)
		if err != nil {
			t.Fatalf("%q → %q does not parse again: %v", s, canon, err)
		}
		if again.Publisher != u.Publisher || again.Name != u.Name || !slices.Equal(again.Namespace, u.Namespace) {
			t.Fatalf("%q → %+v → %q → %+v: not the same URN", s, u, canon, again)
		}
		if again.String() != canon || CanonicalURN(s) != canon || CanonicalURN(canon) != canon {
			t.Fatalf("%q: canonical form %q is not stable", s, canon)
		}
		if u.Publisher != strings.ToLower(u.Publisher) || u.Name == "" {
			t.Fatalf("%q parsed into %+v", s, u)
		}
	})
}
