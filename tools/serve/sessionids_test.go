package serve

import (
	"strings"
	"testing"
)

// An ended session's id is told apart from one never issued while it is
// among the last maxEnded, and forgotten after; what is kept stays
// bounded however many sessions end.
func TestSessionIDs(t *testing.T) {
	var s SessionIDs
	first := s.Generate()
	if !strings.HasPrefix(first, "mcp-session-") {
		t.Fatalf("id %q", first)
	}
	if ended, err := s.Validate(first); ended || err != nil {
		t.Fatalf("a live id: %v %v", ended, err)
	}
	if _, err := s.Validate("mcp-session-never"); err == nil {
		t.Fatal("an id never issued is valid")
	}
	if _, err := s.Terminate(first); err != nil {
		t.Fatal(err)
	}
	if ended, err := s.Validate(first); !ended || err != nil {
		t.Fatalf("an ended id: %v %v", ended, err)
	}
	if _, err := s.Terminate("mcp-session-never"); err != nil {
		t.Fatal(err)
	}
	for range maxEnded {
		id := s.Generate()
		if _, err := s.Terminate(id); err != nil {
			t.Fatal(err)
		}
	}
	if ended, err := s.Validate(first); ended || err == nil {
		t.Fatalf("an id ended %d sessions ago: %v %v", maxEnded, ended, err)
	}
	if n := len(s.ended); n != maxEnded {
		t.Fatalf("%d ended ids kept, want %d", n, maxEnded)
	}
	live := 0
	s.live.Range(func(any, any) bool { live++; return true })
	if live != 0 {
		t.Fatalf("%d live ids after every session ended", live)
	}
}
