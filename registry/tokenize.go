package registry

import (
	"strings"
	"unicode"
)

// tokenize splits text into lower-cased, lightly stemmed terms. It splits
// on anything that is not a letter or digit and on camelCase boundaries
// ("WeatherTool" → weather, tool), and drops stop words.
func tokenize(text string, out []string) []string {
	var word []rune
	flush := func() {
		if len(word) == 0 {
			return
		}
		w := strings.ToLower(string(word))
		word = word[:0]
		if len(w) < 2 && !unicode.IsDigit(rune(w[0])) {
			return
		}
		if stopWords[w] {
			return
		}
		out = append(out, stem(w))
	}
	var prev rune
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			// A lower→upper change starts a new word (camelCase).
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			word = append(word, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// stem strips common English inflections so that "files", "filed",
// "filing" and "file" meet. Both documents and queries go through it, so
// only consistency matters, not linguistic truth.
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y" // queries → query
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		// address, status, analysis: not plurals
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	case strings.HasSuffix(w, "ing") && len(w) >= 6:
		w = undouble(w[:len(w)-3]) // running → run
	case strings.HasSuffix(w, "ed") && len(w) >= 5:
		w = undouble(w[:len(w)-2]) // stored → stor
	}
	if len(w) >= 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1] // store → stor, to meet "stored"
	}
	return w
}

// undouble removes a doubled final consonant ("runn" → "run").
func undouble(w string) string {
	n := len(w)
	if n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be by can do does for from get give has have
		how i in into is it its me my of on or please so some that the their them then there these this
		to use using want was we what when where which who will with would you your`) {
		m[w] = true
	}
	return m
}()
