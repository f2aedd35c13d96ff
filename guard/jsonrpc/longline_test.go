package jsonrpc

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// A line over Max is read to its end and dropped, and its top-level id
// and whether it has a method are told, wherever they lie in it and
// wherever the reads cut it; the line after it is read as usual.
func TestLongLine(t *testing.T) {
	const max = 64
	pad := strings.Repeat("x", 100) // makes a line long
	cases := []struct {
		name, line string
		id         string // "" for none
		method     bool
	}{
		{"id first", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"t":"` + pad + `"}}`, "7", true},
		{"id last, as the TypeScript SDK writes it", `{"jsonrpc":"2.0","method":"tools/call","params":{"t":"` + pad + `"},"id":12}`, "12", true},
		{"an answer, id after its result", `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + pad + `"}]},"id":"a-1"}`, `"a-1"`, false},
		{"string id with escapes", `{"method":"m","params":"` + pad + `","id":"q\"\\\u00e9"}`, `"q\"\\\u00e9"`, true},
		{"a negative id, spaced", `{ "id" : -3 , "method" : "m", "p": "` + pad + `" }`, "-3", true},
		{"ids and methods nested or in strings do not count", `{"params":{"id":9,"method":"x","a":["id",{"id":1}]},"t":"\"id\":5 ` + pad + `","result":1}`, "", false},
		{"backslashes before quotes", `{"t":"\\\\\\\"` + pad + `\\\\","id":4,"result":{}}`, "4", false},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + pad + `"}}`, "", true},
		{"a later id overrides", `{"id":1,"method":"m","p":"` + pad + `","id":2}`, "2", true},
		{"null id", `{"id":null,"method":"m","p":"` + pad + `"}`, "", true},
		{"object id", `{"id":{"a":1},"method":"m","p":"` + pad + `"}`, "", true},
		{"id too long", `{"id":"` + strings.Repeat("i", 200) + `","method":"m"}`, "", true},
		{"longer names that start alike", `{"identity":1,"methods":2,"p":"` + pad + `"}`, "", false},
		{"a batch", `[{"id":1,"method":"m","p":"` + pad + `"}]`, "", false},
		{"not JSON", strings.Repeat("garbage ", 20), "", false},
	}
	for _, c := range cases {
		for rname, r := range readers {
			for _, end := range []string{"\n", "\r\n", ""} {
				t.Run(c.name+"/"+rname+"/"+strings.ReplaceAll(strings.ReplaceAll(end, "\r", "CR"), "\n", "LF"), func(t *testing.T) {
					in := c.line + end
					if end != "" {
						in += `{"id":3}` + "\n"
					}
					l := NewLineReader(r(in), 16)
					l.Max = max
					_, err := l.ReadLine()
					var long *LongLine
					if !errors.As(err, &long) || !errors.Is(err, ErrFrameTooLarge) {
						t.Fatalf("err %v, want a *LongLine", err)
					}
					if string(long.ID) != c.id || long.Method != c.method || long.Size != len(c.line) || long.Max != max {
						t.Errorf("got id %q, method %v, size %d; want %q, %v, %d", long.ID, long.Method, long.Size, c.id, c.method, len(c.line))
					}
					next, err := l.ReadLine()
					if end == "" {
						if len(next) != 0 || err != io.EOF {
							t.Errorf("after the last line: %q, %v", next, err)
						}
						return
					}
					if string(next) != `{"id":3}`+"\n" || err != nil {
						t.Errorf("the line after: %q, %v", next, err)
					}
				})
			}
		}
	}
}

// Lines up to Max are read as without it, and the cap counts no newline.
func TestLongLineAtMax(t *testing.T) {
	const max = 40
	atMax := `{"id":1,"p":"` + strings.Repeat("x", max-len(`{"id":1,"p":""}`)) + `"}`
	for _, line := range []string{atMax + "\n", atMax + "\r\n", atMax} {
		l := NewLineReader(strings.NewReader(line), 16)
		l.Max = max
		got, err := l.ReadLine()
		if string(got) != line || err != nil && err != io.EOF {
			t.Errorf("a line of %d bytes at a cap of %d: %q, %v", len(atMax), max, got, err)
		}
	}
	l := NewLineReader(strings.NewReader(atMax+"x\n"), 16)
	l.Max = max
	if _, err := l.ReadLine(); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("one byte over: %v", err)
	}
}

// A stream that fails within a long line fails the read: LimitFrames
// behind a LineReader bounds what it reads through (a flood).
func TestLongLineFlood(t *testing.T) {
	l := NewLineReader(LimitFrames(strings.NewReader(`{"id":1,"p":"`+strings.Repeat("x", 1000)), 500), 16)
	l.Max = 100
	_, err := l.ReadLine()
	var long *LongLine
	if !errors.Is(err, ErrFrameTooLarge) || errors.As(err, &long) || !strings.Contains(err.Error(), "500 bytes cap") {
		t.Fatalf("err %v, want LimitFrames' own", err)
	}
}

// FuzzLongLine: on any object ReadMessage reads, the seeker, fed in two
// pieces cut anywhere, finds the same id (or none when ReadMessage's is
// not a string or number, or is long) and the same method presence.
func FuzzLongLine(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"m"}`, `{"method":"m","params":{"id":2},"id":"x\"y"}`, `{"result":{"a":[1,"id"]},"id":-4}`,
		`{"a":"\\\"","id":"\\\\"}`, `{ "id" : 5 , "id":null}`, `{"id":[1],"method":0}`, `{"\u0069d":1}`,
	} {
		f.Add(s, uint(3))
	}
	f.Fuzz(func(t *testing.T, line string, cut uint) {
		m, err := ReadMessage([]byte(line))
		if err != nil {
			return
		}
		var s idSeeker
		at := int(cut % uint(len(line)+1))
		s.feed([]byte(line[:at]))
		s.feed([]byte(line[at:]))
		want := ""
		if id := string(m.ID); len(id) <= maxID && id != "" && strings.ContainsAny(id[:1], `"-0123456789`) {
			want = id
		}
		if got := string(s.routeID()); got != want || s.method != (m.Method != nil) {
			t.Fatalf("%q cut at %d: id %q, method %v; ReadMessage: id %q, method %q", line, at, got, s.method, m.ID, m.Method)
		}
	})
}

// RouteOf finds the id of a line ReadMessage refuses, wherever it lies:
// after a result nested too deep too, as the TypeScript SDK writes it
// last.
func TestRouteOf(t *testing.T) {
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	for _, c := range []struct {
		line, id string
		method   bool
	}{
		{`{"jsonrpc":"2.0","result":{"tools":` + deep + `},"id":7}`, "7", false},
		{`{"id":"a","result":` + deep + `}`, `"a"`, false},
		{`{"method":"x","id":3,"params":` + deep + `}`, "3", true},
		{`{"method":"notifications/x","params":` + deep + `}`, "", true},
		{`{"id":{"not":"an id"},"result":1}`, "", false},
		{`not json`, "", false},
	} {
		if _, err := ReadMessage([]byte(c.line)); err == nil && strings.Contains(c.line, deep) {
			t.Fatalf("ReadMessage took %.40s…", c.line)
		}
		id, method := RouteOf([]byte(c.line))
		if string(id) != c.id || method != c.method {
			t.Errorf("RouteOf(%.40s…) = %s, %v; want %s, %v", c.line, id, method, c.id, c.method)
		}
	}
}
