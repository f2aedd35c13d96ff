// Package guard holds the gateway's safety rules:
//   - dial.go: address checks and the pinned dialer for every outgoing
//     connection;
//   - rebound.go: the DNS-rebinding check of requests to the gateway's
//     loopback listeners;
//   - stdio.go, launch.go, rlimits*.go, rundir*.go, tree*.go: the launch
//     policy of local servers, their limits, their own run directories, and
//     the teardown of their whole process tree;
//   - trust.go: the trust facts of a registry entry;
//   - ratelimit.go: each session's rate limits and loop guard;
//   - text.go, shown.go: the cleaning and bounds of third-party text;
//   - refused.go: the refusal every rule returns.
//
// Subpackage jsonrpc holds the framing and scanning of JSON-RPC.
//
// guard imports config and its own subpackages, never attach, registry or
// tools.
package guard

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TextTail is Text keeping the end of s instead of its start: its last
// max runes, after "…" when some were cut. The end of what a process
// wrote is where it says why it stopped.
func TextTail(s string, max int) string {
	t := []rune(Text(s, len(s))) // cleaned, and never longer than s
	if len(t) <= max {
		return string(t)
	}
	return "…" + string(t[len(t)-max:])
}

// Text returns s fit to show a model: control characters and bidi
// overrides removed, whitespace runs folded, invalid UTF-8 replaced, and cut
// to at most max runes (with "…" marking the cut).
func Text(s string, max int) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsSpace(r) {
			space = n > 0 // fold runs, drop leading
			continue
		}
		if isHidden(r) {
			continue
		}
		need := 1
		if space {
			need = 2
		}
		if n+need > max {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
		n += need
	}
	return b.String()
}

// Body returns s, a body of text another party wrote (an agent's answer),
// fit to show a model: as Text, but its lines kept (newlines and tabs stay;
// an answer's code or list read as one line), and a cut says how much it
// left out.
func Body(s string, max int) string {
	var b strings.Builder
	n := 0
	s = strings.ToValidUTF8(s, "\uFFFD")
	for i, r := range s {
		if r != '\n' && r != '\t' && isHidden(r) {
			continue
		}
		if n == max {
			fmt.Fprintf(&b, "… (%d more characters not shown)", utf8.RuneCountInString(s[i:]))
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// isHidden reports runes that can hide or reorder text: C0/C1 controls,
// every format character (bidi embeddings, overrides and isolates,
// zero-width characters, the soft hyphen, invisible operators, tag
// characters: Unicode's Cf), variation selectors (a payload can be spelled
// in them, one byte each, after any visible character), and characters
// that show as nothing (the combining grapheme joiner, the Hangul and
// Khmer fillers).
func isHidden(r rune) bool {
	switch {
	case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF, r >= 0x180B && r <= 0x180F:
		return true
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x17B4, r == 0x17B5:
		return true
	case r >= 0xE0000 && r <= 0xE007F: // tags, unassigned ones too
		return true
	}
	return false
}
