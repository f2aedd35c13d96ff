package guard

import (
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
// and gathers longer ones whole, in any number of pieces, into a buffer
// reused while long lines follow one another and dropped after them.
func TestReadLine(t *testing.T) {
	const bufSize = 16 // bufio's smallest
	long, longer := strings.Repeat("x", 5*bufSize+3), strings.Repeat("z", 7*bufSize)
	atEdge := strings.Repeat("y", bufSize) // its newline is past the buffer
	in := "short\n" + long + "\n" + longer + "\n" + atEdge + "\n" + "\n" + long + "\n" + "tail"
	want := []struct {
		line     string
		reused   bool // in the long buffer the line before was in
		inBuffer bool // a line in place has no long buffer behind it
	}{
		{"short\n", false, true},
		{long + "\n", false, false},
		{longer + "\n", true, false},
		{atEdge + "\n", true, false},
		{"\n", false, true},
		{long + "\n", false, false}, // after a short line, a new buffer
		{"tail", false, true},
	}
	l := NewLineReader(strings.NewReader(in), bufSize)
	var before []byte
	for i, w := range want {
		line, err := l.ReadLine()
		if string(line) != w.line {
			t.Fatalf("line %d: got %q, want %q", i, line, w.line)
		}
		if wantErr := i == len(want)-1; (err != nil) != wantErr {
			t.Fatalf("line %d: err %v", i, err)
		}
		if reused := before != nil && &line[0] == &before[0]; reused != w.reused {
			t.Errorf("line %d: reused the long buffer %v, want %v", i, reused, w.reused)
		}
		if inBuffer := l.long == nil; inBuffer != w.inBuffer {
			t.Errorf("line %d: read in place %v, want %v", i, inBuffer, w.inBuffer)
		}
		before = nil
		if !w.inBuffer {
			before = line
		}
	}
	if _, err := l.ReadLine(); err != io.EOF {
		t.Fatalf("after the end: %v, want io.EOF", err)
	}
}
