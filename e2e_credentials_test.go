package main

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ardgate/ardgate/attach/credstore"
)

// A credentials store the gateway cannot use stops its start, saying why:
// no key, a weak one, a file another key wrote, one others may read. A
// good key and no file yet start it, the store to be made at the first
// grant.
func TestCredentialsStoreAtStart(t *testing.T) {
	dir := t.TempDir()
	newKey := func() []byte {
		k := make([]byte, credstore.KeySize)
		_, _ = rand.Read(k)
		return k
	}
	key, other := newKey(), newKey()
	written := filepath.Join(dir, "written")
	s, err := credstore.Open(written, other)
	if err == nil {
		err = s.Put(credstore.APIKey, "x", []byte("v"))
	}
	if err != nil {
		t.Fatal(err)
	}
	exposed := filepath.Join(dir, "exposed")
	if s, err = credstore.Open(exposed, key); err == nil {
		err = s.Put(credstore.APIKey, "x", []byte("v"))
	}
	if err != nil || os.Chmod(exposed, 0o644) != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name, store string
		key         []byte
		says        string // "" when it starts
	}{
		{"no key", "new", nil, "ARDGATE_CREDENTIALS_KEY: not set"},
		{"weak key", "new", make([]byte, credstore.KeySize), "a weak key"},
		{"another key's file", written, key, "ARDGATE_CREDENTIALS_KEY is not the key it was written with"},
		{"readable by others", exposed, key, "chmod 600"},
		{"a new store", "new", key, ""},
	} {
		if tc.name == "readable by others" && runtime.GOOS == "windows" {
			continue
		}
		cfg := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), map[string]any{"credentials": map[string]any{"store": tc.store}})
		cmd := exec.Command(gatewayBin, "serve", "--config", cfg)
		cmd.Env = env(false)
		if tc.key != nil {
			cmd.Env = append(cmd.Env, "ARDGATE_CREDENTIALS_KEY="+b64(tc.key))
		}
		out, err := cmd.CombinedOutput() // stdin is empty: a gateway that starts ends at once
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: %v %s", tc.name, err, out)
		case tc.says != "" && (err == nil || !strings.Contains(string(out), tc.says)):
			t.Errorf("%s: %v %s; want a failed start saying %q", tc.name, err, out, tc.says)
		}
	}
}
