package registry

import (
	"container/list"
	"time"
)

// kept is a map of what a third party sent (answers, entries), bounded
// in entries and in bytes, whose entries expire whether read or not:
// the newest stored is kept first, and storing evicts the oldest while
// it is expired or the map is over either bound. Bounded by count alone,
// and expired only when read, 256 answers of 7 MiB from a hostile
// registry took the gateway to 1.9 GB. It is not safe for concurrent
// use; the remote's lock guards it.
type kept[V any] struct {
	maxEntries, maxBytes int
	ttl                  time.Duration
	size                 func(V) int
	now                  func() time.Time

	order *list.List // of *keptItem[V], newest stored first
	byKey map[string]*list.Element
	bytes int
}

type keptItem[V any] struct {
	key     string
	value   V
	size    int
	expires time.Time
}

func newKept[V any](maxEntries, maxBytes int, ttl time.Duration, size func(V) int) *kept[V] {
	return &kept[V]{maxEntries: maxEntries, maxBytes: maxBytes, ttl: ttl, size: size, now: time.Now,
		order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the value stored under key, unless it expired.
func (k *kept[V]) get(key string) (V, bool) {
	el, ok := k.byKey[key]
	if !ok || !k.now().Before(el.Value.(*keptItem[V]).expires) {
		var zero V
		return zero, false
	}
	return el.Value.(*keptItem[V]).value, true
}

// put stores v under key, newest, and evicts what is expired or over
// the bounds. A value larger than a quarter of the bytes allowed is not
// stored: one answer of 7 MiB would push out all the others.
func (k *kept[V]) put(key string, v V) {
	if el, ok := k.byKey[key]; ok {
		k.remove(el)
	}
	now := k.now()
	for el := k.order.Back(); el != nil && !now.Before(el.Value.(*keptItem[V]).expires); el = k.order.Back() {
		k.remove(el)
	}
	n := k.size(v)
	if n > k.maxBytes/4 {
		return
	}
	for k.order.Len() > 0 && (k.order.Len() >= k.maxEntries || k.bytes+n > k.maxBytes) {
		k.remove(k.order.Back())
	}
	k.byKey[key] = k.order.PushFront(&keptItem[V]{key: key, value: v, size: n, expires: now.Add(k.ttl)})
	k.bytes += n
}

func (k *kept[V]) remove(el *list.Element) {
	it := k.order.Remove(el).(*keptItem[V])
	delete(k.byKey, it.key)
	k.bytes -= it.size
}

// len is how many values are stored, expired ones not yet evicted too.
func (k *kept[V]) len() int { return k.order.Len() }
