package mcpwire

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ardgate/ardgate/attach/fault"
)

// An answer of the cap's size is read whole; a byte more fails, saying
// so, and so does every read after, and the cut is heard once.
func TestCappedBody(t *testing.T) {
	for _, c := range []struct {
		size int
		ok   bool
	}{{9, true}, {10, true}, {11, false}, {1 << 20, false}} {
		cuts := 0
		b := &cappedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("x", c.size))), left: 10, cut: func() { cuts++ }}
		got, err := io.ReadAll(b)
		if c.ok && (err != nil || len(got) != c.size) {
			t.Errorf("%d bytes under a cap of 10: %d read, %v", c.size, len(got), err)
		}
		if !c.ok {
			if !errors.Is(err, fault.ErrAnswerTooLarge) || len(got) > 10 {
				t.Errorf("%d bytes under a cap of 10: %d read, %v", c.size, len(got), err)
			}
			if _, err := b.Read(make([]byte, 4)); !errors.Is(err, fault.ErrAnswerTooLarge) {
				t.Errorf("a read after the cap: %v", err)
			}
		}
		if want := map[bool]int{true: 0, false: 1}[c.ok]; cuts != want {
			t.Errorf("%d bytes: the cut heard %d times, want %d", c.size, cuts, want)
		}
	}
}
