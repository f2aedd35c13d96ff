package credstore

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// open opens the store at path with key, failing t on an error.
func open(t *testing.T, path string, key []byte) *Store {
	t.Helper()
	s, err := Open(path, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What is put is got back, from the store and from the file opened
// again, by kind and id; a deleted entry is gone from both. The file
// holds none of it in the clear.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	path, key := filepath.Join(t.TempDir(), "creds"), newKey(t)
	s := open(t, path, key)
	if _, ok := s.Get(OAuthGrant, "https://a.example/mcp"); ok {
		t.Fatal("a new store holds an entry")
	}
	for _, e := range []struct {
		kind      Kind
		id, value string
	}{
		{OAuthGrant, "https://a.example/mcp", `{"access_token":"secret-access"}`},
		{APIKey, APIKeyID("urn:air:x:mcp:y", "test", "npm @x/y 1.0.0", "API_KEY"), "secret-key"},
		{OAuthGrant, "https://a.example/mcp", `{"access_token":"secret-access-2"}`}, // replaces the first
	} {
		if err := s.Put(e.kind, e.id, []byte(e.value)); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []*Store{s, open(t, path, key)} {
		if v, ok := st.Get(OAuthGrant, "https://a.example/mcp"); !ok || string(v) != `{"access_token":"secret-access-2"}` {
			t.Errorf("the grant: %q %v", v, ok)
		}
		if v, ok := st.Get(APIKey, APIKeyID("urn:air:x:mcp:y", "test", "npm @x/y 1.0.0", "API_KEY")); !ok || string(v) != "secret-key" {
			t.Errorf("the key: %q %v", v, ok)
		}
		if _, ok := st.Get(APIKey, "https://a.example/mcp"); ok {
			t.Error("an id is found under another kind")
		}
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("secret")) || bytes.Contains(data, []byte("a.example")) {
		t.Errorf("the file holds a credential in the clear: %q", data)
	}
	if err := s.Delete(APIKey, APIKeyID("urn:air:x:mcp:y", "test", "npm @x/y 1.0.0", "API_KEY")); err != nil {
		t.Fatal(err)
	}
	if _, ok := open(t, path, key).Get(APIKey, APIKeyID("urn:air:x:mcp:y", "test", "npm @x/y 1.0.0", "API_KEY")); ok {
		t.Error("a deleted entry is read back")
	}
}

// A file that is not what the key wrote is refused, saying why: another
// key, any byte altered (header, nonce, ciphertext, tag), cut short, or
// not a store at all. A key of the wrong size is refused before.
func TestRefusedFiles(t *testing.T) {
	t.Parallel()
	dir, key := t.TempDir(), newKey(t)
	good := filepath.Join(dir, "good")
	if err := open(t, good, key).Put(OAuthGrant, "https://a.example/mcp", []byte("grant")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	flip := func(i int) []byte {
		d := bytes.Clone(data)
		d[i] ^= 1
		return d
	}
	for _, tc := range []struct {
		name string
		data []byte
		key  []byte
		says string
	}{
		{"another key", data, newKey(t), "ARDGATE_CREDENTIALS_KEY is not the key it was written with"},
		{"header altered", flip(3), key, "not a credentials store"},
		{"nonce altered", flip(len(header) + 1), key, "the file was altered"},
		{"ciphertext altered", flip(len(header) + 14), key, "the file was altered"},
		{"tag altered", flip(len(data) - 1), key, "the file was altered"},
		{"cut short", data[:len(data)-20], key, "the file was altered"},
		{"not a store", []byte(`{"entries":[]}`), key, "not a credentials store"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if err := os.WriteFile(path, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path, tc.key)
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want ErrUnreadable, naming the file and saying %q", tc.name, err, tc.says)
		}
	}
	if _, err := Open(good, key[:16]); err == nil {
		t.Error("a 16-byte key was taken")
	}
}

// The file is the owner's alone, mode 0600, after each write; one that
// group or others may read is refused at Open on unix.
func TestFileMode(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no mode bits to check")
	}
	path, key := filepath.Join(t.TempDir(), "creds"), newKey(t)
	s := open(t, path, key)
	for i := range 2 {
		if err := s.Put(APIKey, "k", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("write %d: mode %v, %v; want 0600", i, fi.Mode().Perm(), err)
		}
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path, key); !errors.Is(err, ErrExposed) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %04o: %v; want ErrExposed, saying chmod 600", mode, err)
		}
	}
}

// A write replaces the file in one step: a reader opening the store
// while another writes finds a whole file each time, and no temporary
// file is left beside it. A write that the bounds refuse changes neither
// the file nor what the store holds.
func TestAtomicWrite(t *testing.T) {
	t.Parallel()
	dir, key := t.TempDir(), newKey(t)
	path := filepath.Join(dir, "creds")
	s := open(t, path, key)
	if err := s.Put(APIKey, "first", []byte("v")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		defer close(stop)
		for i := range 50 {
			if err := s.Put(APIKey, fmt.Sprint("k", i%20), bytes.Repeat([]byte{'x'}, 100*i)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for reads := 0; ; reads++ {
		select {
		case <-stop:
			wg.Wait()
			entries, _ := os.ReadDir(dir)
			if len(entries) != 2 || entries[0].Name() != "creds" || entries[1].Name() != "creds.lock" {
				t.Fatalf("after the writes the directory holds %v, want the store and its lock alone", entries)
			}
			before, _ := os.ReadFile(path)
			if err := s.Put(APIKey, "big", make([]byte, MaxFile)); !errors.Is(err, ErrFull) {
				t.Fatalf("a write over the bound: %v", err)
			}
			after, _ := os.ReadFile(path)
			if _, ok := s.Get(APIKey, "big"); ok || !bytes.Equal(before, after) {
				t.Fatal("a refused write changed the store")
			}
			return
		default:
		}
		if _, err := Open(path, key); err != nil {
			t.Fatalf("read %d, while another writes: %v", reads, err)
		}
	}
}

// An entry's id names an MCP server by its origin and path: the scheme
// and host in lower case, no query or fragment.
func TestGrantID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://MCP.Example.com/mcp?key=secret#x": "https://mcp.example.com/mcp",
		"http://localhost:3000/mcp":                "http://localhost:3000/mcp",
		"HTTPS://a.example":                        "https://a.example",
	} {
		if got, err := GrantID(in); err != nil || got != want {
			t.Errorf("GrantID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := GrantID("/no/origin"); err == nil {
		t.Error("a URL without a host has an id")
	}
}

// Two Stores of one file, two gateways sharing it, keep each other's
// writes: each write reads the file again under its lock, whether the
// writes follow one another or run at once. An entry one deleted is not
// written back by the other, and one gets what the other wrote.
func TestSharedFile(t *testing.T) {
	t.Parallel()
	path, key := filepath.Join(t.TempDir(), "creds"), newKey(t)
	a, b := open(t, path, key), open(t, path, key)
	if err := a.Put(APIKey, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(APIKey, "b", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(APIKey, "b"); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(APIKey, "c", []byte("3")); err != nil {
		t.Fatal(err)
	}
	if v, ok := a.Get(APIKey, "c"); !ok || string(v) != "3" {
		t.Errorf("a Store does not get the other's write: %q %v", v, ok)
	}
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b} {
		wg.Go(func() {
			for i := range 20 {
				if err := s.Put(APIKey, fmt.Sprintf("%p %d", s, i), []byte("v")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got := open(t, path, key)
	for _, id := range []string{"a", "c"} {
		if _, ok := got.Get(APIKey, id); !ok {
			t.Errorf("entry %q, written by one Store, is lost", id)
		}
	}
	if _, ok := got.Get(APIKey, "b"); ok {
		t.Error("an entry one Store deleted was written back by the other")
	}
	for _, s := range []*Store{a, b} {
		for i := range 20 {
			if _, ok := got.Get(APIKey, fmt.Sprintf("%p %d", s, i)); !ok {
				t.Errorf("entry %d of a write at once with the other Store's is lost", i)
			}
		}
	}
}

// A symbolic link at the store's path is refused at Open, not read
// through (and then replaced by a write); so is a directory.
func TestNotARegularFile(t *testing.T) {
	t.Parallel()
	dir, key := t.TempDir(), newKey(t)
	real := filepath.Join(dir, "real")
	if err := open(t, real, key).Put(APIKey, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	for _, path := range []string{link, dir} {
		if _, err := Open(path, key); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v; want ErrUnreadable, saying it is not a regular file", path, err)
		}
	}
}
