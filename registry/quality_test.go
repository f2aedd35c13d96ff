package registry

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// Ranking quality over the 464 real servers of testdata/search-quality/
// corpus.json, measured with three sets of 30 natural-language needs:
//
//   - queries.json: the set the ranking was first tuned on;
//   - queries-blind.json: written afterwards and never tuned against at
//     first; its misses were later read to find classes of failure
//     (plural folding, stop words, unindexed publisher), so it is no
//     longer fully blind;
//   - queries-heldout.json: written before that second round, over
//     servers the other two sets do not target, and measured only before
//     it (23/30, MRR@10 0.72) and after it (23/30, 0.70), never looked at
//     query by query in between.
//
// A hit is an intended server in the top 3. Each set has a floor of hits:
// 90% for the tuned set, and for the others what was last measured, so
// any regression fails.
func TestSearchQuality(t *testing.T) {
	entries, _, err := LoadCatalogFile("../testdata/search-quality/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex("corpus", entries)
	for _, set := range []struct {
		file    string
		minHits int
	}{
		{"queries.json", 27},
		{"queries-blind.json", 23},
		{"queries-heldout.json", 23},
	} {
		t.Run(set.file, func(t *testing.T) {
			checkSearchQuality(t, ix, "../testdata/search-quality/"+set.file, set.minHits)
		})
	}
}

func checkSearchQuality(t *testing.T, ix *Index, path string, minHits int) {
	data, err := os.ReadFile(path)
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
	hits, first := 0, 0
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
		if rank == 0 {
			first++
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
	t.Logf("%d entries: first %d/%d, top-3 hit rate %d/%d, MRR@10 %.2f", ix.Len(), first, len(queries), hits, len(queries), rr/float64(len(queries)))
	if len(queries) < 30 || ix.Len() < 200 {
		t.Fatalf("the set is too small: %d queries, %d entries", len(queries), ix.Len())
	}
	if hits < minHits {
		t.Fatalf("top-3 hit rate %d/%d is under the floor of %d", hits, len(queries), minHits)
	}
}
