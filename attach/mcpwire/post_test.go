package mcpwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
)

// readBody returns the body whole whatever its size, whether its length
// is given or not and however the reads come; a broken body is an error.
func TestReadBody(t *testing.T) {
	const block = 64 << 10
	readers := map[string]func([]byte) io.Reader{
		"whole":    func(b []byte) io.Reader { return bytes.NewReader(b) },
		"bytewise": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"halves":   func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
	}
	for _, size := range []int{0, 1, 200, block - 1, block, block + 1, 3*block + 7, 1 << 20} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte('a' + i%26)
		}
		for rname, r := range readers {
			for _, length := range []int64{-1, int64(size)} {
				t.Run(fmt.Sprintf("%d/%s/length%d", size, rname, length), func(t *testing.T) {
					got, err := readBody(r(body), length)
					if err != nil || !bytes.Equal(got, body) {
						t.Fatalf("%d bytes, %v; want %d bytes", len(got), err, size)
					}
					if cap(got) != size {
						t.Errorf("read into %d bytes for a body of %d", cap(got), size)
					}
				})
			}
		}
	}
	broken := errors.New("connection reset")
	for _, length := range []int64{-1, 3 * block} {
		in := io.MultiReader(bytes.NewReader(make([]byte, 2*block+5)), iotest.ErrReader(broken))
		if _, err := readBody(in, length); !errors.Is(err, broken) {
			t.Errorf("length %d: a body broken midway: %v, want %v", length, err, broken)
		}
	}
	if _, err := readBody(bytes.NewReader(make([]byte, 10)), 20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a body shorter than its length: %v", err)
	}
}
