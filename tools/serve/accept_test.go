package serve

import "testing"

// An Accept header takes an event stream when it names one or a wildcard
// covering it, or is absent; it names one only as text/event-stream, which
// a quiet call's answer asks for; q=0 takes nothing.
func TestEventStreamAccepted(t *testing.T) {
	for _, c := range []struct {
		accept       string
		taken, named bool
	}{
		{"", true, false},
		{"application/json, text/event-stream", true, true},
		{"application/json,TEXT/Event-Stream;q=1", true, true},
		{"text/*", true, false},
		{" */* ", true, false},
		{"application/json", false, false},
		{"application/json, text/html", false, false},
		{"text/event-streams", false, false},
		{"application/json, text/event-stream;q=0", false, false},
		// The most specific range decides: the type refused, whatever
		// the wildcards say.
		{"text/event-stream; charset=utf-8; q=0.0, */*;q=0.1", false, false},
		{"text/*;q=0, */*", false, false},
		{"text/*;q=0, text/event-stream", true, true},
		{"text/plain;q=0, */*", true, false},
		{"text/event-stream;q=0.5", true, true},
	} {
		if taken, named := eventStreamAccepted(c.accept); taken != c.taken || named != c.named {
			t.Errorf("eventStreamAccepted(%q) = %v, %v; want %v, %v", c.accept, taken, named, c.taken, c.named)
		}
	}
	for accept, want := range map[string]bool{"": true, "application/json": true, "application/*": true, "text/event-stream": true,
		"text/html": false, "application/xml, text/html": false, "application/json;q=0": false, "image/*": false,
		"application/json;q=0, */*": true} { // an event stream, then
		if got := Answerable(accept); got != want {
			t.Errorf("answerable(%q) = %v, want %v", accept, got, want)
		}
	}
}
