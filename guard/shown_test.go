package guard

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

type shownInner struct {
	Text  string   `shown:"5"`
	Lines []string `shown:"20,lines"`
}

type shownName string

type shownOuter struct {
	Plain   string
	Named   shownName
	Ptr     *shownInner
	List    []shownInner
	Map     map[string]any
	Any     any
	Raw     json.RawMessage
	Bytes   []byte
	Arr     [2]string `shown:"3"`
	Nil     *shownInner
	Count   int
	private string
}

// Shown cleans and cuts every string of a value, however deep, each to
// its field's bound (ShownMax by default), keeping lines only where its
// tag says; bytes, numbers and unexported fields it leaves as they are,
// and the value it was given it does not change.
func TestShown(t *testing.T) {
	t.Parallel()
	const evil = "\x1b[2J\a\u202eab\u2066c\U000E0041d"
	long := strings.Repeat("x", ShownMax+50)
	in := shownOuter{
		Plain: evil, Named: shownName(evil), Ptr: &shownInner{Text: "123456789", Lines: []string{"one\n\ttwo" + evil}},
		List: []shownInner{{Text: evil}}, Map: map[string]any{evil: []any{evil, long, 7}},
		Any: &shownInner{Text: evil}, Raw: json.RawMessage(`"` + evil + `"`), Bytes: []byte(evil),
		Arr: [2]string{"abcdef", evil}, Count: 3, private: evil,
	}
	got := Shown(in).(shownOuter)
	want := shownOuter{
		Plain: "[2Jabcd", Named: "[2Jabcd", Ptr: &shownInner{Text: "12345…", Lines: []string{"one\n\ttwo[2Jabcd"}},
		List: []shownInner{{Text: "[2Jab…"}}, Map: map[string]any{"[2Jabcd": []any{"[2Jabcd", long[:ShownMax] + "…", 7}},
		Any: &shownInner{Text: "[2Jab…"}, Raw: in.Raw, Bytes: in.Bytes,
		Arr: [2]string{"abc…", "[2J…"}, Count: 3, private: evil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Shown:\n got %#v\nwant %#v", got, want)
	}
	if in.Plain != evil || in.Ptr.Text != "123456789" || in.List[0].Text != evil || in.Map[evil].([]any)[0] != evil {
		t.Errorf("Shown changed the value it was given: %#v", in)
	}
	if n := utf8.RuneCountInString(Shown(strings.Repeat("é", 3*ShownMax)).(string)); n != ShownMax+1 {
		t.Errorf("a bare string: %d characters, want %d and the cut's mark", n, ShownMax)
	}
	if Shown(nil) != nil {
		t.Error("Shown(nil) is not nil")
	}
}

// What Shown keeps as it is, without cleaning it (fits), is what
// cleaning it would give.
func FuzzShownFits(f *testing.F) {
	for _, s := range []string{"", " ", "a b", "a  b", " a", "a ", "a\nb", "a\tb", "é", "\u202e", "\xff", "\uFFFD", "ab\u3000c", "\U000E0041", "abcdef"} {
		f.Add(s, 4, false)
		f.Add(s, 4, true)
	}
	f.Fuzz(func(t *testing.T, s string, max int, lines bool) {
		b := shownBound{max: max%50 + 1, lines: lines}
		if b.max < 1 {
			b.max = -b.max + 1
		}
		if !b.fits(s) {
			return
		}
		clean := Text(s, b.max)
		if lines {
			clean = Body(s, b.max)
		}
		if clean != s {
			t.Errorf("fits(%q) with %+v, but it is cleaned to %q", s, b, clean)
		}
	})
}
