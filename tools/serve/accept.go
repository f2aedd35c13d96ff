package serve

import (
	"cmp"
	"net/http"
	"strconv"
	"strings"
)

// AcceptsEventStream reports whether an Accept header takes an event
// stream (eventStreamAccepted).
func AcceptsEventStream(accept string) bool {
	taken, _ := eventStreamAccepted(accept)
	return taken
}

// eventStreamAccepted is accepted for text/event-stream.
func eventStreamAccepted(accept string) (taken, named bool) {
	return accepted(accept, "text/event-stream")
}

// accepted reads an Accept header for the media type mt: taken, when the
// most specific range that covers it (mt itself, then its type's
// wildcard, then */*) takes it with a q above 0, or the header is absent,
// as from clients that send none; named, when it names mt itself with a q
// above 0. "text/event-stream;q=0, */*" takes no event stream.
func accepted(accept, mt string) (taken, named bool) {
	if accept == "" {
		return true, false
	}
	const yes, no = 1, 2 // 0: the header says nothing of it
	var exact, group, anything int
	major, _, _ := strings.Cut(mt, "/")
	for rest := accept; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		r, params, _ := strings.Cut(part, ";")
		v := yes
		if qZero(params) {
			v = no
		}
		switch r = strings.TrimSpace(r); {
		case strings.EqualFold(r, mt):
			exact = v
		case len(r) == len(major)+2 && strings.EqualFold(r[:len(major)], major) && r[len(major):] == "/*":
			group = v
		case r == "*/*":
			anything = v
		}
	}
	return cmp.Or(exact, group, anything) == yes, exact == yes
}

// AcceptOf is a request's Accept header, its lines joined.
func AcceptOf(h http.Header) string {
	return strings.Join(h.Values("Accept"), ",")
}

// Answerable tells whether an Accept header takes an answer of a POST's:
// JSON or an event stream.
func Answerable(accept string) bool {
	json, _ := accepted(accept, "application/json")
	return json || AcceptsEventStream(accept)
}

// qZero tells whether a media range's parameters give it q=0.
func qZero(params string) bool {
	for rest := params; rest != ""; {
		var p string
		p, rest, _ = strings.Cut(rest, ";")
		if k, v, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}
