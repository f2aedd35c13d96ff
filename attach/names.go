package attach

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
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
// upstream name, so it stays unique and the same on every attach.
func toolName(server, tool string) string {
	var b strings.Builder
	b.WriteString("mcp_" + server + "__")
	for _, r := range tool {
		if r < 128 && (r == '_' || r == '.' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
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
