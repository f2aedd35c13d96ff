package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// floodReply answers every search with n results, each with a
// description of desc bytes, under new URNs in every answer, and with
// refs referrals.
func floodReply(n, desc, refs int) http.HandlerFunc {
	var answer atomic.Int64
	long := strings.Repeat("x", desc)
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		a := answer.Add(1)
		w.Header().Set("Content-Type", "application/json")
		var b strings.Builder
		b.WriteString(`{"results":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"identifier":"urn:air:f.test:mcp:s%d-%d","displayName":"S","type":"t","url":"https://f.test/","score":5,"description":"%s"}`, a, i, long)
		}
		b.WriteString(`],"referrals":[`)
		for i := range refs {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"identifier":"urn:air:f.test:r:r%d","displayName":"R","type":"r","url":"https://r%d.f.test/"}`, i, i)
		}
		b.WriteString(`]}`)
		_, _ = io.WriteString(w, b.String())
	}
}

// What a registry client keeps of a registry's answers is bounded in
// bytes: 7 results of 1 MiB descriptions in every answer, each answer
// kept whole and each entry whole, took the gateway to 1.9 GB. Here
// answers of 3.5 MiB, each small enough to be kept.
func TestRemoteKeepsBoundedBytes(t *testing.T) {
	t.Parallel()
	ts, _ := quirkServer(t, floodReply(7, 512<<10, 0))
	a, err := NewARD("flood", ts.URL, "", RemoteOptions{HTTP: &http.Client{}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		p, err := a.Search(context.Background(), Query{Text: fmt.Sprint("weather ", i)})
		if err != nil || len(p.Results) != 7 {
			t.Fatalf("search %d: %v, %d results", i, err, len(p.Results))
		}
		if d := p.Results[0].Description; utf8.RuneCountInString(d) > MaxDescriptionRunes+1 {
			t.Fatalf("a description of %d runes was returned; the bound is %d", utf8.RuneCountInString(d), MaxDescriptionRunes)
		}
	}
	a.mu.Lock()
	cached, seen := a.cache.bytes, a.seen.bytes
	a.mu.Unlock()
	if cached > maxCachedBytes {
		t.Errorf("%d MiB of answers kept; the bound is %d MiB", cached>>20, maxCachedBytes>>20)
	}
	if cached == 0 {
		t.Error("no answer kept")
	}
	if seen > 42*2<<10 {
		t.Errorf("42 entries seen hold %d KiB; cut to what is shown, they are about 1 KiB each", seen>>10)
	}
	e, ok := a.recall("urn:air:f.test:mcp:s6-6")
	if !ok || utf8.RuneCountInString(e.Description) > MaxDescriptionRunes+1 {
		t.Errorf("the entry seen last: %v, a description of %d runes", ok, utf8.RuneCountInString(e.Description))
	}
}

// Entries seen are bounded in bytes too, whatever they hold within the
// bounds of one entry.
func TestRemoteSeenBoundedBytes(t *testing.T) {
	t.Parallel()
	a := newTestARD(t, "http://127.0.0.1:1")
	data := []byte(`{"x":"` + strings.Repeat("d", 900<<10) + `"}`)
	for i := range 20 {
		e, ok := bounded(Entry{Identifier: fmt.Sprintf("urn:air:acme.com:mcp:s%d", i), DisplayName: "S", Type: "t", Data: data})
		if !ok {
			t.Fatal("an entry of 900 KiB data was left out; the bound is 1 MiB")
		}
		a.remember([]Entry{e})
	}
	if a.seen.bytes > maxSeenBytes {
		t.Errorf("%d MiB of entries seen kept; the bound is %d MiB", a.seen.bytes>>20, maxSeenBytes>>20)
	}
	if _, ok := a.recall("urn:air:acme.com:mcp:s19"); !ok {
		t.Error("the entry seen last is not kept")
	}
}

// Answers expire whether read again or not: one search, then another
// after the TTL, leaves only the second's answer kept.
func TestRemoteAnswersExpireUnread(t *testing.T) {
	t.Parallel()
	ts, _ := quirkServer(t, jsonReply(200, `{"results":[`+oneEntry+`,"score":5}]}`))
	a, err := NewARD("reg", ts.URL, "", RemoteOptions{HTTP: &http.Client{}, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a.cache.now = func() time.Time { return now }
	for _, text := range []string{"weather", "wind"} {
		if _, err := a.Search(context.Background(), Query{Text: text}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(2 * time.Minute)
	}
	if n := a.cache.len(); n != 1 {
		t.Errorf("%d answers kept after the first expired; want 1", n)
	}
}

// A registry's page is cut to the size asked for, its referrals to
// maxReferrals: asked for one result, a registry sent 40,000.
func TestARDCutsToThePage(t *testing.T) {
	t.Parallel()
	ts, _ := quirkServer(t, floodReply(40000, 0, 20000))
	a, err := NewARD("flood", ts.URL, "", RemoteOptions{HTTP: &http.Client{}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for size, want := range map[int]int{1: 1, 0: DefaultPageSize, MaxPageSize: MaxPageSize} {
		p, err := a.Search(context.Background(), Query{Text: "weather", PageSize: size})
		if err != nil || len(p.Results) != want || len(p.Referrals) != maxReferrals {
			t.Errorf("page size %d: %v, %d results, %d referrals; want %d and %d", size, err, len(p.Results), len(p.Referrals), want, maxReferrals)
		}
	}
	// A prefix glob reads the registry's pages itself: cut alike.
	p, err := a.Search(context.Background(), Query{Text: "weather", PageSize: 3, Filter: map[string][]string{"publisher": {"f.*"}}})
	if err != nil || len(p.Results) != 3 || len(p.Referrals) != maxReferrals {
		t.Errorf("glob: %v, %d results, %d referrals", err, len(p.Results), len(p.Referrals))
	}
}

// An MCP Registry's page is cut to the limit asked for.
func TestMCPRegistryCutsToThePage(t *testing.T) {
	t.Parallel()
	ts, _ := quirkServer(t, func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString(`{"servers":[`)
		for i := range 5000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"server":{"name":"io.github.flood/weather-%d","description":"weather"}}`, i)
		}
		b.WriteString(`],"metadata":{}}`)
		jsonReply(200, b.String())(w, r)
	})
	m, err := NewMCPRegistry("mcp", ts.URL, RemoteOptions{HTTP: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Search(context.Background(), Query{Text: "weather"}); err != nil {
		t.Fatal(err)
	}
	if n := m.seen.len(); n > namePage {
		t.Errorf("%d servers read of a page asked for %d", n, namePage)
	}
}

// What a well-known host publishes is bounded as a registry's answers
// are: the first maxHostEntries entries, each cut to what is shown.
func TestWellKnownBoundsAHost(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 4<<10)
	ts, _ := quirkServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/ai-catalog.json" {
			http.NotFound(w, r)
			return
		}
		var b strings.Builder
		b.WriteString(`{"specVersion":"1.0","entries":[`)
		for i := range maxHostEntries + 50 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"identifier":"urn:air:h.test:mcp:s%d","displayName":"S","type":"t","url":"https://h.test/","description":"%s"}`, i, long)
		}
		b.WriteString(`]}`)
		jsonReply(200, b.String())(w, r)
	})
	w, err := NewWellKnown("hosts", []string{ts.URL}, RemoteOptions{HTTP: &http.Client{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Refresh(context.Background())
	entries := w.index.Load().Entries()
	if len(entries) != maxHostEntries {
		t.Errorf("%d entries kept of a host; want %d", len(entries), maxHostEntries)
	}
	for _, e := range entries {
		if n := utf8.RuneCountInString(e.Description); n > MaxDescriptionRunes+1 {
			t.Fatalf("a description of %d runes kept", n)
		}
	}
}
