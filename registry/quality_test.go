package registry

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// The intended server is in the top 3 for at least 27 of 30 natural-
// language queries over the 464 real servers of the corpus. Queries and
// expectations are in testdata/search-quality/queries.json.
func TestSearchQuality(t *testing.T) {
	entries, _, err := LoadCatalogFile("../testdata/search-quality/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../testdata/search-quality/queries.json")
	if err != nil {
		t.Fatal(err)
	}
	var queries []struct {
		Query  string   `json:"query"`
		Expect []string `json:"expect"`
	}
	if err := json.Unmarshal(data, &queries); err != nil {
		t.Fatal(err)
	}
	ix := NewIndex("corpus", entries)
	hits := 0
	var rr float64
	for _, q := range queries {
		page, err := ix.Search(Query{Text: q.Query, PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		rank := slices.IndexFunc(page.Results, func(r Result) bool { return slices.Contains(q.Expect, r.Identifier) })
		if rank >= 0 {
			rr += 1 / float64(rank+1)
		}
		if rank >= 0 && rank < 3 {
			hits++
			continue
		}
		var top []string
		for _, r := range page.Results[:min(3, len(page.Results))] {
			top = append(top, r.Identifier)
		}
		t.Logf("miss: %q wanted %v, got %v (rank %d)", q.Query, q.Expect, top, rank)
	}
	t.Logf("%d entries: top-3 hit rate %d/%d, MRR@10 %.2f", ix.Len(), hits, len(queries), rr/float64(len(queries)))
	if len(queries) < 30 || ix.Len() < 200 {
		t.Fatalf("the set is too small: %d queries, %d entries", len(queries), ix.Len())
	}
	if hits*10 < len(queries)*9 {
		t.Fatalf("top-3 hit rate %d/%d is under 90%%", hits, len(queries))
	}
}
