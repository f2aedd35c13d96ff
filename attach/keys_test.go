package attach

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ardgate/ardgate/attach/credstore"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/browser"
)

// keyedManager serves one entry, a package that requires API_KEY.
func keyedManager(urn string) *Manager {
	data := []byte(`{"packages":[{"registryType":"npm","identifier":"@scope/srv","version":"1.0.0","transport":{"type":"stdio"},` +
		`"environmentVariables":[{"name":"API_KEY","isRequired":true,"description":"the key"}]}]}`)
	entry := registry.Entry{Identifier: urn, DisplayName: "keyed", Type: config.MediaMCPServerCard, Data: data}
	return &Manager{
		Registries:     []registry.Registry{registry.NewLocal("test", registry.NewIndex("test", []registry.Entry{entry}))},
		AllowTypes:     config.DefaultAllowAttachTypes,
		MaxAttachments: 5,
		CallTimeout:    10 * time.Second,
		StartTimeout:   10 * time.Second,
		Stdio:          guard.Stdio{AllowFrom: []string{"test"}, Launchers: []string{"npx"}, LookupEnv: func(string) (string, bool) { return "", false }},
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// keyedFor is what keys given for keyedManager's entry are for.
func keyedFor(urn string) keysFor {
	return keysFor{URN: urn, RegistryID: "test", pkg: packageID{RegistryType: "npm", Identifier: "@scope/srv", Version: "1.0.0"}}
}

// giveKeys fills in the page at raw with values, as its form would.
func giveKeys(t *testing.T, raw string, values url.Values) {
	t.Helper()
	resp, err := http.Get(raw)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csrf := csrfOfPage.FindStringSubmatch(string(page))
	if resp.StatusCode != http.StatusOK || csrf == nil {
		t.Fatalf("the page: HTTP %d %s", resp.StatusCode, page)
	}
	values.Set("csrf", csrf[1])
	if resp, err = http.PostForm(raw, values); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the post: HTTP %d", resp.StatusCode)
	}
}

var csrfOfPage = regexp.MustCompile(`name=csrf value="([^"]+)"`)

// A page belongs to the session that opened it, on a loopback listener
// of its own: filling it in ends its step and gives that session alone
// the value, which the next plan of the URN carries in its environment.
// Another session's attach opens another page, and a session's end
// closes its page's listener and ends its step.
func TestKeysPageOfOneSession(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const urn = "urn:air:ardgate.test:mcp:keyed"
	m := keyedManager(urn)
	defer m.Shutdown()
	one, two := m.NewSession("one"), m.NewSession("two")
	stepOf := func(s *Session) *KeysRequired {
		t.Helper()
		_, _, err := s.Attach(context.Background(), Request{URN: urn})
		var kr *KeysRequired
		if !errors.As(err, &kr) || !errors.Is(err, ErrKeysRequired) || !slices.Equal(kr.Keys, []string{"API_KEY"}) {
			t.Fatalf("attach of a package that needs a key: %v", err)
		}
		return kr
	}
	first, second := stepOf(one), stepOf(two)
	var step UserStep = first
	if step.StepURL() == second.StepURL() {
		t.Fatal("two sessions share a page")
	}
	// A name a site made resolve to 127.0.0.1 is not the page's.
	req, _ := http.NewRequest(http.MethodGet, first.URL, nil)
	req.Host = "rebind.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("the page under a rebound Host: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	giveKeys(t, first.URL, url.Values{"API_KEY": {"k-1"}})
	select {
	case <-first.StepDone():
	default:
		t.Fatal("the step is not done once its page was filled in")
	}
	plan, err := one.keyed(context.Background(), keyedFor(urn), Plan{Keys: []keySpec{{Name: "API_KEY"}}})
	if err != nil || !slices.Contains(plan.Env, "API_KEY=k-1") {
		t.Fatalf("the plan once the key was given: %v %v", plan.Env, err)
	}
	if _, err := two.keyed(context.Background(), keyedFor(urn), Plan{Keys: []keySpec{{Name: "API_KEY"}}}); !errors.Is(err, ErrKeysRequired) {
		t.Fatalf("the other session: %v, want it to wait for its own page", err)
	}
	// A start that fails with the keys given forgets them: the next
	// attach opens a new page, as a key mistyped fails every start.
	if err := one.keysFailed(context.Background(), keyedFor(urn), plan, processFailed{ErrStartFailed}); !errors.Is(err, ErrStartFailed) || !strings.Contains(err.Error(), "forgotten") || strings.Contains(err.Error(), "k-1") {
		t.Fatalf("a failed start with the keys: %v", err)
	}
	var again *KeysRequired
	if _, err := one.keyed(context.Background(), keyedFor(urn), plan); !errors.As(err, &again) || again.URL == first.URL {
		t.Fatalf("the attach after a failed start: %v, want a new page", err)
	}
	host := strings.TrimPrefix(second.URL, "http://")
	host = host[:strings.IndexByte(host, '/')]
	two.Close()
	<-second.StepDone()
	if c, err := net.Dial("tcp", host); err == nil {
		c.Close()
		t.Fatal("the page's listener outlived its session")
	}
}

// With a credentials store, the keys a user gives outlive the gateway: a
// gateway that opens the store anew launches the package with them, no
// page asked; the file holds no value in the clear. A start that fails
// with them deletes them from the store too.
func TestKeysInTheStore(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const urn, secret = "urn:air:ardgate.test:mcp:keyed", "k-stored-9f2c"
	path, key := filepath.Join(t.TempDir(), "credentials"), make([]byte, credstore.KeySize)
	_, _ = rand.Read(key)
	session := func() *Session {
		t.Helper()
		store, err := credstore.Open(path, key)
		if err != nil {
			t.Fatal(err)
		}
		m := keyedManager(urn)
		m.Credentials = store
		t.Cleanup(m.Shutdown)
		return m.NewSession("s")
	}
	plan := Plan{Keys: []keySpec{{Name: "API_KEY"}}}
	var kr *KeysRequired
	if _, err := session().keyed(context.Background(), keyedFor(urn), plan); !errors.As(err, &kr) {
		t.Fatalf("a first attach: %v, want a page", err)
	}
	giveKeys(t, kr.URL, url.Values{"API_KEY": {secret}})
	if data, err := os.ReadFile(path); err != nil || bytes.Contains(data, []byte(secret)) {
		t.Fatalf("the store's file: %v, or holds the key in the clear", err)
	}
	restarted := session()
	keyed, err := restarted.keyed(context.Background(), keyedFor(urn), plan)
	if err != nil || !slices.Contains(keyed.Env, "API_KEY="+secret) {
		t.Fatalf("after a restart: %v %v, want the stored key", keyed.Env, err)
	}
	_ = restarted.keysFailed(context.Background(), keyedFor(urn), keyed, processFailed{ErrStartFailed})
	if _, err := session().keyed(context.Background(), keyedFor(urn), plan); !errors.Is(err, ErrKeysRequired) {
		t.Fatalf("after a failed start: %v, want a page again", err)
	}
}

// The keys a start failed with are forgotten only when the process
// itself failed within the start's deadline, and deleted from the store
// only while the store still holds the value that failed.
func TestKeysForgottenWhenTheProcessFailed(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const urn = "urn:air:ardgate.test:mcp:keyed"
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name      string
		ctx       context.Context
		err       error
		newer     string // a value put in the store since the start
		forgotten bool
	}{
		{"the process failed", context.Background(), processFailed{ErrStartFailed}, "", true},
		{"the client gave up", canceled, processFailed{ErrStartFailed}, "", false},
		{"no launcher", context.Background(), ErrStartFailed, "", false},
		{"a newer value in the store", context.Background(), processFailed{ErrStartFailed}, "k-newer", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, key := filepath.Join(t.TempDir(), "credentials"), make([]byte, credstore.KeySize)
			_, _ = rand.Read(key)
			store, err := credstore.Open(path, key)
			if err != nil {
				t.Fatal(err)
			}
			m := keyedManager(urn)
			m.Credentials = store
			defer m.Shutdown()
			s := m.NewSession("s")
			of, plan := keyedFor(urn), Plan{Keys: []keySpec{{Name: "API_KEY"}}}
			s.keys.ring.put(of, map[string]string{"API_KEY": "k-failed"})
			keyed, err := s.keyed(context.Background(), of, plan)
			if err != nil {
				t.Fatal(err)
			}
			if c.newer != "" {
				_ = store.Put(credstore.APIKey, of.id("API_KEY"), []byte(c.newer))
			}
			err = s.keysFailed(c.ctx, of, keyed, fmt.Errorf("%w: context", c.err))
			if got := strings.Contains(err.Error(), "forgotten"); got != c.forgotten {
				t.Errorf("the failure %q; want forgotten %v", err, c.forgotten)
			}
			_, kept := s.keys.ring.byFor[of]
			stored, _ := store.Get(credstore.APIKey, of.id("API_KEY"))
			wantStored := map[bool]string{false: "k-failed", true: ""}[c.forgotten]
			if c.newer != "" {
				wantStored = c.newer
			}
			if kept == c.forgotten || string(stored) != wantStored {
				t.Errorf("held %v, stored %q; want held %v, stored %q", kept, stored, !c.forgotten, wantStored)
			}
		})
	}
}

// Keys given for a package are for that package alone: the same URN
// resolved in another registry, whose entry runs another package that
// requires the same variable, is asked for its own, on a page that
// names that package, in the session as in the store.
func TestKeysForOnePackage(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	// No npx to find: were the other package launched, it must not
	// reach a package registry.
	t.Setenv("PATH", t.TempDir())
	const urn = "urn:air:ardgate.test:mcp:keyed"
	m := keyedManager(urn)
	evil := registry.Entry{Identifier: urn, DisplayName: "keyed", Type: config.MediaMCPServerCard, Data: []byte(`{"packages":[{"registryType":"npm",` +
		`"identifier":"evil-pkg","version":"6.6.6","transport":{"type":"stdio"},"environmentVariables":[{"name":"API_KEY","isRequired":true}]}]}`)}
	m.Registries = append(m.Registries, registry.NewLocal("evil", registry.NewIndex("evil", []registry.Entry{evil})))
	m.Stdio.AllowFrom = append(m.Stdio.AllowFrom, "evil")
	path, key := filepath.Join(t.TempDir(), "credentials"), make([]byte, credstore.KeySize)
	_, _ = rand.Read(key)
	store, err := credstore.Open(path, key)
	if err != nil {
		t.Fatal(err)
	}
	m.Credentials = store
	defer m.Shutdown()
	s := m.NewSession("s")
	var given *KeysRequired
	if _, _, err := s.Attach(context.Background(), Request{URN: urn, RegistryID: "test"}); !errors.As(err, &given) {
		t.Fatalf("the first attach: %v", err)
	}
	giveKeys(t, given.URL, url.Values{"API_KEY": {"k-for-srv"}})
	var other *KeysRequired
	if _, _, err := s.Attach(context.Background(), Request{URN: urn, RegistryID: "evil"}); !errors.As(err, &other) || other.URL == given.URL {
		t.Fatalf("the same URN in another registry: %v, want a page of its own", err)
	}
	resp, err := http.Get(other.URL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "<b>evil-pkg</b> version 6.6.6, found in the registry evil") {
		t.Errorf("the page does not say which package it is for:\n%s", page)
	}
	if _, ok := store.Get(credstore.APIKey, credstore.APIKeyID(urn, "evil", "npm evil-pkg 6.6.6", "API_KEY")); ok {
		t.Error("the store gives the other package the key")
	}
	if v, ok := store.Get(credstore.APIKey, keyedFor(urn).id("API_KEY")); !ok || string(v) != "k-for-srv" {
		t.Errorf("the store's key of the package it was given for: %q %v", v, ok)
	}
}

// The user is asked for a package's key, never for a variable that
// runs code or changes what is trusted from a value typed.
func TestKeyName(t *testing.T) {
	for _, c := range []struct {
		name string
		ask  bool
	}{
		{"API_KEY", true}, {"GITHUB_TOKEN", true}, {"OPENAI_API_KEY", true}, {"CCACHE_KEY", true}, {"PAGERDUTY_TOKEN", true},
		{"MY_EDITOR_ID", true}, {"CC_API_KEY", true},
		{"PATH", false}, {"LD_PRELOAD", false}, {"NODE_OPTIONS", false}, {"node_options", false}, {"PYTHONPATH", false},
		{"PERL5OPT", false}, {"PERL5LIB", false}, {"RUBYOPT", false}, {"RUBYLIB", false}, {"MAKEFLAGS", false},
		{"CC", false}, {"CXX", false}, {"CFLAGS", false}, {"CXXFLAGS", false}, {"LDFLAGS", false},
		{"JAVA_TOOL_OPTIONS", false}, {"_JAVA_OPTIONS", false}, {"JDK_JAVA_OPTIONS", false}, {"GLIBC_TUNABLES", false},
		{"HOSTALIASES", false}, {"LOCPATH", false}, {"NLSPATH", false}, {"XDG_CONFIG_HOME", false}, {"XDG_DATA_DIRS", false},
		{"USERPROFILE", false}, {"APPDATA", false}, {"LOCALAPPDATA", false}, {"REQUESTS_CA_BUNDLE", false},
		{"CURL_CA_BUNDLE", false}, {"SSL_CERT_FILE", false}, {"SSL_CERT_DIR", false}, {"NODE_EXTRA_CA_CERTS", false},
		{"BROWSER", false}, {"EDITOR", false}, {"VISUAL", false}, {"PAGER", false}, {"GIT_SSH_COMMAND", false},
		{"GIT_CONFIG_GLOBAL", false}, {"HTTPS_PROXY", false},
	} {
		if got := keyName(c.name); got != c.ask {
			t.Errorf("keyName(%s) = %v, want %v", c.name, got, c.ask)
		}
	}
}

// A session with every page it may open open says so, not that its
// attachments are at their cap.
func TestKeyPagesFull(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := keyedManager("urn:air:ardgate.test:mcp:keyed")
	defer m.Shutdown()
	s := m.NewSession("s")
	ctx := context.WithValue(context.Background(), callbackBaseKey{}, "http://127.0.0.1:9")
	keys := []keySpec{{Name: "API_KEY"}}
	for i := range maxKeyPages {
		if err := s.keys.required(ctx, keysFor{URN: fmt.Sprintf("urn:air:ardgate.test:mcp:k%d", i)}, keys); !errors.Is(err, ErrKeysRequired) {
			t.Fatalf("page %d: %v", i, err)
		}
	}
	err := s.keys.required(ctx, keysFor{URN: "urn:air:ardgate.test:mcp:one-more"}, keys)
	if !errors.Is(err, ErrKeyPagesFull) || errors.Is(err, ErrCapReached) || strings.Contains(err.Error(), "attachment cap") {
		t.Fatalf("one page more: %v", err)
	}
}

// The page says how long the values are held: for the session, or past
// it in the credentials store.
func TestKeysPageSaysHowLongKept(t *testing.T) {
	f := &keyFlow{of: keyedFor("urn:air:ardgate.test:mcp:keyed"), keys: []keySpec{{Name: "API_KEY"}}, csrf: "c"}
	for _, c := range []struct {
		name        string
		store       *credstore.Store
		want, wrong string
	}{
		{"memory", nil, "for this session only", "credentials store"},
		{"a store", &credstore.Store{}, "for this session and later ones, encrypted in the gateway&#39;s credentials store", "session only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ring := keyring{store: c.store}
			w := httptest.NewRecorder()
			writeKeysForm(w, f, ring.kept())
			if body := w.Body.String(); !strings.Contains(body, c.want) || strings.Contains(body, c.wrong) {
				t.Errorf("the page says:\n%s", body)
			}
		})
	}
}

// Every page ardgate serves to a user's browser has the same headers:
// the keys pages and an OAuth flow's callback page alike.
func TestPageHeaders(t *testing.T) {
	f := &keyFlow{of: keyedFor("urn:air:ardgate.test:mcp:keyed"), keys: []keySpec{{Name: "API_KEY"}}, csrf: "c"}
	for _, c := range []struct {
		name  string
		write func(http.ResponseWriter)
	}{
		{"the keys form", func(w http.ResponseWriter) { writeKeysForm(w, f, "for this session only") }},
		{"a keys page", func(w http.ResponseWriter) { writePage(w, http.StatusNotFound, "not valid") }},
		{"an OAuth callback", func(w http.ResponseWriter) { WriteCallbackPage(w, "urn:air:x:mcp:y", nil) }},
		{"a refused OAuth callback", func(w http.ResponseWriter) { WriteCallbackPage(w, "", ErrUnknownState) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			c.write(w)
			h := w.Result().Header
			for name, want := range map[string]string{
				"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "X-Frame-Options": "DENY",
				"X-Content-Type-Options": "nosniff", "Referrer-Policy": pageReferrerPolicy,
			} {
				if got := h.Get(name); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
		})
	}
}

// Chromium, as the user, posts the form with the page's own origin in
// Origin, which sameOrigin needs where no Sec-Fetch-Site comes (plain
// HTTP off loopback): the page's Referrer-Policy has it send that, and
// not "null".
func TestKeysPostOrigin(t *testing.T) {
	browser.Need(t)
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const urn = "urn:air:ardgate.test:mcp:keyed"
	m := keyedManager(urn)
	defer m.Shutdown()
	s := m.NewSession("s")
	origins := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case origins <- r.Header.Get("Origin"):
			default:
			}
		}
		m.ServeKeys(w, r)
	}))
	defer srv.Close()
	ctx := context.WithValue(context.Background(), callbackBaseKey{}, srv.URL)
	var kr *KeysRequired
	if _, err := s.keyed(ctx, keyedFor(urn), Plan{Keys: []keySpec{{Name: "API_KEY"}}}); !errors.As(err, &kr) {
		t.Fatalf("the attach: %v", err)
	}
	said, err := browser.FillForm(context.Background(), t.TempDir(), kr.URL, map[string]string{"API_KEY": "k-from-chromium"})
	if err != nil || !strings.Contains(said, "return to your client") {
		t.Fatalf("the page after the post says %q (%v)", said, err)
	}
	if got := <-origins; got != srv.URL {
		t.Errorf("the post's Origin %q, want the page's own %q", got, srv.URL)
	}
}

// A post is taken from the page's own origin: what the browser says of
// where it came from is checked, when it says it.
func TestSameOrigin(t *testing.T) {
	for _, c := range []struct {
		name         string
		origin, site string
		want         bool
	}{
		{"a client that says nothing", "", "", true},
		{"the page's origin", "http://127.0.0.1:9", "same-origin", true},
		{"null, though same-origin", "null", "same-origin", false},
		{"null from elsewhere", "null", "cross-site", false},
		{"null, nothing more", "null", "", false},
		{"another site", "http://evil.example", "", false},
		{"another port", "http://127.0.0.1:10", "same-origin", false},
		{"same-site", "", "same-site", false},
		{"typed by the user", "", "none", false},
		{"the page's origin behind a proxy", "https://gw.example", "same-origin", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/credentials/x", nil)
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			if c.site != "" {
				r.Header.Set("Sec-Fetch-Site", c.site)
			}
			page := "http://127.0.0.1:9/credentials/x"
			if strings.HasPrefix(c.origin, "https://") {
				page = "https://gw.example/credentials/x" // given under public_url, reached over http
			}
			if got := sameOrigin(r, page); got != c.want {
				t.Errorf("sameOrigin = %v, want %v", got, c.want)
			}
		})
	}
}

// What a form gives is taken when each value is there, bounded and fit
// for an environment; a refusal names the variable, not the value.
func TestFormValues(t *testing.T) {
	keys := []keySpec{{Name: "A"}, {Name: "B"}}
	for _, c := range []struct {
		name    string
		form    map[string]string
		wantErr string
	}{
		{"both", map[string]string{"A": "a-secret", "B": "b"}, ""},
		{"one missing", map[string]string{"A": "a-secret"}, "B is empty"},
		{"too long", map[string]string{"A": strings.Repeat("x", maxKeyValue+1), "B": "b"}, "A is longer"},
		{"a NUL", map[string]string{"A": "a-secret\x00", "B": "b"}, "A holds a NUL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := formValues(keys, func(k string) string { return c.form[k] })
			switch {
			case c.wantErr == "" && (err != nil || got["A"] != c.form["A"] || got["B"] != c.form["B"]):
				t.Fatalf("values %v, %v", got, err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("err %v, want %q", err, c.wantErr)
			case err != nil && strings.Contains(err.Error(), "a-secret"):
				t.Fatalf("the refusal says the value: %v", err)
			}
		})
	}
}
