package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A LongLine is a line longer than a LineReader's Max. It was read to its
// end and dropped, reading only what routes it, so that its sender can be
// answered under its id; the stream goes on.
//
// The id is found wherever it lies in the line: the TypeScript SDK writes
// it last, and a server's answer may put it after its result.
type LongLine struct {
	Size int // bytes, without the newline
	Max  int
	// ID is the top-level "id" member as written, nil when the line has
	// none, or one longer than 128 bytes, or one that is not a string or
	// a number.
	ID []byte
	// Method tells whether the line has a top-level "method" member: it
	// is a request or a notification, not an answer.
	Method bool
}

func (e *LongLine) Error() string {
	return fmt.Sprintf("a message of %s, larger than the %s cap", size(e.Size), size(e.Max))
}

// Is makes a LongLine an ErrFrameTooLarge.
func (e *LongLine) Is(target error) bool { return target == ErrFrameTooLarge }

// skipLong reads the rest of a line longer than l.Max, of which read is
// what was gathered so far and err how its last piece was read, and says
// what it held.
func (l *LineReader) skipLong(read []byte, err error) error {
	var s idSeeker
	s.feed(read)
	n := len(read)
	for errors.Is(err, bufio.ErrBufferFull) {
		read, err = l.br.ReadSlice('\n')
		s.feed(read)
		n += len(read)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err // the stream failed: the line is not the news
	}
	// The end of the stream comes again on the next read.
	if bytes.HasSuffix(read, []byte("\n")) {
		n--
		if bytes.HasSuffix(read, []byte("\r\n")) {
			n--
		}
	}
	return &LongLine{Size: n, Max: l.Max, ID: s.routeID(), Method: s.method}
}

// RouteOf finds what routes line, a message ReadMessage may have refused
// (one nested too deep, or not JSON at all), as a LongLine does: the
// top-level id, nil when it has none that routes, and whether it has a
// method. Its sender can then be answered, or its caller told, at once.
func RouteOf(line []byte) (id []byte, method bool) {
	var s idSeeker
	s.feed(line)
	return s.routeID(), s.method
}

// maxID bounds the id a LongLine keeps.
const maxID = 128

// idSeeker follows one JSON object fed to it in pieces and keeps what
// routes it: the top-level "id" and whether there is a "method". It
// checks nothing else, and keeps nothing but the id, so a line of any
// size costs no memory; the long strings that make a line long are
// crossed with a memory search for their quotes.
type idSeeker struct {
	depth   int  // of nesting: 1 within the top-level object
	object  bool // the top level is an object
	inStr   bool
	slashes int  // the backslashes that end what was read of a string
	value   bool // at the top level, past a member's colon

	inName  bool
	name    [len(`"\u006d\u0065\u0074\u0068\u006f\u0064"`)]byte // the start of the top-level name being read, quoted
	nameLen int                                                 // its whole length
	member  string                                              // the top-level member last named, when "id" or "method"

	id       []byte
	idBroken bool // longer than maxID, or not a scalar
	method   bool
}

// top tells whether the seeker is at the top level of an object.
func (s *idSeeker) top() bool { return s.object && s.depth == 1 }

// inID tells whether the seeker is within the value of the id.
func (s *idSeeker) inID() bool { return s.top() && s.value && s.member == "id" }

func (s *idSeeker) feed(p []byte) {
	for i := 0; i < len(p); {
		if s.inStr {
			i += s.str(p[i:])
			continue
		}
		c := p[i]
		i++
		switch c {
		case ' ', '\t', '\r', '\n':
		case '"':
			s.inStr, s.slashes = true, 0
			if s.top() && !s.value {
				s.inName, s.nameLen = true, 0
				s.strPiece(p[i-1:i], false)
			} else if s.inID() {
				s.keep(p[i-1 : i])
			}
		case '{', '[':
			if s.depth == 0 && c == '{' {
				s.object = true
			} else if s.inID() {
				s.idBroken = true
			}
			s.depth++
		case '}', ']':
			s.depth--
		case ':':
			if s.top() {
				s.value = true
				switch s.member {
				case "method":
					s.method = true
				case "id": // a later id overrides, as in a decoder
					s.id, s.idBroken = s.id[:0], false
				}
			}
		case ',':
			if s.top() {
				s.value, s.member = false, ""
			}
		default:
			if s.inID() {
				s.keep(p[i-1 : i])
			}
		}
	}
}

// str reads p, within a string, up to and with the string's closing
// quote, and returns how many bytes it read.
func (s *idSeeker) str(p []byte) int {
	n := 0
	for {
		j := bytes.IndexByte(p[n:], '"')
		if j < 0 {
			s.strPiece(p[n:], false)
			s.slashes = trailingSlashes(p[n:], s.slashes)
			return len(p)
		}
		escaped := trailingSlashes(p[n:n+j], s.slashes)%2 == 1
		s.strPiece(p[n:n+j+1], !escaped)
		n, s.slashes = n+j+1, 0
		if !escaped {
			return n
		}
	}
}

// strPiece takes a piece of a string, as part of a name or of the id;
// closing, when the piece ends with the string's closing quote.
func (s *idSeeker) strPiece(p []byte, closing bool) {
	switch {
	case s.inName:
		copy(s.name[min(s.nameLen, len(s.name)):], p)
		s.nameLen += len(p)
		if closing {
			s.inName, s.member = false, ""
			if s.nameLen <= len(s.name) {
				s.member = memberName(s.name[:s.nameLen])
			}
		}
	case s.inID():
		s.keep(p)
	}
	if closing {
		s.inStr = false
	}
}

// memberName is quoted, a top-level name, when it is "id" or "method",
// escaped or not; else "".
func memberName(quoted []byte) string {
	name := string(quoted[1 : len(quoted)-1])
	if bytes.IndexByte(quoted, '\\') >= 0 && json.Unmarshal(quoted, &name) != nil {
		return ""
	}
	if name == "id" || name == "method" {
		return name
	}
	return ""
}

// keep adds p to the id.
func (s *idSeeker) keep(p []byte) {
	if len(s.id)+len(p) > maxID {
		s.idBroken = true
		return
	}
	s.id = append(s.id, p...)
}

// routeID is the id seen, or nil.
func (s *idSeeker) routeID() []byte {
	if s.idBroken || len(s.id) == 0 {
		return nil
	}
	if c := s.id[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
		return nil // null, true, a word: no id to answer under
	}
	return s.id
}

// trailingSlashes counts the backslashes that end p, adding carried, the
// run before p, when p is all backslashes.
func trailingSlashes(p []byte, carried int) int {
	n := len(p) - len(bytes.TrimRight(p, `\`))
	if n == len(p) {
		n += carried
	}
	return n
}
