package registry

import (
	"errors"
	"strings"
	"testing"
)

func TestURNCases(t *testing.T) {
	good := map[string]string{
		"urn:air:acme.com:mcp:weather":         "urn:air:acme.com:mcp:weather",
		"URN:AI:Acme.COM:mcp:weather":          "urn:air:acme.com:mcp:weather",
		"urn:air:acme.com:weather":             "urn:air:acme.com:weather",
		"urn:air:a-b.example:ns:sub:name_1.v2": "urn:air:a-b.example:ns:sub:name_1.v2",
	}
	for in, want := range good {
		u, err := ParseURN(in)
		if err != nil || u.String() != want {
			t.Errorf("ParseURN(%q) = %q, %v; want %q", in, u.String(), err, want)
		}
	}
	for _, bad := range []string{"", "urn:x:acme.com:a", "urn:air:acme.com", "urn:air:-acme.com:a", "urn:air:acme..com:a",
		"urn:air:acme.com::a", "urn:air:acme.com:a b", "urn:air:acme.com:a/b", "urn:air:" + strings.Repeat("a", 600) + ":x"} {
		if _, err := ParseURN(bad); !errors.Is(err, ErrBadURN) {
			t.Errorf("ParseURN(%q) accepted or wrong error: %v", bad, err)
		}
	}
}

// FuzzURN: the parser never panics, every accepted URN round-trips
// through its canonical form, and its parts hold only allowed characters.
func FuzzURN(f *testing.F) {
	for _, s := range []string{"urn:air:acme.com:mcp:weather", "urn:ai:ACME.com:x", "urn:air:a:b:c:d:e", "urn:air::x",
		"urn:air:acme.com:é", "urn:air:xn--bcher-kva.example:mcp:b", "urn:air:1.2.3.4:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseURN(s)
		if err != nil {
			return
		}
		again, err := ParseURN(u.String())
		if err != nil || again.String() != u.String() {
			t.Fatalf("%q → %q does not round-trip: %v", s, u.String(), err)
		}
		if strings.ContainsAny(u.String()[len("urn:air:"):], " /?#@\\") || u.Publisher != strings.ToLower(u.Publisher) {
			t.Fatalf("%q parsed into %+v", s, u)
		}
	})
}
