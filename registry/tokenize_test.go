package registry

import (
	"slices"
	"testing"
)

// Single letters are dropped whatever their encoding's length; a single
// ideograph or syllable is a word of its script, and kept, as are digits.
func TestWordsSingleLetters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"a x tool", []string{"tool"}},
		{"é ß tool", []string{"tool"}},           // one letter of two bytes each
		{"Ж ω tool", []string{"tool"}},           // Cyrillic and Greek letters
		{"日 本 tool", []string{"日", "本", "tool"}}, // ideographs are words
		{"한 tool", []string{"한", "tool"}},        // a Hangul syllable
		{"3 tools", []string{"3", "tools"}},
	}
	for _, tt := range tests {
		if got := words(tt.text, nil); !slices.Equal(got, tt.want) {
			t.Errorf("words(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
