package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ardgate/ardgate/attach"
)

// An attach that waits for the user's keys fails with keys_required: the
// page's URL and the variables' names, in structuredContent and in a
// sentence that has the model show the link and attach again.
func TestKeysRequiredResult(t *testing.T) {
	kr := &attach.KeysRequired{URN: "urn:air:a.example:mcp:x", Keys: []string{"API_KEY"}, URL: "http://127.0.0.1:9/credentials/T"}
	res := fromError(fmt.Errorf("attach %s: %w", kr.URN, kr))
	var body keysRequiredBody
	if err := json.Unmarshal(res.RawStructuredContent, &body); err != nil || !res.IsError {
		t.Fatalf("result %+v: %v", res, err)
	}
	msg := firstText(res)
	if body.Code != "keys_required" || body.URL != kr.URL || !slices.Equal(body.Keys, kr.Keys) || body.URN != kr.URN ||
		body.Error != msg || !strings.Contains(msg, kr.URL) || !strings.Contains(msg, "attach_resource again") || !strings.Contains(msg, "API_KEY") {
		t.Fatalf("keys_required says %+v", body)
	}
}
