package registry

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// URN is a parsed ARD identifier: urn:air:<publisher-fqdn>[:<namespace>…]:<name>.
type URN struct {
	// Publisher is the lower-cased publisher domain.
	Publisher string
	// Namespace is the segments between publisher and name, if any.
	Namespace []string
	// Name is the last segment.
	Name string
}

// ErrBadURN reports an identifier that is not an ARD URN.
var ErrBadURN = errors.New("not an ARD URN")

var (
	publisherPattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)
	segmentPattern   = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
)

// maxURNLength bounds identifiers; registries are untrusted.
const maxURNLength = 512

// ParseURN parses s, accepting the older "urn:ai:" prefix too.
func ParseURN(s string) (URN, error) {
	if len(s) > maxURNLength {
		return URN{}, fmt.Errorf("%w: longer than %d characters", ErrBadURN, maxURNLength)
	}
	rest, ok := cutPrefixFold(s, "urn:air:")
	if !ok {
		if rest, ok = cutPrefixFold(s, "urn:ai:"); !ok {
			return URN{}, fmt.Errorf("%w: %q does not start with \"urn:air\"", ErrBadURN, s)
		}
	}
	// Bound the canonical form too: a legacy "urn:ai:" identifier grows by
	// one character when canonicalised, and must still parse afterwards.
	if len("urn:air:")+len(rest) > maxURNLength {
		return URN{}, fmt.Errorf("%w: longer than %d characters", ErrBadURN, maxURNLength)
	}
	parts := strings.Split(rest, ":")
	if len(parts) < 2 {
		return URN{}, fmt.Errorf("%w: %q needs a publisher and a name (urn:air:<publisher>:<name>)", ErrBadURN, s)
	}
	if !publisherPattern.MatchString(parts[0]) {
		return URN{}, fmt.Errorf("%w: publisher %q is not a domain name", ErrBadURN, parts[0])
	}
	for _, p := range parts[1:] {
		if !segmentPattern.MatchString(p) {
			return URN{}, fmt.Errorf("%w: segment %q may only hold letters, digits, '.', '_' and '-'", ErrBadURN, p)
		}
	}
	return URN{
		Publisher: strings.ToLower(parts[0]),
		Namespace: parts[1 : len(parts)-1],
		Name:      parts[len(parts)-1],
	}, nil
}

// String renders the URN in its canonical urn:air: form.
func (u URN) String() string {
	parts := append([]string{"urn:air", u.Publisher}, u.Namespace...)
	return strings.Join(append(parts, u.Name), ":")
}

// CanonicalURN returns s in canonical form (urn:air: prefix, lower-case
// publisher), or s unchanged when it does not parse.
func CanonicalURN(s string) string {
	u, err := ParseURN(s)
	if err != nil {
		return s
	}
	return u.String()
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
