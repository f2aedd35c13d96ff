package attach

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
)

const (
	maxToolName   = 64
	maxServerName = 24
)

// serverName lower-cases s to [a-z0-9_], as attachment names must be.
func serverName(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	n := strings.TrimRight(b.String(), "_")
	if len(n) > maxServerName {
		n = strings.TrimRight(n[:maxServerName], "_")
	}
	if n == "" {
		n = "server"
	}
	return n
}

// NamedAs reports whether the name asked for an attachment (attach_resource's
// "name") is a's, or no name was asked for.
func (a *Attachment) NamedAs(asked string) bool { return asked == "" || serverName(asked) == a.Name }

// toolName builds mcp_<server>__<tool>. Characters clients reject become
// '_'. A name over 64 characters is cut and given a short hash of the whole
// upstream name, so it stays unique and the same on every attach. A name
// with no letter or digit left (天気 became "__", 'お天気' "___") is
// "tool" and that hash: the model reads it, and the description says what
// it does.
func toolName(server, tool string) string {
	var b strings.Builder
	b.WriteString("mcp_" + server + "__")
	readable := false
	for _, r := range tool {
		alnum := r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		readable = readable || alnum
		if alnum || r == '_' || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if !readable {
		return hashed("mcp_"+server+"__tool", tool)
	}
	if name := b.String(); len(name) <= maxToolName {
		return name
	}
	return hashed(b.String(), tool)
}

// hashed cuts name to fit 64 characters with a hash of tool appended. It
// also separates two upstream names that sanitise to the same tool name.
func hashed(name, tool string) string {
	sum := sha256.Sum256([]byte(tool))
	suffix := "_" + hex.EncodeToString(sum[:3])
	return name[:min(len(name), maxToolName-len(suffix))] + suffix
}

// exposedNames names an attachment's tools, or prompts, for the session,
// by their upstream names: mcp_<server>__<name>. A name given before (in
// given, upstream → exposed) stays its item's, so that a name never
// changes, nor passes to another item, while its item is listed; then a
// name that needs no cleaning gets exactly that (on a first listing, the
// cleaned ones cannot take it); one cleaned, or cut, to a name already
// taken gets a hash of its upstream name as well, and another should that
// be taken too. A name the server lists twice is named once.
func exposedNames(server string, upstream []string, given map[string]string) map[string]string {
	out := make(map[string]string, len(upstream))
	used := make(map[string]bool, len(upstream))
	take := func(u, name string) {
		used[name] = true
		out[u] = name
	}
	for _, u := range upstream {
		if name, ok := given[u]; ok && !used[name] {
			take(u, name)
		}
	}
	for _, exact := range []bool{true, false} {
		for _, u := range upstream {
			if _, done := out[u]; done {
				continue
			}
			name := toolName(server, u)
			if (name == "mcp_"+server+"__"+u) != exact {
				continue
			}
			for i := 2; used[name]; i++ {
				name = hashed(name, u+"#"+strconv.Itoa(i))
			}
			take(u, name)
		}
	}
	return out
}

// nameBook keeps the names an attachment's tools (or prompts) were last
// given, for exposedNames.
type nameBook struct {
	mu    sync.Mutex
	given map[string]string
}

// eachNamed calls yield with each item of list, in upstream-name order,
// and its exposed name (exposedNames, with the names book gave before,
// which it then keeps); an item whose upstream name came before is left
// out. list is sorted in place.
func eachNamed[T any](book *nameBook, server string, list []T, upstream func(T) string, yield func(item T, name string)) {
	slices.SortFunc(list, func(x, y T) int { return strings.Compare(upstream(x), upstream(y)) })
	names := make([]string, len(list))
	for i, it := range list {
		names[i] = upstream(it)
	}
	book.mu.Lock()
	exposed := exposedNames(server, names, book.given)
	book.given = maps.Clone(exposed)
	book.mu.Unlock()
	for _, it := range list {
		if name, ok := exposed[upstream(it)]; ok {
			delete(exposed, upstream(it))
			yield(it, name)
		}
	}
}
