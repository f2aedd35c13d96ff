package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// ScanObject checks that b is one JSON object and calls member with the
// name (unescaped) and raw value (a slice of b) of each of its top-level
// members, in order. It accepts exactly what json.Valid accepts, for an
// object (FuzzScanObject holds it to that).
//
// It is how frames from stdio servers and clients are read where speed
// matters: a frame's result or arguments go on as the peer wrote them, so
// nothing below the top level needs decoding, only checking, because a
// line that is not JSON must not reach the other side. encoding/json
// checks a line and then decodes it, two passes of a state machine at
// about 300 MB/s each (3.5 ms a pass over a 1 MiB result on the bench
// machine); ScanObject checks and splits it in one pass whose strings,
// the bulk of any result, are crossed sixteen bytes at a time (25x faster,
// BenchmarkScanObject).
func ScanObject(b []byte, member func(name, value []byte)) error {
	return scanObject(scanner{b: b}, member)
}

// Message is a JSON-RPC message read at its top level only: the raw
// members that route it, as slices of the frame, nil where absent.
type Message struct {
	ID, Method, Params, Result, Error []byte
}

// ReadMessage checks frame as one JSON object (ScanObject) and reads its
// routing members; the rest goes on as the peer wrote it. On an error the
// members read before it are set.
func ReadMessage(frame []byte) (Message, error) {
	var m Message
	err := ScanObject(frame, func(name, value []byte) { m.set(name, value) })
	return m, err
}

// set keeps value when name is a routing member, and reports whether it
// is one.
func (m *Message) set(name, value []byte) bool {
	switch string(name) {
	case "id":
		m.ID = value
	case "method":
		m.Method = value
	case "params":
		m.Params = value
	case "result":
		m.Result = value
	case "error":
		m.Error = value
	default:
		return false
	}
	return true
}

// IsObject tells whether raw, a JSON value as written, is an object, by
// its first byte: the rest is for a parser to check.
func IsObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// ObjectOrAbsent tells whether raw, an optional member's value as
// written, is an object, null or absent (empty): what MCP's optional
// objects, a request's params and a call's arguments, may be.
func ObjectOrAbsent(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null" || IsObject(t)
}

// ScanCheckedObject is ScanObject for bytes already checked as one JSON
// object, by ScanObject or by a JSON decoder: it does not check strings
// again but crosses each with a memory search for its closing quote, which
// reads a 1 MiB text result about ten times faster. On input that is not
// JSON it may report wrong members or an error; it never reads past b.
func ScanCheckedObject(b []byte, member func(name, value []byte)) error {
	return scanObject(scanner{b: b, checked: true}, member)
}

// ScanCheckedArray is ScanCheckedObject for an array: it calls elem with
// each element (a slice of b), in order.
func ScanCheckedArray(b []byte, elem func(value []byte)) error {
	s := scanner{b: b, checked: true}
	s.space()
	if s.i >= len(b) || b[s.i] != '[' {
		return s.fail("an array")
	}
	if err := s.array(0, func(v span) { elem(b[v.start:v.end]) }); err != nil {
		return err
	}
	s.space()
	if s.i != len(b) {
		return s.fail("the end")
	}
	return nil
}

// ScanFrame is ScanObject for a message read from a client: it also
// fails with a *MemberError when an object, at any depth, names a member
// twice (ErrMemberRepeated), after unescaping. JSON readers disagree on
// which of two such members counts (encoding/json takes the last, others
// the first), so a filter in front of the gateway and the gateway itself
// could read two different messages in one frame.
func ScanFrame(b []byte, member func(name, value []byte)) error {
	names := namesPool.Get().(*[][]byte)
	err := scanObject(scanner{b: b, unique: true, names: (*names)[:0]}, member)
	clear((*names)[:cap(*names)]) // holds no frame
	namesPool.Put(names)
	return err
}

// namesPool holds ScanFrame's lists of names, so that a frame costs no
// allocation for them.
var namesPool = sync.Pool{New: func() any { n := make([][]byte, 0, 32); return &n }}

// ReadFrame is ReadMessage for a message read from a client (ScanFrame):
// it also fails with a *MemberError when the frame has a member that is
// one of JSON-RPC's in another case ("Id", "METHOD"; ErrMemberCase),
// which encoding/json takes for that member.
func ReadFrame(frame []byte) (Message, error) {
	var m Message
	var variant, of string
	err := ScanFrame(frame, func(name, value []byte) {
		if m.set(name, value) || string(name) == "jsonrpc" {
			return
		}
		if w, ok := CaseVariant(name, rpcMembers...); ok && variant == "" {
			variant, of = string(name), w
		}
	})
	if err == nil && variant != "" {
		err = &MemberError{Path: []string{variant}, Of: of}
	}
	return m, err
}

// rpcMembers are the members of a JSON-RPC message.
var rpcMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// CaseVariant tells whether name is one of names in another case, as
// encoding/json matches a member to a field, and which.
func CaseVariant(name []byte, names ...string) (string, bool) {
	for _, n := range names {
		if string(name) != n && bytes.EqualFold(name, []byte(n)) {
			return n, true
		}
	}
	return "", false
}

// ErrMemberRepeated and ErrMemberCase are the MemberErrors of a member
// named twice, and of one named as a known member in another case.
var (
	ErrMemberRepeated = errors.New("a member is named twice")
	ErrMemberCase     = errors.New("a member is named as a known one in another case")
)

// MemberError is a message refused for a member's name: Path is the
// member's, from the top (["params", "_meta", "progressToken"]); Of is
// the known member it names in another case, "" when it is named twice.
type MemberError struct {
	Path []string
	Of   string
}

func (e *MemberError) Error() string {
	path := strings.Join(e.Path, ".")
	if e.Of != "" {
		return fmt.Sprintf("member %q is %q in another case", path, e.Of)
	}
	return fmt.Sprintf("member %q is named twice", path)
}

func (e *MemberError) Is(target error) bool {
	return target == ErrMemberRepeated && e.Of == "" || target == ErrMemberCase && e.Of != ""
}

func scanObject(s scanner, member func(name, value []byte)) error {
	b := s.b
	s.space()
	if s.i >= len(b) || b[s.i] != '{' {
		return s.fail("an object")
	}
	err := s.object(0, func(key span, escaped bool, value span) {
		name := b[key.start:key.end]
		if escaped || !utf8.Valid(name) {
			// Decoded as encoding/json would: escapes resolved, bad
			// UTF-8 replaced.
			var k string
			_ = json.Unmarshal(b[key.start-1:key.end+1], &k) // checked by str
			name = []byte(k)
		}
		member(name, b[value.start:value.end])
	})
	if err != nil {
		return err
	}
	s.space()
	if s.i != len(b) {
		return s.fail("the end")
	}
	return nil
}

// ErrNotJSON says what ScanObject read is not one JSON object.
var ErrNotJSON = errors.New("not a JSON object")

// maxDepth bounds nesting as encoding/json does, so a hostile line of
// brackets cannot grow the stack without limit.
const maxDepth = 10000

// ErrTooDeep is a message nested deeper than ScanObject reads, as
// encoding/json reads; it is an ErrNotJSON.
var ErrTooDeep error = tooDeep{}

type tooDeep struct{}

func (tooDeep) Error() string { return fmt.Sprintf("nested deeper than %d levels", maxDepth) }

func (tooDeep) Is(target error) bool { return target == ErrNotJSON }

type span struct{ start, end int }

type scanner struct {
	b       []byte
	i       int
	checked bool // the bytes are known to be JSON: strings are not checked
	// unique: an object that names a member twice is an error
	// (ScanFrame). names holds the names of the objects open, each
	// object's after its parent's.
	unique bool
	names  [][]byte
}

func (s *scanner) fail(want string) error {
	if s.i >= len(s.b) {
		return fmt.Errorf("%w: it ends where %s was expected", ErrNotJSON, want)
	}
	return fmt.Errorf("%w: %q at byte %d where %s was expected", ErrNotJSON, s.b[s.i], s.i, want)
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value skips one JSON value, checking it.
func (s *scanner) value(depth int) error {
	if s.i >= len(s.b) {
		return s.fail("a value")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, err := s.str()
		return err
	case (c == '{' || c == '[') && depth >= maxDepth:
		// The value would be the maxDepth+1-th level, counting the
		// top-level object as the first, as encoding/json counts.
		return ErrTooDeep
	case c == '{':
		return s.object(depth, nil)
	case c == '[':
		return s.array(depth, nil)
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.fail("a value")
}

// array skips the array at s.i, checking it; elem, when not nil, hears
// the span of each element.
func (s *scanner) array(depth int, elem func(value span)) error {
	s.i++ // the bracket
	s.space()
	if s.eat(']') {
		return nil
	}
	for {
		s.space()
		start := s.i
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if elem != nil {
			elem(span{start, s.i})
		}
		s.space()
		if s.eat(']') {
			return nil
		}
		if !s.eat(',') {
			return s.fail("a comma or the end of the array")
		}
	}
}

// object skips the object at s.i, checking it; member, when not nil,
// hears the span of each member's name (inside its quotes), whether the
// name has escapes, and the span of its value.
func (s *scanner) object(depth int, member func(name span, escaped bool, value span)) error {
	s.i++ // the brace
	s.space()
	if s.eat('}') {
		return nil
	}
	base := len(s.names)
	for {
		s.space()
		name, escaped, err := s.str()
		if err != nil {
			return err
		}
		own := len(s.names) // where its name is, when unique
		if s.unique {
			s.names = append(s.names, s.nameOf(name, escaped))
		}
		s.space()
		if !s.eat(':') {
			return s.fail("a colon")
		}
		s.space()
		start := s.i
		if err := s.value(depth + 1); err != nil {
			if e, ok := err.(*MemberError); ok {
				e.Path = append([]string{string(s.names[own])}, e.Path...)
			}
			return err
		}
		if member != nil {
			member(name, escaped, span{start, s.i})
		}
		s.space()
		if s.eat('}') {
			return s.closeNames(base)
		}
		if !s.eat(',') {
			return s.fail("a comma or the end of the object")
		}
	}
}

// nameOf is the name in span, as encoding/json decodes it when it has
// escapes or bad UTF-8, else a slice of the bytes.
func (s *scanner) nameOf(name span, escaped bool) []byte {
	raw := s.b[name.start:name.end]
	if !escaped && utf8.Valid(raw) {
		return raw
	}
	var k string
	_ = json.Unmarshal(s.b[name.start-1:name.end+1], &k) // checked by str
	return []byte(k)
}

// closeNames ends the object whose names begin at base in s.names: an
// error if it names a member twice.
func (s *scanner) closeNames(base int) error {
	if !s.unique {
		return nil
	}
	names := s.names[base:]
	s.names = s.names[:base]
	if twice := repeated(names); twice != nil {
		return &MemberError{Path: []string{string(twice)}}
	}
	return nil
}

// repeated is a name that names holds twice, or nil. A few names are
// compared pairwise; many are sorted, so that an object of a million
// members costs no more than a sort.
func repeated(names [][]byte) []byte {
	if len(names) <= 16 {
		for i, a := range names {
			for _, b := range names[i+1:] {
				if bytes.Equal(a, b) {
					return a
				}
			}
		}
		return nil
	}
	slices.SortFunc(names, bytes.Compare)
	for i := 1; i < len(names); i++ {
		if bytes.Equal(names[i-1], names[i]) {
			return names[i]
		}
	}
	return nil
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return s.fail(lit)
	}
	s.i += len(lit)
	return nil
}

// str skips a string and returns the span of its contents and whether it
// has escapes.
func (s *scanner) str() (span, bool, error) {
	if !s.eat('"') {
		return span{}, false, s.fail("a string")
	}
	start, escaped := s.i, false
	if s.checked {
		return s.checkedStr(start)
	}
	for s.i < len(s.b) {
		// Sixteen bytes at a time while none needs a look: the bulk of a
		// long text, at three times the speed of a byte at a time. Then a
		// byte at a time up to the one that does, which special has found
		// among the next sixteen (or the end is nearer): a short string
		// costs one test of sixteen bytes, not one per byte.
		i, b := s.i, s.b
		for ; i+16 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:i+8]), binary.LittleEndian.Uint64(b[i+8:i+16])); i += 16 {
		}
		for i < len(b) && plain[b[i]] {
			i++
		}
		s.i = i
		if s.i >= len(s.b) {
			break
		}
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return span{start, s.i - 1}, escaped, nil
		case c == '\\':
			escaped = true
			if err := s.escape(); err != nil {
				return span{}, false, err
			}
		default:
			return span{}, false, s.fail("no control character inside a string")
		}
	}
	return span{}, false, s.fail("the end of a string")
}

// checkedStr finds the end of a string known to be well formed: the
// first quote not escaped by an odd run of backslashes.
func (s *scanner) checkedStr(start int) (span, bool, error) {
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			s.i = len(s.b)
			return span{}, false, s.fail("the end of a string")
		}
		s.i += j
		backslashes := 0
		for k := s.i - 1; k >= start && s.b[k] == '\\'; k-- {
			backslashes++
		}
		s.i++
		if backslashes%2 == 0 {
			sp := span{start, s.i - 1}
			return sp, bytes.IndexByte(s.b[sp.start:sp.end], '\\') >= 0, nil
		}
	}
}

// special tells whether any of the sixteen bytes in x and y is not
// plain: below 0x20, a quote or a backslash. These are the classic tests
// for a zero byte and for a byte below n; each can flag the wrong byte,
// but never flags a word without one, and the byte loop then finds which.
func special(x, y uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x-ones*0x20)&^x | (y-ones*0x20)&^y
	q, r := x^(ones*'"'), y^(ones*'"')
	quote := (q-ones)&^q | (r-ones)&^r
	bs, ct := x^(ones*'\\'), y^(ones*'\\')
	backslash := (bs-ones)&^bs | (ct-ones)&^ct
	return (below|quote|backslash)&highs != 0
}

// plain marks the bytes a string holds as they are: not a quote, not a
// backslash, not a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *scanner) escape() error {
	s.i++ // the backslash
	if s.i >= len(s.b) {
		return s.fail("an escape")
	}
	switch s.b[s.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i++
		return nil
	case 'u':
		s.i++
		for range 4 {
			if s.i >= len(s.b) || !isHex(s.b[s.i]) {
				return s.fail("four hex digits")
			}
			s.i++
		}
		return nil
	}
	return s.fail("an escape")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *scanner) number() error {
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.digits() == 0:
		return s.fail("a digit")
	}
	if s.eat('.') && s.digits() == 0 {
		return s.fail("a digit")
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if s.digits() == 0 {
			return s.fail("a digit")
		}
	}
	return nil
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}
