package guard

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Both frame guards, against what they promise line by line, whether a
// read brings one byte or the whole stream.
func TestFrames(t *testing.T) {
	const max = 8
	cases := []struct {
		name, in string
		tooBig   bool // some line is longer than max
	}{
		{"short lines", "a\nbb\n\nccc\n", false},
		{"exactly max", "12345678\n12345678", false},
		{"one over", "123456789\nok\n", true},
		{"long last line", "ok\n" + strings.Repeat("x", 30), true},
		{"long middle line", "ok\n" + strings.Repeat("y", 20) + "\nafter\n", true},
		{"no newline at all", "", false},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"bytewise": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"halves":   func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, c := range cases {
		var want bytes.Buffer
		for i, line := range strings.Split(c.in, "\n") {
			if i > 0 {
				want.WriteByte('\n')
			}
			want.WriteString(line[:min(len(line), max)])
		}
		for rname, r := range readers {
			t.Run(c.name+"/"+rname, func(t *testing.T) {
				got, err := io.ReadAll(TruncateFrames(r(c.in), max))
				if err != nil || string(got) != want.String() {
					t.Errorf("TruncateFrames: %q, %v; want %q", got, err, want.String())
				}
				got, err = io.ReadAll(LimitFrames(r(c.in), max))
				if (err != nil) != c.tooBig {
					t.Fatalf("LimitFrames: error %v, want one: %v", err, c.tooBig)
				}
				if err == nil && string(got) != c.in {
					t.Errorf("LimitFrames passed %q, not %q", got, c.in)
				}
				if err != nil && !strings.Contains(err.Error(), "larger than the 8 bytes cap") {
					t.Errorf("LimitFrames error %q does not name the cap", err)
				}
			})
		}
	}
}

// ReadLine hands out lines that fit in the reader's buffer where they lie,
// and gathers longer ones whole, in any number of pieces.
func TestReadLine(t *testing.T) {
	const bufSize = 16 // bufio's smallest
	long := strings.Repeat("x", 5*bufSize+3)
	in := "short\n" + long + "\n" + "\n" + strings.Repeat("y", bufSize) + "\n" + "tail"
	want := []struct {
		line  string
		owned bool
	}{
		{"short\n", false},
		{long + "\n", true},
		{"\n", false},
		{strings.Repeat("y", bufSize) + "\n", true}, // the newline is past the buffer
		{"tail", false},
	}
	br := bufio.NewReaderSize(strings.NewReader(in), bufSize)
	for i, w := range want {
		line, owned, err := ReadLine(br)
		if string(line) != w.line || owned != w.owned {
			t.Fatalf("line %d: got %q owned %v, want %q owned %v", i, line, owned, w.line, w.owned)
		}
		if wantErr := i == len(want)-1; (err != nil) != wantErr {
			t.Fatalf("line %d: err %v", i, err)
		}
	}
	if _, _, err := ReadLine(br); err != io.EOF {
		t.Fatalf("after the end: %v, want io.EOF", err)
	}
}
