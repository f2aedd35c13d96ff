// Package credstore keeps the credentials the user gave the gateway
// (OAuth grants, API-key values) across its restarts, in one file the
// operator names (credentials.store), encrypted at rest.
//
// The file is AES-256-GCM under a key from the environment
// (ARDGATE_CREDENTIALS_KEY), with a random nonce for each write and its
// header as additional data: a wrong key, or a file altered by one byte,
// is refused, never read as something else. Inside is a versioned JSON
// payload of entries, each a kind, an id and a value the caller encodes.
// The file is written whole, to a temporary file beside it renamed over
// it, with mode 0600; one that group or others may read (on unix), or a
// symbolic link, is refused, and its size is bounded. Each write takes a
// lock on a file beside it (path + ".lock") and reads the file again
// under it, so that gateways sharing the file keep each other's writes.
// Without a store nothing persists: the gateway keeps credentials in
// each session's memory only.
//
// It imports the standard library, and golang.org/x/sys/windows for the
// lock on Windows.
package credstore

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Kind says what an entry holds, and so what its id names.
type Kind string

// Kinds of entries.
const (
	// OAuthGrant is an OAuth grant (attach/oauth's Saved) of the server
	// at a URL: its id is GrantID's.
	OAuthGrant Kind = "oauth_grant"
	// APIKey is the value of a variable a package needs: its id is
	// APIKeyID's.
	APIKey Kind = "api_key"
)

// GrantID is the id of the grant for the MCP server at serverURL: its
// origin and path, the resource a token is for (RFC 8707), without the
// query and fragment, which may hold a key, and with the scheme and host
// in lower case, as an origin is compared.
func GrantID(serverURL string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("a grant's server URL %q has no origin", serverURL)
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + u.EscapedPath(), nil
}

// APIKeyID is the id of variable name's value for the package pkg of
// the entry urn as the registry registryID resolved it: a key given for
// one package is never found for another under the same URN. The parts
// are a JSON array, so no part's text can pass for another's.
func APIKeyID(urn, registryID, pkg, name string) string {
	id, _ := json.Marshal([]string{urn, registryID, pkg, name}) // strings always marshal
	return string(id)
}

// KeySize is the size of a key: 32 bytes, for AES-256.
const KeySize = 32

// Bounds of the file: a store that would grow past them refuses the
// write (ErrFull), and a file past them is refused at Open.
const (
	MaxFile    = 1 << 20
	MaxEntries = 1000
	maxID      = 1024
)

// header begins the file, and is sealed with the payload: a file of
// another format, or another version of this one, is told at once.
var header = []byte("ardgate-credstore-v1\n")

// version is the payload's.
const version = 1

// Errors of the store.
var (
	// ErrUnreadable: the file does not decrypt under the key, or is not
	// a store. Nothing of it is read.
	ErrUnreadable = errors.New("the credentials store cannot be read")
	// ErrExposed: the file may be read by others than its owner.
	ErrExposed = errors.New("the credentials store may be read by others")
	// ErrFull: the write would take the store past its bounds.
	ErrFull = errors.New("the credentials store is full")
)

// Store is the open store; its methods may be called at once from many
// goroutines, and from other Stores of the file, in this process or
// another.
type Store struct {
	path string
	aead cipher.AEAD

	mu      sync.Mutex
	entries []entry     // in the order written, as last read or written
	file    os.FileInfo // the file entries are of; nil, none
}

// entry is one credential of the payload.
type entry struct {
	Kind  Kind   `json:"kind"`
	ID    string `json:"id"`
	Value []byte `json:"value"`
}

// payload is what the file holds, decrypted.
type payload struct {
	Version int     `json:"version"`
	Entries []entry `json:"entries"`
}

// Open opens the store at path with key, KeySize bytes: it reads the file
// if there is one, and creates it at the first write if not. Its
// directory must exist.
func Open(path string, key []byte) (*Store, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("a credentials store's key is %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, aead: aead}
	if err := s.read(); err != nil {
		return nil, err
	}
	return s, nil
}

// read reads the entries of the file, none when there is no file, and
// holds them. The caller holds mu, or is Open.
func (s *Store) read() error {
	data, fi, err := readFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.entries, s.file = nil, nil
		return nil
	case err != nil:
		return err
	}
	entries, err := s.open(data)
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	s.entries, s.file = entries, fi
	return nil
}

// fresh reads the file again if another Store replaced it since this one
// last read or wrote it: each write is a new file renamed into place, so
// a file that is not the one held is another's write. The caller holds
// mu. A file that cannot be read now leaves the entries held.
func (s *Store) fresh() {
	fi, err := os.Stat(s.path)
	if err != nil || (s.file != nil && os.SameFile(fi, s.file)) {
		return
	}
	_ = s.read()
}

// readFile reads the store's file, refusing one that others may read,
// that is over MaxFile, or that is not a regular file: a symbolic link
// would be read through, and then replaced by the first write.
func readFile(path string) ([]byte, os.FileInfo, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: %w: it is not a regular file; name the file itself", path, ErrUnreadable)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, nil, fmt.Errorf("%s: %w (mode %04o): make it the owner's alone, chmod 600 %s", path, ErrExposed, fi.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > MaxFile {
		return nil, nil, fmt.Errorf("%s: %w: it is over %d KiB", path, ErrUnreadable, MaxFile>>10)
	}
	return data, fi, nil
}

// open decrypts and decodes data, the file.
func (s *Store) open(data []byte) ([]entry, error) {
	n := s.aead.NonceSize()
	if !bytes.HasPrefix(data, header) || len(data) < len(header)+n+s.aead.Overhead() {
		return nil, fmt.Errorf("%w: it is not a credentials store of this version", ErrUnreadable)
	}
	nonce, sealed := data[len(header):len(header)+n], data[len(header)+n:]
	plain, err := s.aead.Open(nil, nonce, sealed, header)
	if err != nil {
		return nil, fmt.Errorf("%w: it does not decrypt: ARDGATE_CREDENTIALS_KEY is not the key it was written with, or the file was altered", ErrUnreadable)
	}
	var p payload
	if err := json.Unmarshal(plain, &p); err != nil || p.Version != version {
		return nil, fmt.Errorf("%w: its payload is not of version %d", ErrUnreadable, version)
	}
	return p.Entries, nil
}

// Get returns the value of the entry of kind and id, as the file holds
// it now: another gateway's write of it is read, so that a refresh token
// it rotated is the one used.
func (s *Store) Get(kind Kind, id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fresh()
	if i := find(s.entries, kind, id); i >= 0 {
		return slices.Clone(s.entries[i].Value), true
	}
	return nil, false
}

// Put sets the entry of kind and id to value, and writes the file.
func (s *Store) Put(kind Kind, id string, value []byte) error {
	if len(id) > maxID {
		return fmt.Errorf("%w: an id of %d bytes is over %d", ErrFull, len(id), maxID)
	}
	e := entry{Kind: kind, ID: id, Value: slices.Clone(value)}
	return s.update(func(entries []entry) ([]entry, bool, error) {
		if i := find(entries, kind, id); i >= 0 {
			entries[i] = e
		} else if len(entries) < MaxEntries {
			entries = append(entries, e)
		} else {
			return nil, false, fmt.Errorf("%w: it holds %d entries", ErrFull, MaxEntries)
		}
		return entries, true, nil
	})
}

// Delete removes the entry of kind and id, if there is one, and writes
// the file.
func (s *Store) Delete(kind Kind, id string) error {
	return s.update(func(entries []entry) ([]entry, bool, error) {
		i := find(entries, kind, id)
		if i < 0 {
			return entries, false, nil
		}
		return slices.Delete(entries, i, i+1), true, nil
	})
}

// update applies change to the entries of the file as it is now, and
// writes what change made of them if it changed them. It holds the lock
// beside the file meanwhile: another gateway's write, since this Store
// last read the file, is read and kept, not written over.
func (s *Store) update(change func([]entry) ([]entry, bool, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockFile(s.path + ".lock")
	if err != nil {
		return fmt.Errorf("lock the credentials store: %w", err)
	}
	defer unlock()
	if err := s.read(); err != nil {
		return err
	}
	next, changed, err := change(slices.Clone(s.entries))
	if err != nil || !changed {
		return err
	}
	return s.write(next)
}

// find is the index of the entry of kind and id in entries, or -1.
func find(entries []entry, kind Kind, id string) int {
	return slices.IndexFunc(entries, func(e entry) bool { return e.Kind == kind && e.ID == id })
}

// write seals entries under a new nonce and puts them in the file in one
// step, then holds them; the file and the entries held change together
// or not at all. The caller holds mu and the file's lock.
func (s *Store) write(entries []entry) error {
	plain, err := json.Marshal(payload{Version: version, Entries: entries})
	if err != nil {
		return err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	data := append(append(slices.Clone(header), nonce...), s.aead.Seal(nil, nonce, plain, header)...)
	if len(data) > MaxFile {
		return fmt.Errorf("%w: it would be over %d KiB", ErrFull, MaxFile>>10)
	}
	fi, err := writeAtomic(s.path, data)
	if err != nil {
		return fmt.Errorf("write the credentials store: %w", err)
	}
	s.entries, s.file = entries, fi
	return nil
}

// writeAtomic replaces path with data, and returns the new file's
// information: a temporary file of mode 0600 beside it, synced, renamed
// over it, and the directory synced, so that the rename outlives a
// crash. A reader, or a gateway killed meanwhile, finds the old file or
// the new one, never a part.
func writeAtomic(path string, data []byte) (os.FileInfo, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+strings.TrimPrefix(filepath.Base(path), ".")+".*.tmp") // 0600
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat() // the file the rename puts at path
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	return fi, syncDir(filepath.Dir(path))
}
