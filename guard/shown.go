package guard

import (
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ShownMax is the bound, in runes, of a string in a value Shown cleans
// whose field sets none.
const ShownMax = 1000

// maxShownDepth bounds how deep Shown walks: a result is a shallow tree,
// and a cycle would not end.
const maxShownDepth = 64

// Shown returns a copy of v, a value about to be encoded for a client (a
// tool's result), in which every string is fit to show a model: cleaned
// and cut as Text does, to ShownMax runes, or as its struct field's
// `shown` tag says: `shown:"200"` cuts to 200, and `shown:"4000,lines"`
// cleans as Body does, keeping newlines and tabs. A tag on a slice, map
// or pointer field applies to the strings in it. Byte slices
// (json.RawMessage: a JSON Schema, data) are kept as they are, and so is
// what a field of its own encoding (MarshalJSON) makes of fields that are
// not exported. Every third-party string a tool result quotes (registry,
// card, upstream, agent) passes here, whatever its tool did before, so
// that no tool can forget to.
func Shown(v any) any {
	if v == nil {
		return nil
	}
	return shown(reflect.ValueOf(v), shownBound{max: ShownMax}, 0).Interface()
}

// shownBound is how a string is cleaned: its bound in runes, and whether
// its lines are kept.
type shownBound struct {
	max   int
	lines bool
}

func (b shownBound) clean(s string) string {
	if b.fits(s) {
		return s // most are, cleaned where they were made: not copied again
	}
	if b.lines {
		return Body(s, b.max)
	}
	return Text(s, b.max)
}

// fits reports whether s is as clean would make it: valid UTF-8, nothing
// hidden in it, within the bound, and unless its lines are kept, its
// white space single spaces between words. It reads printable ASCII a
// byte at a time, as most text is.
func (b shownBound) fits(s string) bool {
	n := 0
	space := true // a leading space is dropped
	for i := 0; i < len(s); n++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			if !b.lines && c == ' ' && space {
				return false
			}
			space = c == ' '
			i++
			continue
		}
		size, ok := b.runeFits(s[i:])
		if !ok {
			return false
		}
		space = false
		i += size
	}
	return n <= b.max && (b.lines || n == 0 || !space)
}

// runeFits decodes the rune s begins with, one that is not printable
// ASCII, and reports its size and whether clean would keep it as it is.
func (b shownBound) runeFits(s string) (size int, ok bool) {
	r, size := utf8.DecodeRuneInString(s)
	if b.lines && (r == '\n' || r == '\t') {
		return size, true
	}
	return size, !(r == utf8.RuneError && size == 1 || isHidden(r) || !b.lines && unicode.IsSpace(r))
}

// boundOf is the bound its `shown` tag gives field f, or ShownMax.
func boundOf(f reflect.StructField) shownBound {
	tag, ok := f.Tag.Lookup("shown")
	if !ok {
		return shownBound{max: ShownMax}
	}
	n, opt, _ := strings.Cut(tag, ",")
	max, err := strconv.Atoi(n)
	if err != nil || max < 1 {
		max = ShownMax
	}
	return shownBound{max: max, lines: opt == "lines"}
}

// shown is v with its strings cleaned as b says, a copy wherever it
// holds one.
func shown(v reflect.Value, b shownBound, depth int) reflect.Value {
	if depth > maxShownDepth {
		return reflect.Zero(v.Type())
	}
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		out.SetString(b.clean(v.String()))
		return out
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return v
		}
		return shownIn(v, b, depth)
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(shown(v.Index(i), b, depth+1))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(shown(v.Index(i), b, depth+1))
		}
		return out
	case reflect.Map:
		return shownMap(v, b, depth)
	case reflect.Struct:
		return shownStruct(v, depth)
	}
	return v
}

// shownIn is v, a pointer or an interface, holding a cleaned copy of
// what it holds.
func shownIn(v reflect.Value, b shownBound, depth int) reflect.Value {
	if v.Kind() == reflect.Pointer {
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(shown(v.Elem(), b, depth+1))
		return out
	}
	out := reflect.New(v.Type()).Elem()
	out.Set(shown(v.Elem(), b, depth+1))
	return out
}

// shownMap is map v, its keys cleaned as any string and its values as b
// says.
func shownMap(v reflect.Value, b shownBound, depth int) reflect.Value {
	if v.IsNil() {
		return v
	}
	out := reflect.MakeMapWithSize(v.Type(), v.Len())
	for it := v.MapRange(); it.Next(); {
		out.SetMapIndex(shown(it.Key(), shownBound{max: ShownMax}, depth+1), shown(it.Value(), b, depth+1))
	}
	return out
}

// shownStruct is a copy of struct v, its exported fields cleaned as
// their tags say; those not exported are copied as they are.
func shownStruct(v reflect.Value, depth int) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	out.Set(v)
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() {
			out.Field(i).Set(shown(v.Field(i), boundOf(f), depth+1))
		}
	}
	return out
}
