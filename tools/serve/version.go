package serve

import (
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/guard"
)

// RefuseVersion answers a request in a protocol version the gateway does
// not speak (versions are those it does), and reports whether it did. It
// comes first, as the spec asks and mcp-go's server does: the gateway's
// own answers at the door (refusals of unknown tools, levels) came back
// 200 in a version never agreed.
func RefuseVersion(w http.ResponseWriter, r *http.Request, versions []string) bool {
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	if v == "" || slices.Contains(versions, v) || mcp.IsModernProtocol(v) && mcp.IsValidProtocolVersion(v) {
		return false
	}
	http.Error(w, "Bad Request: Unsupported protocol version: "+guard.Text(v, 40)+"; this gateway speaks "+strings.Join(versions, ", "), http.StatusBadRequest)
	return true
}

// FastEligible checks what the server would check of a POST before a
// call: a JSON body and a protocol version it offers, one of versions.
func FastEligible(r *http.Request, versions []string) bool {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	if !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		return false
	}
	v := r.Header.Get(server.HeaderKeyProtocolVersion)
	return v == "" || slices.Contains(versions, v)
}

// SessionVersions are the protocol versions the gateway serves: those
// with sessions. The stateless protocol (2026-07-28) has none to hang a
// session's attachments, pinned servers and tasks on; its clients learn
// so (server/discover, or an error naming the versions served) and
// negotiate down.
func SessionVersions() []string {
	var out []string
	for _, v := range mcp.ValidProtocolVersions {
		if !mcp.IsModernProtocol(v) {
			out = append(out, v)
		}
	}
	return out
}
