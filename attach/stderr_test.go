package attach

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// What a failed start says of stderr keeps the line that names a Node.js
// error, which its stack pushed out of the tail, and names npx's cache
// entry when it looks broken.
func TestStderrTail(t *testing.T) {
	u := &upstream{stderr: &tail{max: 4 << 10}}
	_, _ = io.WriteString(u.stderr, "node:internal/modules/esm/resolve:275\n    throw new ERR_MODULE_NOT_FOUND(\n          ^\n\n"+
		"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /root/.npm/_npx/c98ccc168155bafa/node_modules/server/dist/index.js\n"+
		strings.Repeat("    at defaultResolve (node:internal/modules/esm/resolve:946:18)\n", 12))
	got := u.stderrTail()
	for _, want := range []string{
		"; its stderr says: Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod'",
		"; its stderr ends with: …",
		"npx's cache entry /root/.npm/_npx/c98ccc168155bafa looks broken",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr told as %q; want %q in it", got, want)
		}
	}
	u = &upstream{stderr: &tail{max: 4 << 10}}
	_, _ = io.WriteString(u.stderr, "exiting at start as asked\n")
	if got := u.stderrTail(); got != "; its stderr ends with: exiting at start as asked" {
		t.Errorf("a short stderr told as %q", got)
	}
}

// A server's stderr is logged line by line as it comes, cleaned for a
// terminal, in pieces when a line never ends, and at a bounded rate with
// the lines left out counted.
func TestStderrLines(t *testing.T) {
	type record struct {
		Msg      string
		Line     string
		Count    int
		Before   int `json:"not_logged_before"`
		Upstream string
	}
	line := func(s string) record { return record{Msg: "upstream stderr", Line: s} }
	burst := make([]record, stderrBurst)
	for i := range burst {
		burst[i] = line("noise")
	}
	for _, c := range []struct {
		name   string
		writes []string // a second's wait between each
		want   []record
	}{
		{
			name:   "lines in pieces, the last unended",
			writes: []string{"starting\nlisten", "ing on stdio\n\n  \n", "bye"},
			want:   []record{line("starting"), line("listening on stdio"), line("bye")},
		},
		{
			name:   "colours and control characters",
			writes: []string{"\x1b[32mINFO\x1b[0m ready\x07\r\n"},
			want:   []record{line("INFO ready")},
		},
		{
			name:   "a line never ended",
			writes: []string{strings.Repeat("x", stderrLineMax+10)},
			want:   []record{line(strings.Repeat("x", 1000) + "…"), line(strings.Repeat("x", 10))},
		},
		{
			name:   "a flood, counted at the end",
			writes: []string{strings.Repeat("noise\n", stderrBurst+50)},
			want:   append(burst[:stderrBurst:stderrBurst], record{Msg: "upstream stderr lines not logged", Count: 50}),
		},
		{
			name:   "a flood, counted on the next line logged",
			writes: []string{strings.Repeat("noise\n", stderrBurst+50), "calm again\n"},
			want:   append(burst[:stderrBurst:stderrBurst], record{Msg: "upstream stderr", Line: "calm again", Before: 50}),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			s := newStderrLines(slog.New(slog.NewJSONHandler(&out, nil)).With("upstream", "fx"), nil)
			now := time.Now()
			s.now = func() time.Time { return now }
			for _, w := range c.writes {
				if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				now = now.Add(time.Second)
			}
			s.Close()
			var got []record
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var r record
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				if r.Upstream != "fx" {
					t.Fatalf("log line %q does not name its server", l)
				}
				r.Upstream = ""
				got = append(got, r)
			}
			if len(got) != len(c.want) {
				t.Fatalf("logged %d lines, want %d:\n%s", len(got), len(c.want), out.String())
			}
			for i := range c.want {
				if got[i] != c.want[i] {
					t.Errorf("line %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

// What a chatty server's stderr costs the gateway a line: past the rate,
// nearly every line is dropped, and costs as little as can be.
func BenchmarkStderrLines(b *testing.B) {
	s := newStderrLines(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	line := []byte(strings.Repeat("debug: something happened here ", 3)[:79] + "\n")
	chunk := bytes.Repeat(line, 64)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.Write(chunk)
	}
}

// The values a user gave are masked by their names in a process's tail
// and in its logged lines, the longer of two that overlap whole, a value
// cut by the tail's front not shown in part, and a value too short to
// mask left as it is.
func TestRedactedStderr(t *testing.T) {
	r := newRedactor(map[string]string{"A": "sk-abcdef", "B": "sk-abcdef-long", "C": "yes"})
	for _, c := range []struct {
		name, written, want string
		max                 int
	}{
		{"a value", "Authorization: Bearer sk-abcdef\n", "Authorization: Bearer [A redacted]", 100},
		{"the longer value", "key=sk-abcdef-long", "key=[B redacted]", 100},
		{"a short value", "yes sk-abcdef", "yes [A redacted]", 100},
		{"a value cut in two by the front", "sk-abcdef-long 12345678", "12345678", 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			tl := &tail{max: c.max, redact: r}
			_, _ = io.WriteString(tl, c.written)
			if got := tl.String(); got != c.want {
				t.Errorf("tail %q, want %q", got, c.want)
			}
			var out bytes.Buffer
			lines := newStderrLines(slog.New(slog.NewTextHandler(&out, nil)), r)
			_, _ = io.WriteString(lines, "panic: "+c.written+"\n")
			_ = lines.Close()
			if strings.Contains(out.String(), "sk-abcdef") || strings.Contains(lines.crashed(), "sk-abcdef") {
				t.Errorf("a logged line shows a value: %s %s", out.String(), lines.crashed())
			}
		})
	}
	// A line too long for one piece: the value its cut splits is in
	// neither piece logged.
	var out bytes.Buffer
	lines := newStderrLines(slog.New(slog.NewTextHandler(&out, nil)), r)
	_, _ = io.WriteString(lines, strings.Repeat("x", stderrLineMax-5)+"sk-abcdef-long") // no newline yet
	_, _ = io.WriteString(lines, strings.Repeat("y", 20)+"\n")
	_ = lines.Close()
	for _, part := range []string{"sk-abc", "-long", "cdef"} {
		if strings.Contains(out.String(), part) {
			t.Errorf("a piece logged shows %q of a value", part)
		}
	}
	if !strings.Contains(out.String(), "yyyy") {
		t.Errorf("the line's end was not logged: %s", out.String())
	}
	if newRedactor(map[string]string{"C": "yes"}) != nil {
		t.Error("a redactor for values too short to mask")
	}
}
