package registry

import (
	"strings"
	"unicode"
)

// tokenize splits text into terms (see words and term).
func tokenize(text string, out []string) []string {
	start := len(out)
	out = words(text, out)
	for i := start; i < len(out); i++ {
		out[i] = term(out[i])
	}
	return out
}

// words splits text into lower-cased words, which term turns into index
// terms. It splits on anything that is not a letter or digit and on
// camelCase boundaries ("WeatherTool" → weather, tool), and drops stop
// words and single letters (wordAlone).
func words(text string, out []string) []string {
	var word []rune
	flush := func() {
		if len(word) == 0 {
			return
		}
		if len(word) == 1 && !wordAlone(word[0]) {
			word = word[:0]
			return
		}
		w := strings.ToLower(string(word))
		word = word[:0]
		if stopWords[w] {
			return
		}
		out = append(out, w)
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

// wordAlone reports whether r is a word on its own: a digit, or a letter
// of a script whose single signs are words (an ideograph, a kana, a
// Hangul syllable), where a Latin, Greek or Cyrillic letter is not.
func wordAlone(r rune) bool {
	return unicode.IsDigit(r) || unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// term turns a word into the term the index holds: its stem, or the stem
// of the usual spelling for an abbreviation or synonym ("db" → database).
func term(w string) string {
	t := stem(w)
	if c, ok := synonyms[t]; ok {
		return c
	}
	return t
}

// synonyms maps the stems of common abbreviations and synonyms in
// software to the stem of one spelling, so that either finds the other.
// Only pairs that mean the same in any catalog belong here.
var synonyms = func() map[string]string {
	m := map[string]string{}
	for _, group := range [][]string{
		{"database", "db", "dbs"},
		{"repository", "repo", "repos"},
		{"kubernetes", "k8s"},
		{"directory", "folder", "dir", "dirs"},
		{"email", "mail"},
		{"application", "app", "apps"},
		{"configuration", "config"},
		{"message", "msg", "msgs"},
		{"image", "img", "imgs"},
		{"javascript", "js"},
		{"python", "py"},
	} {
		for _, w := range group[1:] {
			m[stem(w)] = stem(group[0])
		}
	}
	return m
}()

// stem strips common English inflections and derivations so that
// "files", "filed", "filing" and "file" meet, as do "automation" and
// "automate", "embeddings" and "embedding".
// Both documents and queries go through it, so only consistency matters,
// not linguistic truth.
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	// A plural first, so that its singular goes on through the suffix
	// rules ("settings" → "setting" → "sett" → "set").
	w = stripSuffix(singular(w))
	if len(w) >= 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1] // store → stor, to meet "stored"
	}
	return w
}

// singular strips a plural's ending.
func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y" // queries → query
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w // address, status, analysis: not plurals
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

// stripSuffix strips the first of four derivational suffixes that
// applies to w. A switch of constant suffixes, not a table: every word of
// every catalog goes through it, and a table of them is slower.
func stripSuffix(w string) string {
	switch {
	case strings.HasSuffix(w, "ing") && len(w) >= 6:
		return undouble(w[:len(w)-3]) // running → run
	case strings.HasSuffix(w, "ed") && len(w) >= 5:
		return undouble(w[:len(w)-2]) // stored → stor
	case strings.HasSuffix(w, "tion") && len(w) >= 8:
		return w[:len(w)-3] // automation → automat, to meet "automate"
	case strings.HasSuffix(w, "ment") && len(w) >= 9:
		return w[:len(w)-4] // management → manage; not document → docu
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

// stopWords are function words, dropped from queries and documents: the
// NLTK English list, plus the verbs of asking ("please", "want", "use").
// Single letters are dropped anyway.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been before being
		below between both but by can did do does doing don down during each few for from further
		get give had has have having he her here hers herself him himself his how i if in into is it
		its itself just me more most my myself no nor not now of off on once only or other our ours
		ourselves out over own please s same she should so some such t than that the their theirs
		them themselves then there these they this those through to too under until up use using
		very want was we were what when where which while who whom why will with would you your
		yours yourself yourselves`) {
		m[w] = true
	}
	return m
}()
