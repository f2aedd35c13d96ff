package attach

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ardgate/ardgate/guard"
)

// stderrTail is what the process last wrote to its stderr, for a reason it
// failed or went down (a server that cannot go on usually says why), or
// "" when it wrote nothing.
func (u *upstream) stderrTail() string {
	if u.stderr == nil {
		return ""
	}
	s := u.stderr.String()
	if s == "" {
		return ""
	}
	out := "; its stderr ends with: " + guard.TextTail(s, 500)
	crash := u.lines.crashed()
	// A crash's stack runs past the tail; its first line says what went
	// wrong: a Go runtime's "fatal error: runtime: cannot allocate
	// memory", a Node.js "Error [ERR_MODULE_NOT_FOUND]: Cannot find
	// package".
	if crash != "" && !strings.Contains(out, crash) {
		out = "; its stderr says: " + crash + out
	} else if i := strings.LastIndex(s, "Error"); i >= 0 && !strings.Contains(out, "Error") {
		line, _, _ := strings.Cut(s[strings.LastIndexByte(s[:i], '\n')+1:], "\n")
		out = "; its stderr says: " + guard.Text(line, 300) + out
	}
	if u.memoryMiB > 0 && (outOfMemory.MatchString(crash) || outOfMemory.MatchString(s)) {
		out += fmt.Sprintf("; it looks out of memory, and the gateway holds each process of a server to %d MiB (stdio.memory_mib): the operator can raise that, or set 0 for no limit", u.memoryMiB)
	}
	if dir := brokenNPXCache.FindString(s); dir != "" && (strings.Contains(s, "ENOENT") || strings.Contains(s, "ERR_MODULE_NOT_FOUND")) {
		out += "; npx's cache entry " + guard.Text(dir, 200) + " looks broken (a download cut short leaves it so): the operator can remove that directory and attach again"
	}
	return out
}

// outOfMemory is how runtimes say an allocation failed: Go, Node.js
// (V8's "Allocation failed", a Buffer's "allocation failed"), Python (a
// thread's stack is an allocation too: "can't start new thread"), C++,
// libc, the JVM ("Not enough space (errno=12)").
var outOfMemory = regexp.MustCompile(`(?i)out of memory|cannot allocate memory|allocation failed|pthread_create failed|MemoryError|bad_alloc|ENOMEM|errno=12|not enough space|insufficient memory|can't start new thread`)

// brokenNPXCache finds npx's cache entry for a package in what npm or
// node said.
var brokenNPXCache = regexp.MustCompile(`/[^\s'"]*/_npx/[0-9a-f]{8,}`)

// redactor masks, in what a launched process writes to its stderr, the
// values the user gave it on the keys page: a server that prints
// "Authorization: Bearer …" on a 401 must not put the user's key into
// the log, a trace or a result the model reads. One redactor per
// process serves its tail and its logged lines, every way its stderr
// leaves the gateway. A nil redactor masks nothing.
type redactor struct {
	r       *strings.Replacer
	longest int // bytes of the longest value masked
}

// minRedacted is the shortest value masked: a shorter one ("1", "yes")
// would mask half of every line and hide nothing worth hiding.
const minRedacted = 4

// newRedactor masks each value of given, by its variable's name; nil
// when there is none to mask.
func newRedactor(given map[string]string) *redactor {
	names := slices.Sorted(maps.Keys(given))
	// Longest first: of two values where one holds the other, the longer
	// is masked whole (the Replacer tries its pairs in order).
	slices.SortStableFunc(names, func(a, b string) int { return len(given[b]) - len(given[a]) })
	var pairs []string
	longest := 0
	for _, n := range names {
		if v := given[n]; len(v) >= minRedacted {
			pairs = append(pairs, v, "["+n+" redacted]")
			longest = max(longest, len(v))
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return &redactor{r: strings.NewReplacer(pairs...), longest: longest}
}

func (r *redactor) redact(s string) string {
	if r == nil {
		return s
	}
	return r.r.Replace(s)
}

// keep is how many bytes more a tail keeps, to drop again once its
// front was cut (cutFront): the end of a value cut in two is at most
// longest-1 bytes, which no whole value's mask covers.
func (r *redactor) keep() int {
	if r == nil {
		return 0
	}
	return r.longest - 1
}

// cutFront is s, the redacted text of a buffer whose front was cut off,
// less what may be the end of a value cut in two.
func (r *redactor) cutFront(s string) string {
	return s[min(len(s), r.keep()):]
}

// cutBack is s, the redacted text of a piece cut from its line's end,
// less what may be the start of a value cut in two.
func (r *redactor) cutBack(s string) string {
	return s[:len(s)-min(len(s), r.keep())]
}

// tail keeps the last max bytes written to it; String masks redact's
// values.
type tail struct {
	mu     sync.Mutex
	max    int
	buf    []byte
	cut    bool // bytes were dropped from the front
	redact *redactor
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max - t.redact.keep(); over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.redact.redact(string(t.buf))
	if t.cut {
		s = t.redact.cutFront(s)
	}
	return strings.TrimSpace(s)
}

// stderrLines logs each line a server process writes to its stderr, as
// `upstream stderr` with the session and server of its logger, while the
// process runs: what a server says of itself (a warning, a deprecation, a
// retry) is the operator's to see, not only the end of it when the server
// fails. A server that floods its stderr is logged at a bounded rate; the
// lines left out are counted on the next line logged, and by Close.
type stderrLines struct {
	mu      sync.Mutex
	log     *slog.Logger
	redact  *redactor // the tail's, as each line leaves too
	limit   *rate.Limiter
	now     func() time.Time // the limiter's clock, a test's to set
	line    []byte           // a line begun and not yet ended
	cont    bool             // line goes on a piece cut from it
	dropped int
	// crash is the last line of a Go runtime's crash the lines held,
	// logged or not, for a failure's message: the stacks of its
	// goroutines push it out of the tail kept.
	crash string
}

// Lines of stderr logged: a burst of 100, say a server's start with its
// banner and warnings, then 10 a second.
const (
	stderrBurst = 100
	stderrRate  = 10
	// A line is logged in pieces of at most this many bytes, and shown
	// up to 1,000 characters: a server writing megabytes with no newline
	// must not grow the gateway's memory.
	stderrLineMax = 4 << 10
)

func newStderrLines(log *slog.Logger, redact *redactor) *stderrLines {
	return &stderrLines{log: log, redact: redact, limit: rate.NewLimiter(stderrRate, stderrBurst), now: time.Now}
}

func (s *stderrLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := stderrLineMax - len(s.line)
			if len(p) < room {
				s.line = append(s.line, p...)
				break
			}
			i = room // a piece the length of a line, logged as one
			s.line = append(s.line, p[:i]...)
			p = p[i:]
			s.emit(true)
			continue
		}
		s.line = append(s.line, p[:i]...)
		p = p[i+1:]
		s.emit(false)
	}
	return n, nil
}

// Close logs a last line the process left unended and how many lines were
// left out, once it has exited.
func (s *stderrLines) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(false)
	if s.dropped > 0 {
		s.log.Info("upstream stderr lines not logged", "count", s.dropped)
		s.dropped = 0
	}
	return nil
}

// crashed is the last line of a crash the lines held, if any; nil holds
// none.
func (s *stderrLines) crashed() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crash
}

// emit logs the line held, or the piece of one when cut: a value the
// cut split in two is shown in neither piece (redactor).
func (s *stderrLines) emit(cut bool) {
	raw := bytes.TrimSpace(s.line)
	cont := s.cont
	defer func() { s.line, s.cont = s.line[:0], cut }()
	if len(raw) == 0 {
		return
	}
	// Looked at cheaply, and before the rate is: every line, logged or
	// not, runs through here, and a regular expression on each made a
	// server writing 2 million lines take ten times as long.
	if bytes.HasPrefix(raw, []byte("fatal error: ")) || bytes.HasPrefix(raw, []byte("panic: ")) {
		s.crash = guard.Text(s.redact.redact(string(raw)), 300)
	}
	if !s.limit.AllowN(s.now(), 1) {
		s.dropped++
		return
	}
	text := s.redact.redact(string(raw))
	if cont {
		text = s.redact.cutFront(text)
	}
	if cut {
		text = s.redact.cutBack(text)
	}
	if bytes.IndexByte(raw, 0x1b) >= 0 {
		text = ansiEscape.ReplaceAllString(text, "")
	}
	line := guard.Text(text, 1000)
	if s.dropped > 0 {
		s.log.Info("upstream stderr", "line", line, "not_logged_before", s.dropped)
		s.dropped = 0
		return
	}
	s.log.Info("upstream stderr", "line", line)
}

// ansiEscape is a terminal's colour or cursor sequence, which Node.js
// loggers write even to a pipe; guard.Text drops its ESC but not the rest.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)
