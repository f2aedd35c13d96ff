package attach

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ardgate/ardgate/attach/credstore"
	"github.com/ardgate/ardgate/guard"
)

// KeysPath is where ardgate's page asks the user for a package's keys,
// with the flow's one-time token after it: on the gateway's own listener
// over HTTP, or on a loopback listener opened for the flow over stdio.
const KeysPath = "/credentials/"

// KeysFlowTTL bounds how long a page waits to be filled in; its token is
// refused from then on, and its loopback listener, if any, closes.
const KeysFlowTTL = 10 * time.Minute

// Bounds of what a page asks for and takes.
const (
	maxKeys     = 10       // variables one package may ask for
	maxKeyPages = 32       // pages of a session, open or used, until their TTL
	maxKeyValue = 4096     // bytes of one value
	maxKeysBody = 64 << 10 // bytes of a form posted
	maxKeyLabel = 300      // runes of a variable's description shown
)

// ErrKeyPagesFull is an attach that needs a page for keys while its
// session has maxKeyPages open: a model attaching package after package
// must not open listeners and pages without end.
var ErrKeyPagesFull = errors.New("too many pages asking for keys are open")

// ErrKeysRequired is wrapped by a KeysRequired.
var ErrKeysRequired = errors.New("the package needs keys the user has not given yet")

// KeysRequired is the failure of an attach of a package that requires
// environment variables the operator did not set: URL is ardgate's page
// where the user gives them. The next attach after the page is filled in
// launches the package with them. It names the variables, never a value.
type KeysRequired struct {
	URN  string
	Keys []string // the variables' names
	URL  string
	done <-chan struct{}
}

func (e *KeysRequired) Error() string {
	return fmt.Sprintf("%s needs %s, which the user gives on ardgate's page", e.URN, strings.Join(e.Keys, ", "))
}

func (e *KeysRequired) Unwrap() error { return ErrKeysRequired }

// StepURL is the page's URL, with its one-time token.
func (e *KeysRequired) StepURL() string { return e.URL }

// StepDone is closed once the page was filled in, expired, or its
// session ended.
func (e *KeysRequired) StepDone() <-chan struct{} { return e.done }

// Publisher is the publisher the package's URN names, "" when it is no
// URN: whom the user is asked to trust with the keys.
func (e *KeysRequired) Publisher() string { return publisherOf(e.URN) }

// keySpec is one variable a page asks for.
type keySpec struct {
	Name   string
	Label  string // the registry's description, cleaned; "" for none
	Secret bool   // typed in a password field
}

func newKeySpec(ev envVar) keySpec {
	return keySpec{Name: ev.Name, Label: guard.Text(ev.Description, maxKeyLabel), Secret: ev.IsSecret == nil || *ev.IsSecret}
}

// keyNames are the names of keys.
func keyNames(keys []keySpec) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Name
	}
	return out
}

// launchVars are variables that a launcher, a runtime, a build tool or
// the loader reads to run code or to choose what it trusts (NODE_OPTIONS,
// PERL5OPT, JAVA_TOOL_OPTIONS and LD_PRELOAD run code, PATH picks the
// programs, MAKEFLAGS and CC what a package's native build runs,
// NODE_EXTRA_CA_CERTS and SSL_CERT_FILE which servers are trusted, EDITOR
// and BROWSER what a tool opens, HOME, XDG_* and APPDATA where its
// settings are read from): a registry may require them, but the user is
// never asked for them on its behalf, as a value pasted there would
// change what runs. It is the only list of such names: guard's stdio
// policy has none, as it passes only the variables the operator names.
var launchVars = regexp.MustCompile(`(?i)^(` + strings.Join([]string{
	// the shell, the loader and where programs and files are found
	`PATH|PATHEXT|HOME|PWD|SHELL|TMPDIR|TEMP|TMP|BASH_ENV|ENV|IFS|PS4|CDPATH|GCONV_PATH|GLIBC_TUNABLES|HOSTALIASES|LOCPATH|NLSPATH`,
	`COMSPEC|SYSTEMROOT|USERPROFILE|APPDATA|LOCALAPPDATA|XDG_.*|LD_.*|DYLD_.*`,
	// runtimes and launchers
	`NODE_.*|NPM_.*|NPX_.*|COREPACK_.*|PYTHON.*|PIP_.*|UV_.*|VIRTUAL_ENV|PERL5.*|PERLLIB|RUBYOPT|RUBYLIB|GEM_.*|BUNDLE_.*`,
	`JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|CLASSPATH`,
	// a native build's tools and flags
	`MAKEFLAGS|CC|CXX|CFLAGS|CXXFLAGS|LDFLAGS|CPPFLAGS`,
	// whom TLS trusts, and where it writes its keys
	`SSL_CERT_.*|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|NODE_EXTRA_CA_CERTS|OPENSSL_CONF|OPENSSL_MODULES|SSLKEYLOGFILE|.*_PROXY`,
	// programs a tool starts for the user
	`BROWSER|EDITOR|VISUAL|PAGER|GIT_.*`,
}, "|") + `)$`)

// keyName reports whether the user may be asked for name.
func keyName(name string) bool { return !launchVars.MatchString(name) }

// keysFor is what the keys a user gives are for: an entry as one
// registry resolved it, and the package that entry launches. The same
// URN may resolve in several registries (the model names the registry,
// and an ARD registry chooses its identifiers), so a key given for one
// package must never reach another that requires the same variable.
type keysFor struct {
	URN, RegistryID string
	pkg             packageID
}

// id is the credentials store's id of variable name's value.
func (of keysFor) id(name string) string {
	return credstore.APIKeyID(of.URN, of.RegistryID, of.pkg.String(), name)
}

// keyring holds a session's key values by what they are for, in memory,
// for the session's life, and in the credentials store when the
// operator set one (Manager.Credentials), where they outlive the gateway
// and serve every session: the one place they are kept.
type keyring struct {
	mu    sync.Mutex
	byFor map[keysFor]map[string]string
	store *credstore.Store // nil: memory only
	log   *slog.Logger
}

// get is the values held for of, by name: the session's, or else the
// store's when it holds every one of names.
func (k *keyring) get(of keysFor, names []string) map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	held := k.byFor[of]
	if k.store == nil || !slices.ContainsFunc(names, func(n string) bool { _, ok := held[n]; return !ok }) {
		return held
	}
	saved := make(map[string]string, len(names))
	for _, n := range names {
		v, ok := k.store.Get(credstore.APIKey, of.id(n))
		if !ok {
			return held
		}
		saved[n] = string(v)
	}
	k.hold(of, saved)
	return saved
}

// put holds values for of, in place of any it held, and puts them in
// the store.
func (k *keyring) put(of keysFor, values map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hold(of, values)
	if k.store == nil {
		return
	}
	for name, v := range values {
		if err := k.store.Put(credstore.APIKey, of.id(name), []byte(v)); err != nil {
			// The value serves the session all the same; only a restart
			// asks the user again.
			k.log.Warn("an API key was not saved in the credentials store", "urn", of.URN, "variable", name, "err", err)
		}
	}
}

// hold keeps values for of in memory. The caller holds mu.
func (k *keyring) hold(of keysFor, values map[string]string) {
	if k.byFor == nil {
		k.byFor = map[keysFor]map[string]string{}
	}
	k.byFor[of] = values
}

// forget forgets failed, the values held for of that a start failed
// with, in the store too: each only while it is still the one held
// (compare and delete), as a page filled in since, in this session or
// another sharing the store, put a new value that has not failed.
func (k *keyring) forget(of keysFor, failed map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if maps.Equal(k.byFor[of], failed) {
		delete(k.byFor, of)
	}
	if k.store == nil {
		return
	}
	for n, v := range failed {
		if held, ok := k.store.Get(credstore.APIKey, of.id(n)); !ok || string(held) != v {
			continue
		}
		if err := k.store.Delete(credstore.APIKey, of.id(n)); err != nil {
			k.log.Warn("an API key was not deleted from the credentials store", "urn", of.URN, "variable", n, "err", err)
		}
	}
}

// kept says, on the page, how long values given are held: the store
// keeps them past the session's end, and the gateway's.
func (k *keyring) kept() string {
	if k.store == nil {
		return "for this session only"
	}
	return "for this session and later ones, encrypted in the gateway's credentials store, until a start fails with them"
}

// clear forgets the session's values; the store keeps its own.
func (k *keyring) clear() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.byFor = nil
}

// keyFlows are a session's pages asking for keys, by token and by what
// the keys are for, and the values given on them.
type keyFlows struct {
	mu      sync.Mutex
	byToken map[string]*keyFlow
	byFor   map[keysFor]*keyFlow // the page under way of each package
	closed  bool
	ring    keyring
}

// keyFlow is one page, for one package.
type keyFlow struct {
	of    keysFor
	keys  []keySpec
	token string // in the page's URL
	csrf  string // the form's hidden field
	url   string
	ln    *flowListener // a loopback listener opened for it; nil over HTTP
	timer *time.Timer   // forgets it at KeysFlowTTL
	done  chan struct{}
	ended bool // filled in, expired or its session ended: no POST is taken
}

// end closes f's done, once. The caller holds keyFlows.mu.
func (f *keyFlow) end() {
	if !f.ended {
		f.ended = true
		close(f.done)
	}
}

func (f *keyFlow) required() *KeysRequired {
	return &KeysRequired{URN: f.of.URN, Keys: keyNames(f.keys), URL: f.url, done: f.done}
}

// keyed is plan with the values the session holds for its keys in its
// environment, or a KeysRequired whose page asks for them.
func (s *Session) keyed(ctx context.Context, of keysFor, plan Plan) (Plan, error) {
	if len(plan.Keys) == 0 {
		return plan, nil
	}
	values := s.keys.ring.get(of, keyNames(plan.Keys))
	env := slices.Clip(plan.Env)
	for _, k := range plan.Keys {
		v, ok := values[k.Name]
		if !ok {
			return plan, s.keys.required(ctx, of, plan.Keys)
		}
		env = append(env, k.Name+"="+v)
	}
	plan.Env, plan.given = env, values
	return plan, nil
}

// keysFailed is err, the failed start of plan, saying that the keys the
// user gave for it are forgotten, so that the next attach asks for them
// anew: a key mistyped would fail every start of the session otherwise.
// They are kept unless the process itself failed within ctx's deadline
// (processFailed): a client that gave up, a first npx download past the
// start timeout, or a launcher not found says nothing against them.
func (s *Session) keysFailed(ctx context.Context, of keysFor, plan Plan, err error) error {
	if len(plan.given) == 0 || ctx.Err() != nil || !errors.As(err, new(processFailed)) {
		return err
	}
	s.keys.ring.forget(of, plan.given)
	return fmt.Errorf("%w; the keys the user gave for it are forgotten: attach it again to give them anew", err)
}

// required is the KeysRequired of the page under way for of, or of a
// new one.
func (k *keyFlows) required(ctx context.Context, of keysFor, keys []keySpec) error {
	urn := of.URN
	k.mu.Lock()
	defer k.mu.Unlock()
	switch f := k.byFor[of]; {
	case k.closed:
		return ErrSessionClosed
	case f != nil && !f.ended:
		return f.required()
	case len(k.byToken) == maxKeyPages:
		return fmt.Errorf("%s needs %s, and the session has %d pages asking for keys open already, each until it is filled in or for %s: %w",
			urn, strings.Join(keyNames(keys), ", "), maxKeyPages, KeysFlowTTL, ErrKeyPagesFull)
	}
	base, ln, err := flowBase(ctx)
	if err != nil {
		return fmt.Errorf("%s needs %s, and the page to ask for them could not open: %w", urn, strings.Join(keyNames(keys), ", "), err)
	}
	f := &keyFlow{of: of, keys: keys, token: rand.Text() + rand.Text(), csrf: rand.Text(), ln: ln, done: make(chan struct{})}
	f.url = base + KeysPath + f.token
	if k.byToken == nil {
		k.byToken, k.byFor = map[string]*keyFlow{}, map[keysFor]*keyFlow{}
	}
	k.byToken[f.token], k.byFor[of] = f, f
	f.timer = time.AfterFunc(KeysFlowTTL, func() { k.forget(f) })
	ln.serve(func(w http.ResponseWriter, r *http.Request) {
		if !rebound(w, r) {
			k.serve(w, r, tokenOf(r))
		}
	})
	return f.required()
}

// forget drops f, as its time is up: its token is refused from then on.
func (k *keyFlows) forget(f *keyFlow) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f.end()
	f.ln.close()
	if k.byToken[f.token] == f {
		delete(k.byToken, f.token)
	}
	if k.byFor[f.of] == f {
		delete(k.byFor, f.of)
	}
}

// close ends every page of the session and forgets its values.
func (k *keyFlows) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	for _, f := range k.byToken {
		f.timer.Stop()
		f.end()
		f.ln.close()
	}
	k.byToken, k.byFor = nil, nil
	k.ring.clear()
}

// lookup is the page of token, if the session holds it.
func (k *keyFlows) lookup(token string) *keyFlow {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.byToken[token]
}

func tokenOf(r *http.Request) string {
	token, _ := strings.CutPrefix(r.URL.Path, KeysPath)
	return token
}

// ServeKeys serves the pages that ask for keys on the gateway's own
// listener, at KeysPath followed by a page's token, in whichever session
// opened it. An unknown or expired token is 404.
func (m *Manager) ServeKeys(w http.ResponseWriter, r *http.Request) {
	if rebound(w, r) {
		return
	}
	token := tokenOf(r)
	for _, s := range m.Sessions() {
		if s.keys.lookup(token) != nil {
			s.keys.serve(w, r, token)
			return
		}
	}
	writePage(w, http.StatusNotFound, "This link is not valid: it is unknown, or has expired. Return to your client and attach the server again.")
}

// rebound refuses a request that came to a loopback address under a
// Host that is not a loopback name (guard.Rebound): a site's name made
// to resolve to 127.0.0.1, whose pages are not the page's origin. The
// one check of every keys page, on a loopback listener of its own or on
// the gateway's listener, as the gateway's /mcp has.
func rebound(w http.ResponseWriter, r *http.Request) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !guard.Rebound(r.Host, local) {
		return false
	}
	writePage(w, http.StatusMisdirectedRequest, "This page is served at a loopback address only, not under the name "+guard.Text(r.Host, 100)+".")
	return true
}

// serve answers a request for the page of token: the form, or the
// values posted.
func (k *keyFlows) serve(w http.ResponseWriter, r *http.Request, token string) {
	f := k.lookup(token)
	if f == nil {
		writePage(w, http.StatusNotFound, "This link is not valid: it is unknown, or has expired. Return to your client and attach the server again.")
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		k.mu.Lock()
		ended := f.ended
		k.mu.Unlock()
		if ended {
			writePage(w, http.StatusBadRequest, "This link was already used. Return to your client.")
			return
		}
		writeKeysForm(w, f, k.ring.kept())
	case http.MethodPost:
		k.submit(w, r, f)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writePage(w, http.StatusMethodNotAllowed, "This page takes GET and POST only.")
	}
}

// submit takes the values posted to f's page: from its own form only
// (sameOrigin, and the hidden field's token), once.
func (k *keyFlows) submit(w http.ResponseWriter, r *http.Request, f *keyFlow) {
	if !sameOrigin(r, f.url) {
		writePage(w, http.StatusForbidden, "This form takes what is posted from its own page only.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxKeysBody)
	if err := r.ParseForm(); err != nil {
		writePage(w, http.StatusBadRequest, "The form could not be read. Reload the page and fill it in again.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(f.csrf)) != 1 {
		writePage(w, http.StatusForbidden, "This form takes what is posted from its own page only. Reload the page and fill it in again.")
		return
	}
	values, err := formValues(f.keys, r.PostForm.Get)
	if err != nil {
		writePage(w, http.StatusBadRequest, err.Error()+" Go back and fill it in again.")
		return
	}
	k.mu.Lock()
	if f.ended || k.closed {
		k.mu.Unlock()
		writePage(w, http.StatusBadRequest, "This link was already used, or its session has ended. Return to your client.")
		return
	}
	k.ring.put(f.of, values)
	f.end()
	if k.byFor[f.of] == f {
		delete(k.byFor, f.of)
	}
	k.mu.Unlock()
	f.ln.shutdown()
	writePage(w, http.StatusOK, "ardgate holds the keys for "+f.of.URN+" "+k.ring.kept()+". You may close this page and return to your client.")
}

// formValues are the values of keys that get reads from a form: each
// given, bounded, and fit for an environment. An error names the
// variable, never what was typed.
func formValues(keys []keySpec, get func(string) string) (map[string]string, error) {
	values := make(map[string]string, len(keys))
	for _, key := range keys {
		v := get(key.Name)
		switch {
		case v == "":
			return nil, fmt.Errorf("%s is empty.", key.Name)
		case len(v) > maxKeyValue:
			return nil, fmt.Errorf("%s is longer than %d bytes.", key.Name, maxKeyValue)
		case strings.ContainsRune(v, 0):
			return nil, fmt.Errorf("%s holds a NUL character, which no environment variable can.", key.Name)
		}
		values[key.Name] = v
	}
	return values, nil
}

// sameOrigin reports whether a POST came from the page's own origin, as
// far as the browser says: Sec-Fetch-Site, when sent, is same-origin,
// and Origin, when sent, is the page's. A browser sends the real Origin
// of a form posted from the page itself under its Referrer-Policy
// same-origin, and "null" from another site's page (or from any page
// under no-referrer, which a browser over plain HTTP off loopback sends
// with no Sec-Fetch-Site: nothing then told the page's own post apart).
//
// The page's origin is that of the URL the user was given (page), not
// the request's: behind a proxy that ends TLS (public_url), the browser
// says https where the gateway was reached over http.
func sameOrigin(r *http.Request, page string) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	if site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(page)
	return err == nil && strings.EqualFold(origin, u.Scheme+"://"+u.Host)
}

// pageStyle is the only style of ardgate's pages, allowed by its hash.
const pageStyle = `body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:2em auto;padding:0 1em}` +
	`label{display:block;margin-top:1em;font-weight:600}input{width:100%;padding:.4em;box-sizing:border-box}` +
	`.d{font-weight:400;color:#444;margin:0}button{margin-top:1.5em;padding:.5em 1.5em}`

// pageCSP allows nothing but the style above and posting to the page's
// own origin; no page may frame it.
var pageCSP = func() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}()

// pageReferrerPolicy keeps a page's URL, with its token, from any
// other site, while a post from the page itself carries its real Origin
// (sameOrigin): under no-referrer it would carry "null".
const pageReferrerPolicy = "same-origin"

// pageHeaders are the headers of every page ardgate serves to a user's
// browser (the keys pages, an OAuth flow's callback page): nothing runs,
// nothing is loaded, nothing is cached, and no other site frames it or
// reads its URL.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", pageReferrerPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}

const pageHead = "<!doctype html><html lang=en><meta charset=utf-8><meta name=viewport content=\"width=device-width\"><title>ardgate</title><style>" + pageStyle + "</style>\n"

// writePage answers with a short page saying msg, with pageHeaders.
func writePage(w http.ResponseWriter, status int, msg string) {
	pageHeaders(w)
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s<p>%s</p>\n", pageHead, html.EscapeString(msg))
}

// writeKeysForm answers with f's form: a field per variable, labelled
// with its name and the registry's description, and the hidden token.
func writeKeysForm(w http.ResponseWriter, f *keyFlow, kept string) {
	pageHeaders(w)
	var b strings.Builder
	b.WriteString(pageHead)
	fmt.Fprintf(&b, "<h1>Keys for %s</h1>\n<p>For the %s package <b>%s</b> version %s, found in the registry %s. "+
		"Attaching this server needs the values below. ardgate passes them to that package's environment, "+
		"and holds them %s; they are not shown to the model, and no other package is given them.</p>\n<form method=post>\n<input type=hidden name=csrf value=\"%s\">\n",
		html.EscapeString(f.of.URN), html.EscapeString(f.of.pkg.RegistryType), html.EscapeString(f.of.pkg.Identifier), html.EscapeString(f.of.pkg.Version),
		html.EscapeString(f.of.RegistryID), html.EscapeString(kept), html.EscapeString(f.csrf))
	for i, k := range f.keys {
		typ := "text"
		if k.Secret {
			typ = "password"
		}
		fmt.Fprintf(&b, "<label for=k%d>%s</label>", i, html.EscapeString(k.Name))
		if k.Label != "" {
			fmt.Fprintf(&b, "<p class=d>%s</p>", html.EscapeString(k.Label))
		}
		fmt.Fprintf(&b, "<input id=k%d name=\"%s\" type=%s required maxlength=%d autocomplete=off spellcheck=false>\n", i, html.EscapeString(k.Name), typ, maxKeyValue)
	}
	b.WriteString("<button type=submit>Save</button>\n</form>\n")
	_, _ = w.Write([]byte(b.String()))
}
