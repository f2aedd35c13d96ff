package registry

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Index is an in-memory BM25F search index over catalog entries. Build it
// once with NewIndex; it is then safe for concurrent searches.
type Index struct {
	// DrawnFrom, when more than the entries indexed, is the size of the
	// collection they were drawn from: a term's weight (IDF) is then taken
	// as if the rest of that collection held none of the query's terms.
	// A pool drawn by the very words searched (an MCP Registry window,
	// servers named with them) holds those words in nearly every entry,
	// and ranked as a whole collection their weight, and every score with
	// it, came to nothing. Set it before the first search.
	DrawnFrom int

	docs      []doc
	byURN     map[string]int
	postings  map[string][]posting
	referrals []Entry
	scratch   sync.Pool // *[]float32 of len(docs), reused across searches
}

type doc struct {
	entry  Entry
	source string
}

// posting is one document's weighted, length-normalised term frequency:
// the query-independent half of BM25F, computed once at build time.
type posting struct {
	doc int32
	tf  float32
}

// Field weights, in entryTexts' order of fields (name, URN name, tags,
// capabilities, representative queries, description, inline card,
// publisher): a word in the name says more than one in a description.
// The tools and skills of an inline card, and the publisher's
// organisation, say no more than a description.
var fieldWeights = [8]float64{3, 2.5, 2, 2, 1.5, 1, 1, 1}

// entryTexts returns the texts of e's searchable fields, in the order of
// fieldWeights.
func entryTexts(e *Entry) [8][]string {
	var urnText, org string
	if u, err := ParseURN(e.Identifier); err == nil {
		urnText = strings.Join(append(slices.Clone(u.Namespace), u.Name), " ")
		org = publisherOrg(u.Publisher)
	}
	return [8][]string{{e.DisplayName}, {urnText}, e.Tags, e.Capabilities, e.RepresentativeQueries,
		{e.Description}, inlineTexts(e.Data), {org}}
}

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.6
)

// NewIndex indexes entries, all from one source. Entries of type
// application/ai-registry+json become referrals, not results. Later entries
// with an identifier already seen are dropped.
func NewIndex(source string, entries []Entry) *Index {
	ix := &Index{byURN: make(map[string]int, len(entries)), postings: map[string][]posting{}}
	type fieldTerms struct {
		terms  []string
		weight float64
	}
	var perDoc [][8]fieldTerms
	var lens [8]float64
	for _, e := range entries {
		if e.Type == MediaRegistry {
			ix.referrals = append(ix.referrals, e)
			continue
		}
		key := CanonicalURN(e.Identifier)
		if _, dup := ix.byURN[key]; dup {
			continue
		}
		ix.byURN[key] = len(ix.docs)
		ix.docs = append(ix.docs, doc{entry: e, source: source})

		texts := entryTexts(&e)
		name := tokenizeAll(texts[0])
		// Most display names repeat the URN's name: a word of both
		// counted for both (5.5 against a description's 1), and an entry
		// of a fitting name and no description came before the one the
		// description was about ("create a jira ticket": mcp-create over
		// mcp-atlassian). The URN adds what the name lacks.
		urnTerms := slices.DeleteFunc(tokenizeAll(texts[1]), func(t string) bool { return slices.Contains(name, t) })
		f := [8]fieldTerms{{name, fieldWeights[0]}, {urnTerms, fieldWeights[1]}}
		for i := 2; i < len(f); i++ {
			f[i] = fieldTerms{tokenizeAll(texts[i]), fieldWeights[i]}
		}
		for i := range f {
			lens[i] += float64(len(f[i].terms))
		}
		perDoc = append(perDoc, f)
	}
	n := float64(max(len(ix.docs), 1))
	for d, fields := range perDoc {
		tf := map[string]float64{}
		for i, f := range fields {
			avg := max(lens[i]/n, 1)
			norm := 1 - bm25B + bm25B*float64(len(f.terms))/avg
			for _, t := range f.terms {
				tf[t] += f.weight / norm
			}
		}
		for t, v := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(d), tf: float32(v)})
		}
	}
	ix.scratch.New = func() any { s := make([]float32, len(ix.docs)); return &s }
	return ix
}

// inlineTexts returns the names and descriptions of the tools of an inline
// MCP server card and of the skills of an inline A2A agent card: what the
// artifact can do, in its own words, often more than its description
// says. Input schemas are left out: parameter names are noise to search.
func inlineTexts(data json.RawMessage) []string {
	// Most cards list neither; do not parse what cannot hold them.
	if !bytes.Contains(data, []byte(`"tools"`)) && !bytes.Contains(data, []byte(`"skills"`)) {
		return nil
	}
	var card struct {
		Tools []struct {
			Name, Title, Description string
		}
		Skills []struct {
			Name, Description string
			Tags, Examples    []string
		}
	}
	if json.Unmarshal(data, &card) != nil {
		return nil
	}
	var out []string
	for _, t := range card.Tools {
		out = append(out, t.Name, t.Title, t.Description)
	}
	for _, s := range card.Skills {
		out = append(out, s.Name, s.Description)
		out = append(out, s.Tags...)
		out = append(out, s.Examples...)
	}
	return out
}

// publisherOrg returns the leftmost label of a publisher domain: the
// organisation in "stripe.com" and in "translated.github.io", where
// catalogs converted from GitHub put the owner. Users search by it ("the
// stripe server"), and a display name does not always carry it.
func publisherOrg(publisher string) string {
	org, _, _ := strings.Cut(publisher, ".")
	return org
}

func tokenizeAll(texts []string) []string {
	var out []string
	for _, t := range texts {
		out = tokenize(t, out)
	}
	return out
}

// Len returns the number of searchable entries.
func (ix *Index) Len() int { return len(ix.docs) }

// Lookup returns the entry with that URN (either prefix, any case of
// publisher), or ErrNotFound.
func (ix *Index) Lookup(urn string) (Entry, error) {
	if i, ok := ix.byURN[CanonicalURN(urn)]; ok {
		return ix.docs[i].entry, nil
	}
	return Entry{}, fmt.Errorf("%s: %w", urn, ErrNotFound)
}

// Entries returns every searchable entry, in index order.
func (ix *Index) Entries() []Entry {
	out := make([]Entry, len(ix.docs))
	for i := range ix.docs {
		out[i] = ix.docs[i].entry
	}
	return out
}

// Match returns every entry q's text and filter match, best first, with no
// paging (for facets and listings).
func (ix *Index) Match(q Query) ([]Result, error) {
	out, _, err := ix.match(q)
	return out, err
}

// match is Match, and the words of q's text read as others.
func (ix *Index) match(q Query) ([]Result, []Reading, error) {
	hits, ranked, read, err := ix.rank(q, 0)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Result, len(hits))
	for i, h := range hits {
		out[i] = ix.result(h, ranked)
	}
	return out, read, nil
}

// Referrals returns the registry entries (application/ai-registry+json) of
// the indexed catalogs.
func (ix *Index) Referrals() []Entry { return ix.referrals }

// Search ranks entries against q and returns one page.
func (ix *Index) Search(q Query) (Page, error) {
	if err := checkPageSize(q.PageSize); err != nil {
		return Page{}, err
	}
	size := cmp.Or(q.PageSize, DefaultPageSize)
	fp := fingerprint(q)
	offset, err := decodePageToken(q.PageToken, fp)
	if err != nil {
		return Page{}, err
	}
	// Only the hits up to the end of this page need to be in order.
	hits, ranked, read, err := ix.rank(q, offset+size)
	if err != nil {
		return Page{}, err
	}
	page := Page{Results: []Result{}, Referrals: ix.referrals, Matched: len(hits), Read: read}
	offset = min(offset, len(hits))
	end := min(offset+size, len(hits))
	for _, h := range hits[offset:end] {
		page.Results = append(page.Results, ix.result(h, ranked))
	}
	if end < len(hits) {
		page.PageToken = encodePageToken(end, fp)
	}
	return page, nil
}

type hit struct {
	doc   int32
	score float64
}

func (ix *Index) result(h hit, ranked bool) Result {
	d := &ix.docs[h.doc]
	return Result{Entry: d.entry, Score: scaleScore(h.score, ranked), Source: d.source}
}

// rank returns the entries matching q, best first; when k > 0, only the
// first k are in order, the rest follow in no order. ranked is false when
// the text held no searchable word: then every entry the filter allows
// matches, ordered by name, then identifier. read holds the words of the
// text that no entry holds, each read as the near one an entry does.
func (ix *Index) rank(q Query, k int) (hits []hit, ranked bool, read []Reading, err error) {
	filter, err := compileFilter(q.Filter)
	if err != nil {
		return nil, false, nil, err
	}
	terms := uniqueTerms(q.Text)
	if len(terms) == 0 {
		return ix.byName(filter, k), false, nil, nil
	}
	hits, nears := ix.score(terms, filter)
	sortFirst(hits, k, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(ix.docs[a.doc].entry.Identifier, ix.docs[b.doc].entry.Identifier)
	})
	return hits, true, ix.readings(q.Text, nears), nil
}

// byName returns every entry keep matches, the first k ordered by name,
// then identifier: a total order, so that pages cut from it never overlap.
func (ix *Index) byName(keep filter, k int) []hit {
	var hits []hit
	for i := range ix.docs {
		if keep.match(&ix.docs[i].entry) {
			hits = append(hits, hit{doc: int32(i)})
		}
	}
	sortFirst(hits, k, func(a, b hit) int {
		ea, eb := &ix.docs[a.doc].entry, &ix.docs[b.doc].entry
		return cmp.Or(cmp.Compare(ea.DisplayName, eb.DisplayName), cmp.Compare(ea.Identifier, eb.Identifier))
	})
	return hits
}

// score returns the entries keep matches that hold any of terms, unsorted,
// with their BM25 scores over the ideal; nears maps each term the index
// does not hold to the near one it was read as.
func (ix *Index) score(terms []string, keep filter) (hits []hit, nears map[string]string) {
	sp := ix.scratch.Get().(*[]float32)
	scores := *sp
	var touched []int32
	var ideal float64
	n := float64(max(len(ix.docs), ix.DrawnFrom))
	for _, t := range terms {
		list, weight, near := ix.postingsOf(t)
		if near != "" {
			if nears == nil {
				nears = map[string]string{}
			}
			nears[t] = near
		}
		idf := math.Log(1 + (n-float64(len(list))+0.5)/(float64(len(list))+0.5))
		ideal += idf * (bm25K1 + 1)
		for _, p := range list {
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			tf := float64(p.tf)
			scores[p.doc] += float32(weight * idf * tf * (bm25K1 + 1) / (tf + bm25K1))
		}
	}
	for _, d := range touched {
		s := float64(scores[d])
		scores[d] = 0 // leave the scratch clean for the next search
		if keep.match(&ix.docs[d].entry) {
			hits = append(hits, hit{doc: d, score: s / ideal})
		}
	}
	ix.scratch.Put(sp)
	return hits, nears
}

// postingsOf returns term t's postings at full weight or, when no entry
// holds t, those of the term it is nearest (near) at typoWeight.
func (ix *Index) postingsOf(t string) (list []posting, weight float64, near string) {
	if list := ix.postings[t]; len(list) > 0 {
		return list, 1, ""
	}
	if near := ix.nearest(t); near != "" {
		return ix.postings[near], typoWeight, near
	}
	return nil, 1, ""
}

// readings says which words of text were read as others, by nears (term
// to term), each word once, in the text's order.
func (ix *Index) readings(text string, nears map[string]string) []Reading {
	if nears == nil {
		return nil
	}
	var read []Reading
	for _, w := range words(text, nil) {
		if near, ok := nears[term(w)]; ok && !slices.ContainsFunc(read, func(r Reading) bool { return r.Word == w }) {
			read = append(read, Reading{Word: w, As: ix.wordOf(near)})
		}
	}
	return read
}

// Reading is a word of a query's text that no entry holds, read as a word
// that some do (a likely misspelling of it).
type Reading struct {
	Word, As string
}

// wordOf is a word that term t stems from, in the first entries that hold
// it ("kubernetes" for kubernet), for saying which word a query's was read
// as; the word of a synonym ("k8s") only if none is found, and t itself
// if no word is.
func (ix *Index) wordOf(t string) string {
	list := ix.postings[t]
	synonym := t
	for i, p := range list[:min(len(list), 8)] {
		for _, texts := range entryTexts(&ix.docs[p.doc].entry) {
			for _, text := range texts {
				for _, w := range words(text, nil) {
					switch {
					case stem(w) == t:
						return w
					case i == 0 && synonym == t && term(w) == t:
						synonym = w
					}
				}
			}
		}
	}
	return synonym
}

// typoWeight is what a query term the index does not hold counts for when
// it is taken as a term it does hold, a letter off ("filesytem" for
// filesystem): less than the term itself would.
const typoWeight = 0.7

// nearest is the term the index holds that t, which it does not, is most
// likely a misspelling of: one edit away (a letter left out, added,
// changed, or two neighbours swapped), the one in the most entries, then
// the first in order; "" for none. A term of four letters is taken only
// as one of its neighbours swapped ("jria" for jira), and a shorter one
// never: a letter changed or added turns most short words into other
// words ("play" was read as plan). Two edits, which terms of eight
// letters or more were allowed, did the same to long ones ("currency"
// was read as current, "remember" as rember). It reads the whole
// vocabulary, but only for a term that matched nothing, and compares
// only terms of its first letter.
func (ix *Index) nearest(t string) string {
	n := utf8.RuneCountInString(t)
	if n < 4 {
		return ""
	}
	best := ""
	for term, list := range ix.postings {
		if !mayBeTypoOf(t, n, term) {
			continue
		}
		if best == "" || len(list) > len(ix.postings[best]) || len(list) == len(ix.postings[best]) && term < best {
			best = term
		}
	}
	return best
}

// mayBeTypoOf reports whether t, of n runes, may be a misspelling of term
// by the rules nearest says.
func mayBeTypoOf(t string, n int, term string) bool {
	// Few typos fall on the first letter: a term that begins otherwise,
	// but for the first two swapped, is not compared.
	if term[0] != t[0] && !(len(term) > 1 && term[0] == t[1] && term[1] == t[0]) {
		return false
	}
	if d := utf8.RuneCountInString(term) - n; d > 1 || d < -1 || n == 4 && d != 0 {
		return false
	}
	return editDistance(t, term, 1) <= 1 && (n != 4 || swapped(t, term))
}

// swapped reports whether b is a with two neighbouring letters swapped.
func swapped(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	if len(ra) != len(rb) {
		return false
	}
	i := 0
	for i < len(ra) && ra[i] == rb[i] {
		i++
	}
	return i+1 < len(ra) && ra[i] == rb[i+1] && ra[i+1] == rb[i] && string(ra[i+2:]) == string(rb[i+2:])
}

// editDistance is the optimal string alignment distance of a and b
// (Levenshtein, and two neighbours swapped counting one), or most+1 once
// it is sure to be more than most, or when either is over maxTypoTerm
// runes. It allocates nothing: it runs on every term of the index of a
// length near a query term's that matched nothing.
func editDistance(a, b string, most int) int {
	var ra, rb [maxTypoTerm]rune
	na, okA := runesOf(a, &ra)
	nb, okB := runesOf(b, &rb)
	if !okA || !okB {
		return most + 1
	}
	var rows [3][maxTypoTerm + 1]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= nb; j++ {
		prev[j] = j
	}
	prevLow := 0
	for i := 1; i <= na; i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= nb; j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			low = min(low, cur[j])
		}
		if low > most && prevLow > most { // a swap reaches back two rows
			return most + 1
		}
		prevLow = low
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[nb]
}

// maxTypoTerm is the longest term editDistance compares.
const maxTypoTerm = 40

// runesOf puts s's runes in buf; ok is false when they do not fit.
func runesOf(s string, buf *[maxTypoTerm]rune) (n int, ok bool) {
	for _, r := range s {
		if n == len(buf) {
			return n, false
		}
		buf[n] = r
		n++
	}
	return n, true
}

// sortFirst puts the k smallest hits by order, sorted, at the front of
// hits, and the rest after them in no order; k <= 0 sorts them all. A
// page needs ten hits of what may be tens of thousands at 100k entries,
// and a heap of k costs far less than sorting them all.
func sortFirst(hits []hit, k int, order func(a, b hit) int) {
	if k <= 0 || k >= len(hits) {
		slices.SortFunc(hits, order)
		return
	}
	// hits[:k] is a heap whose root is the worst of the best k so far.
	worse := func(i, j int) bool { return order(hits[i], hits[j]) > 0 }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= k {
				return
			}
			if c+1 < k && worse(c+1, c) {
				c++
			}
			if !worse(c, i) {
				return
			}
			hits[i], hits[c] = hits[c], hits[i]
			i = c
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for i := k; i < len(hits); i++ {
		if order(hits[i], hits[0]) < 0 {
			hits[0], hits[i] = hits[i], hits[0]
			down(0)
		}
	}
	slices.SortFunc(hits[:k], order)
}

// scaleScore maps the fraction of the query's ideal BM25 mass that a
// document reached to 0..100; any match scores at least 1.
func scaleScore(frac float64, ranked bool) int {
	if !ranked {
		return 0
	}
	return max(1, min(100, int(math.Round(frac*100))))
}

// Searchable reports whether text holds a word the index searches on: it
// skips single letters, stop words such as "the", and punctuation. A
// text without one lists the entries unranked.
func Searchable(text string) bool { return len(tokenize(text, nil)) > 0 }

func uniqueTerms(text string) []string {
	terms := tokenize(text, nil)
	slices.Sort(terms)
	return slices.Compact(terms)
}

// Page tokens are opaque to callers but bound to the query that made them,
// so a token from another query is refused instead of silently misread.
func fingerprint(q Query) uint32 {
	h := fnv.New32a()
	// Its words as they rank: a client that sends the text again with
	// other spaces gets the same pages (its token was refused). Capitals
	// do change a ranking: "GitHub" is two words, "github" one.
	h.Write([]byte(strings.Join(strings.Fields(q.Text), " ")))
	keys := make([]string, 0, len(q.Filter))
	for k := range q.Filter {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "\x00%s=%s", k, strings.Join(q.Filter[k], "\x01"))
	}
	return h.Sum32()
}

func encodePageToken(offset int, fp uint32) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "o%d.%08x", offset, fp))
}

func decodePageToken(tok string, fp uint32) (int, error) {
	if tok == "" {
		return 0, nil
	}
	bad := fmt.Errorf("%w: pageToken is not one this registry issued for this query", ErrInvalidArgument)
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) < 2 || raw[0] != 'o' {
		return 0, bad
	}
	off, sum, ok := strings.Cut(string(raw[1:]), ".")
	n, err := strconv.Atoi(off)
	if !ok || err != nil || n < 0 || sum != fmt.Sprintf("%08x", fp) {
		return 0, bad
	}
	return n, nil
}
