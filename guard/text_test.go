package guard_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ardgate/ardgate/guard"
)

func TestText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"empty", "", 10, ""},
		{"plain", "hello", 10, "hello"},
		{"leading and trailing space", "   hello   ", 10, "hello"},
		{"runs folded", "a  \t b\n\n\nc\r\nd", 20, "a b c d"},
		{"only space", " \t\n ", 10, ""},
		{"unicode spaces", "a\u00a0\u3000b\u2028c\u2029d\u0085e", 20, "a b c d e"},
		{"C0 controls", "a\x00b\x07c\x08d\x1be\x7ff", 20, "abcdef"},
		{"ANSI escape loses ESC", "\x1b[31mred\x1b[0m", 20, "[31mred[0m"},
		{"C1 controls", "a\u0080b\u009bc\u009fd", 20, "abcd"},
		{"bidi embeddings and overrides", "a\u202ab\u202bc\u202cd\u202de\u202ef", 20, "abcdef"},
		{"bidi isolates", "a\u2066b\u2067c\u2068d\u2069e", 20, "abcde"},
		{"bidi marks", "a\u200eb\u200fc\u061cd", 20, "abcd"},
		{"trojan source", "if admin \u202e } \u2066 {", 30, "if admin } {"},
		{"zero width", "a\u200bb\u200cc\u200dd\u2060e\ufefff", 20, "abcdef"},
		{"tag characters", "hi\U000E0001\U000E0049\U000E0067\U000E007F!", 20, "hi!"},
		{"variation selectors smuggling bytes", "ok\ufe00\ufe0f\U000E0100\U000E01EF\u180b.", 20, "ok."},
		{"format characters", "a\u00adb\u180ec\u2061d\u2064e\u206af\u206fg\ufff9h\ufffbi\U0001D173j\U0001BCA0k", 20, "abcdefghijk"},
		{"blank fillers", "a\u034fb\u115fc\u1160d\u3164e\uffa0f\u17b4g\u17b5h", 20, "abcdefgh"},
		{"visible combining marks stay", "e\u0301 n\u0303", 20, "e\u0301 n\u0303"},
		{"hidden runes do not break a space run", "a \u200b b", 20, "a b"},
		{"hidden runes do not count", "a\u200bb\u202ec", 3, "abc"},
		{"invalid UTF-8", "a\xffb", 10, "a\ufffdb"},
		{"invalid UTF-8 run", "a\xff\xfe\xfdb", 10, "a\ufffdb"},
		{"truncated sequence", "ok\xc3", 10, "ok\ufffd"},
		{"bad continuation", "\xc3\x28", 10, "\ufffd("},
		{"exactly max", "abcde", 5, "abcde"},
		{"cut", "abcdef", 3, "abc…"},
		{"cut at a space", "abc def", 4, "abc…"},
		{"cut after a space", "abc def", 5, "abc d…"},
		{"space counts", "ab cd", 4, "ab c…"},
		{"trailing space ignored at max", "abc   ", 3, "abc"},
		{"runes not bytes", "ééééé", 3, "ééé…"},
		{"wide runes", "日本語のテキスト", 3, "日本語…"},
		{"emoji", "😀😀😀😀", 2, "😀😀…"},
		{"max zero", "abc", 0, "…"},
		{"max zero empty", "", 0, ""},
		{"max zero hidden only", "\u200b\x00 ", 0, ""},
		{"max one", "abc", 1, "a…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := guard.Text(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Text(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			checkText(t, tt.in, tt.max, got)
		})
	}
}

// TextTail keeps the end, cleaned as Text cleans.
func TestTextTail(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"", 5, ""},
		{"short", 5, "short"},
		{"banner 1\nbanner 2\nFATAL: the reason\n", 17, "…FATAL: the reason"},
		{"a\x1b[0m\u202eb  c", 3, "…b c"},
		{"ééééé", 2, "…éé"},
	} {
		if got := guard.TextTail(tt.in, tt.max); got != tt.want {
			t.Errorf("TextTail(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// hidden is what Text must never let through.
func hidden(r rune) bool {
	return unicode.IsControl(r) ||
		r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C ||
		r >= 0x200B && r <= 0x200D || r == 0x2060 || r == 0xFEFF ||
		r >= 0xE0000 && r <= 0xE007F
}

// checkText asserts the properties every output of Text has.
func checkText(t *testing.T, in string, max int, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Text(%q, %d) = %q: invalid UTF-8", in, max, out)
	}
	for _, r := range out {
		if hidden(r) {
			t.Fatalf("Text(%q, %d) = %q: contains hidden rune %U", in, max, out, r)
		}
		if unicode.IsSpace(r) && r != ' ' {
			t.Fatalf("Text(%q, %d) = %q: contains unfolded space %U", in, max, out, r)
		}
	}
	if n := utf8.RuneCountInString(out); n > max+1 {
		t.Fatalf("Text(%q, %d) = %q: %d runes, more than max+1", in, max, out, n)
	}
	if strings.HasPrefix(out, " ") || strings.HasSuffix(out, " ") || strings.Contains(out, "  ") {
		t.Fatalf("Text(%q, %d) = %q: unfolded or untrimmed spaces", in, max, out)
	}
	// Sanitised text is a fixed point (the "…" counts as one more rune).
	if again := guard.Text(out, max+1); again != out {
		t.Fatalf("Text(Text(%q, %d), %d) = %q, want %q", in, max, max+1, again, out)
	}
}

func FuzzText(f *testing.F) {
	seeds := []struct {
		s   string
		max uint16
	}{
		{"", 0},
		{"hello world", 5},
		{"  lots   of\t\tspace \n", 8},
		{"\x1b[2J\x1b[Hclear", 10},
		{"a\u202eevil\u202c b\u2066c\u2069", 6},
		{"zero\u200bwidth\ufeff", 4},
		{"tag\U000E0041\U000E007F", 3},
		{"\xff\xfe invalid \xc3", 7},
		{"ééééé日本語😀", 4},
		{"\u0085\u00a0\u2028\u3000", 2},
		{strings.Repeat("long text ", 100), 200},
	}
	for _, s := range seeds {
		f.Add(s.s, s.max)
	}
	f.Fuzz(func(t *testing.T, s string, max uint16) {
		m := int(max % 1024)
		checkText(t, s, m, guard.Text(s, m))
	})
}

// Body keeps an answer's lines and tabs, drops what hides or reorders
// text (a carriage return among them), and says how much a cut left out.
func TestBody(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"line one\r\n\tindented\nline three", 100, "line one\n\tindented\nline three"},
		{"a\u202Eb\u200Bc\x1b[31md\xff", 100, "abc[31md\uFFFD"},
		{"0123456789", 4, "0123… (6 more characters not shown)"},
		{"0123", 4, "0123"},
		{"ééééé", 2, "éé… (3 more characters not shown)"},
	} {
		if got := guard.Body(c.in, c.max); got != c.want {
			t.Errorf("Body(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
