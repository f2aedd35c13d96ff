package config_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/config"
)

// writeConfig writes a config file into a fresh temporary directory and
// returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ardgate.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// problems returns the individual problems of a *config.Error, failing the
// test if err is not one.
func problems(t *testing.T, err error) []string {
	t.Helper()
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T (%v), want *config.Error", err, err)
	}
	var out []string
	for _, p := range ce.Problems {
		out = append(out, p.Error())
	}
	return out
}

// hasField reports whether some problem is about exactly that field path.
// hasField tells whether a problem names field, and the variable that set
// it if one did.
func hasField(probs []string, field string) bool {
	return slices.ContainsFunc(probs, func(p string) bool {
		return strings.HasPrefix(p, field+": ") || strings.HasPrefix(p, field+" (from ARDGATE_")
	})
}

func ids(rs []config.Registry) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestLoadDefaults(t *testing.T) {
	for _, environ := range [][]string{nil, {}, {"HOME=/home/x", "PATH=/bin", "NOT_ARDGATE_TRANSPORT=http"}} {
		c, err := config.Load(config.Flags{}, environ)
		if err != nil {
			t.Fatalf("Load(%q): %v", environ, err)
		}
		if c.Transport != config.TransportStdio || c.Addr != config.DefaultAddr || c.LogLevel != "info" || c.LogFormat != "text" {
			t.Errorf("defaults: transport=%q addr=%q level=%q format=%q", c.Transport, c.Addr, c.LogLevel, c.LogFormat)
		}
		if c.Consent != config.ConsentRemoteRegistries {
			t.Errorf("consent = %q, want %q", c.Consent, config.ConsentRemoteRegistries)
		}
		if c.File != "" || c.AuthToken != "" || c.ARDRegistryToken != "" || c.AllowLocalURLs {
			t.Errorf("defaults: file=%q auth=%q ardtoken=%q allowlocal=%v", c.File, c.AuthToken, c.ARDRegistryToken, c.AllowLocalURLs)
		}
		want := []config.Registry{{ID: config.BuiltinRegistryID, Kind: config.KindCatalog}}
		if !slices.EqualFunc(c.Registries, want, registryEqual) {
			t.Errorf("registries = %+v, want only builtin", c.Registries)
		}
		if !slices.Equal(c.Stdio.AllowFrom, []string{config.BuiltinRegistryID}) {
			t.Errorf("stdio.allow_from = %q, want [builtin]", c.Stdio.AllowFrom)
		}
		if !slices.Equal(c.Stdio.Launchers, config.DefaultLaunchers) || len(c.Stdio.Env) != 0 {
			t.Errorf("stdio = %+v", c.Stdio)
		}
		if c.MaxAttachments != config.DefaultMaxAttachments || c.CallTimeout != config.DefaultCallTimeout ||
			c.MaxResultBytes != config.DefaultMaxResultBytes || c.Limits != config.DefaultLimits || c.MaxSessions != config.DefaultMaxSessions ||
			c.SessionIdleTimeout != config.DefaultSessionIdle || c.MaxCallTime != config.DefaultMaxCallTime {
			t.Errorf("numeric defaults: max=%d timeout=%s max_call_time=%s result=%d limits=%+v sessions=%d idle=%s", c.MaxAttachments, c.CallTimeout, c.MaxCallTime,
				c.MaxResultBytes, c.Limits, c.MaxSessions, c.SessionIdleTimeout)
		}
		if !slices.Equal(c.AllowAttachTypes, config.DefaultAllowAttachTypes) || len(c.RequireTrust) != 0 {
			t.Errorf("types=%q trust=%q", c.AllowAttachTypes, c.RequireTrust)
		}
		if len(c.Servers) != 0 || len(c.Agents) != 0 {
			t.Errorf("servers=%v agents=%v", c.Servers, c.Agents)
		}
	}
}

func registryEqual(a, b config.Registry) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.Path == b.Path && a.URL == b.URL &&
		a.Federation == b.Federation && a.TokenEnv == b.TokenEnv && slices.Equal(a.Hosts, b.Hosts)
}

// TestLoadPrecedence checks flags > env > file > defaults for every value
// that all three sources can set.
func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ardgate.json")
	fileBody := `{"transport": "http", "addr": "127.0.0.1:1001", "log_level": "debug",
		"log_format": "json", "catalogs": ["/file/fromfile.json"]}`
	if err := os.WriteFile(path, []byte(fileBody), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"ARDGATE_TRANSPORT=stdio", "ARDGATE_ADDR=127.0.0.1:1002", "ARDGATE_LOG_LEVEL=warn",
		"ARDGATE_LOG_FORMAT=text", "ARDGATE_CATALOGS=/env/one.json,/env/two.json",
	}
	flags := config.Flags{Transport: "http", Addr: "127.0.0.1:1003", LogLevel: "error", LogFormat: "json",
		Catalogs: []string{"/flag/fromflag.json"}}

	type want struct {
		transport, addr, level, format string
		catalogs                       []string
	}
	tests := []struct {
		name  string
		flags config.Flags
		env   []string
		file  bool
		want  want
	}{
		{"defaults", config.Flags{}, nil, false,
			want{"stdio", config.DefaultAddr, "info", "text", nil}},
		{"file", config.Flags{}, nil, true,
			want{"http", "127.0.0.1:1001", "debug", "json", []string{"/file/fromfile.json"}}},
		{"env over file", config.Flags{}, env, true,
			want{"stdio", "127.0.0.1:1002", "warn", "text", []string{"/env/one.json", "/env/two.json"}}},
		{"env over defaults", config.Flags{}, env, false,
			want{"stdio", "127.0.0.1:1002", "warn", "text", []string{"/env/one.json", "/env/two.json"}}},
		{"flags over env and file", flags, env, true,
			want{"http", "127.0.0.1:1003", "error", "json", []string{"/flag/fromflag.json"}}},
		{"flags over file", flags, nil, true,
			want{"http", "127.0.0.1:1003", "error", "json", []string{"/flag/fromflag.json"}}},
		{"empty env values fall through", config.Flags{}, []string{"ARDGATE_TRANSPORT=", "ARDGATE_ADDR=", "ARDGATE_LOG_LEVEL="}, true,
			want{"http", "127.0.0.1:1001", "debug", "json", []string{"/file/fromfile.json"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := tt.flags
			if tt.file {
				fl.Config = path
			}
			c, err := config.Load(fl, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			got := want{c.Transport, c.Addr, c.LogLevel, c.LogFormat, nil}
			for _, r := range c.Registries[1:] {
				if r.Kind != config.KindCatalog {
					t.Errorf("catalog registry %+v has kind %q", r, r.Kind)
				}
				got.catalogs = append(got.catalogs, r.Path)
			}
			if got.transport != tt.want.transport || got.addr != tt.want.addr || got.level != tt.want.level ||
				got.format != tt.want.format || !slices.Equal(got.catalogs, tt.want.catalogs) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if c.Registries[0].ID != config.BuiltinRegistryID {
				t.Errorf("first registry = %+v, want builtin", c.Registries[0])
			}
		})
	}
}

func TestLoadConfigFileNamedByEnvAndFlag(t *testing.T) {
	envFile := writeConfig(t, `{"addr": "127.0.0.1:2001"}`)
	flagFile := writeConfig(t, `{"addr": "127.0.0.1:2002"}`)
	tests := []struct {
		name     string
		flags    config.Flags
		env      []string
		wantFile string
		wantAddr string
	}{
		{"ARDGATE_CONFIG", config.Flags{}, []string{"ARDGATE_CONFIG=" + envFile}, envFile, "127.0.0.1:2001"},
		{"--config", config.Flags{Config: flagFile}, nil, flagFile, "127.0.0.1:2002"},
		{"--config over ARDGATE_CONFIG", config.Flags{Config: flagFile}, []string{"ARDGATE_CONFIG=" + envFile}, flagFile, "127.0.0.1:2002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(tt.flags, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.File != tt.wantFile || c.Addr != tt.wantAddr {
				t.Errorf("file=%q addr=%q, want %q %q", c.File, c.Addr, tt.wantFile, tt.wantAddr)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope.json")
		_, err := config.Load(config.Flags{}, []string{"ARDGATE_CONFIG=" + missing})
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err = %v, want one wrapping os.ErrNotExist", err)
		}
	})
}

func TestLoadEnvOverridesFile(t *testing.T) {
	path := writeConfig(t, `{"max_attachments": 7, "allow_local_urls": true, "require_trust": ["soc2"]}`)
	tests := []struct {
		name       string
		env        []string
		wantMax    int
		wantLocal  bool
		wantTrust  []string
		wantAuth   string
		wantARDTok string
	}{
		{"file only", nil, 7, true, []string{"soc2"}, "", ""},
		{"env max", []string{"ARDGATE_MAX_ATTACHMENTS=3"}, 3, true, []string{"soc2"}, "", ""},
		{"env allow_local false beats file true", []string{"ARDGATE_ALLOW_LOCAL_URLS=false"}, 7, false, []string{"soc2"}, "", ""},
		{"env require_trust list", []string{"ARDGATE_REQUIRE_TRUST=iso27001,slsa"}, 7, true, []string{"iso27001", "slsa"}, "", ""},
		{"tokens", []string{"ARDGATE_AUTH_TOKEN=s3cret", "ARD_REGISTRY_TOKEN=reg-tok"}, 7, true, []string{"soc2"}, "s3cret", "reg-tok"},
		{"ARD_REGISTRY_TOKEN has no prefix", []string{"ARDGATE_ARD_REGISTRY_TOKEN=wrong"}, 7, true, []string{"soc2"}, "", ""},
		{"token value with =", []string{"ARD_REGISTRY_TOKEN=a=b=c"}, 7, true, []string{"soc2"}, "", "a=b=c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(config.Flags{Config: path}, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.MaxAttachments != tt.wantMax || c.AllowLocalURLs != tt.wantLocal || !slices.Equal(c.RequireTrust, tt.wantTrust) ||
				c.AuthToken != tt.wantAuth || c.ARDRegistryToken != tt.wantARDTok {
				t.Errorf("max=%d local=%v trust=%q auth=%q ardtok=%q", c.MaxAttachments, c.AllowLocalURLs, c.RequireTrust, c.AuthToken, c.ARDRegistryToken)
			}
		})
	}

	t.Run("session_idle_timeout: env beats file", func(t *testing.T) {
		path := writeConfig(t, `{"session_idle_timeout": "5m"}`)
		for _, tc := range []struct {
			env  []string
			want time.Duration
		}{{nil, 5 * time.Minute}, {[]string{"ARDGATE_SESSION_IDLE_TIMEOUT=90s"}, 90 * time.Second}} {
			c, err := config.Load(config.Flags{Config: path}, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.SessionIdleTimeout != tc.want {
				t.Errorf("env %q: session_idle_timeout %s, want %s", tc.env, c.SessionIdleTimeout, tc.want)
			}
		}
	})

	// An IDE sets the gateway's environment, not its file: the variables
	// passed on to servers can be named there, and beat the file's.
	t.Run("stdio.env: env beats file", func(t *testing.T) {
		path := writeConfig(t, `{"stdio": {"env": ["FROM_FILE"]}}`)
		for _, tc := range []struct {
			flags config.Flags
			env   []string
			want  []string
		}{
			{config.Flags{Config: path}, nil, []string{"FROM_FILE"}},
			{config.Flags{Config: path}, []string{"ARDGATE_STDIO_ENV=MEMORY_FILE_PATH, GITHUB_TOKEN"}, []string{"MEMORY_FILE_PATH", "GITHUB_TOKEN"}},
			{config.Flags{}, []string{"ARDGATE_STDIO_ENV=MEMORY_FILE_PATH"}, []string{"MEMORY_FILE_PATH"}},
		} {
			c, err := config.Load(tc.flags, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Stdio.Env, tc.want) {
				t.Errorf("env %q: stdio.env %q, want %q", tc.env, c.Stdio.Env, tc.want)
			}
		}
		_, err := config.Load(config.Flags{}, []string{"ARDGATE_STDIO_ENV=GOOD,not a name"})
		if err == nil || !strings.Contains(err.Error(), "stdio.env[1] (from ARDGATE_STDIO_ENV)") {
			t.Errorf("a bad name in ARDGATE_STDIO_ENV: %v", err)
		}
	})

	// Each process of a launched server is held to 8 GiB of memory unless
	// the file or the environment says otherwise; 0 is no limit.
	t.Run("stdio.memory_mib", func(t *testing.T) {
		path := writeConfig(t, `{"stdio": {"memory_mib": 0, "cpu_seconds": 60}}`)
		other := writeConfig(t, `{"stdio": {"allow_from": []}}`)
		for _, tc := range []struct {
			flags config.Flags
			env   []string
			want  int
		}{
			{config.Flags{}, nil, config.DefaultStdioMemoryMiB},
			{config.Flags{Config: other}, nil, config.DefaultStdioMemoryMiB},
			{config.Flags{Config: path}, nil, 0},
			{config.Flags{Config: path}, []string{"ARDGATE_STDIO_MEMORY_MIB=4096"}, 4096},
			{config.Flags{}, []string{"ARDGATE_STDIO_MEMORY_MIB=0"}, 0},
		} {
			c, err := config.Load(tc.flags, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Stdio.MemoryMiB != tc.want {
				t.Errorf("%s, env %q: stdio.memory_mib %d, want %d", tc.flags.Config, tc.env, c.Stdio.MemoryMiB, tc.want)
			}
			if tc.flags.Config == path && c.Stdio.CPUSeconds != 60 {
				t.Errorf("stdio.cpu_seconds %d", c.Stdio.CPUSeconds)
			}
		}
		_, err := config.Load(config.Flags{}, []string{"ARDGATE_STDIO_MEMORY_MIB=10"})
		if err == nil || !strings.Contains(err.Error(), "stdio.memory_mib (from ARDGATE_STDIO_MEMORY_MIB): 10 MiB is too little") {
			t.Errorf("too little memory in ARDGATE_STDIO_MEMORY_MIB: %v", err)
		}
	})

	t.Run("env allow_local true without file", func(t *testing.T) {
		c, err := config.Load(config.Flags{}, []string{"ARDGATE_ALLOW_LOCAL_URLS=true", "ARDGATE_MAX_ATTACHMENTS=100"})
		if err != nil {
			t.Fatal(err)
		}
		if !c.AllowLocalURLs || c.MaxAttachments != 100 {
			t.Errorf("local=%v max=%d", c.AllowLocalURLs, c.MaxAttachments)
		}
	})
}

// The fast path is on unless the file or the environment turns it off;
// the environment beats the file.
func TestLoadFastPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	off, on := filepath.Join(dir, "off.json"), filepath.Join(dir, "on.json")
	for path, body := range map[string]string{off: `{"fast_path": false}`, on: `{"fast_path": true}`} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file string
		env  []string
		want bool
	}{
		{"", nil, true},
		{off, nil, false},
		{on, nil, true},
		{"", []string{"ARDGATE_FAST_PATH=off"}, false},
		{"", []string{"ARDGATE_FAST_PATH=OFF"}, false},
		{"", []string{"ARDGATE_FAST_PATH=0"}, false},
		{on, []string{"ARDGATE_FAST_PATH=false"}, false},
		{off, []string{"ARDGATE_FAST_PATH=on"}, true},
		{off, []string{"ARDGATE_FAST_PATH=true"}, true},
	} {
		c, err := config.Load(config.Flags{Config: tc.file}, tc.env)
		if err != nil {
			t.Fatalf("file %q, env %q: %v", tc.file, tc.env, err)
		}
		if c.FastPath != tc.want {
			t.Errorf("file %q, env %q: fast_path %v, want %v", filepath.Base(tc.file), tc.env, c.FastPath, tc.want)
		}
	}
}

func TestLoadEnvErrors(t *testing.T) {
	tests := []struct {
		name  string
		env   []string
		field string // a problem about this field; "" means a parse error naming want
		want  string
	}{
		{"max not a number", []string{"ARDGATE_MAX_ATTACHMENTS=five"}, "", `ARDGATE_MAX_ATTACHMENTS: "five" is not a whole number`},
		{"allow_local not a bool", []string{"ARDGATE_ALLOW_LOCAL_URLS=yes please"}, "", `ARDGATE_ALLOW_LOCAL_URLS: "yes please" is not true or false`},
		{"fast_path not a switch", []string{"ARDGATE_FAST_PATH=sometimes"}, "", `ARDGATE_FAST_PATH: "sometimes" is not on or off (or true or false)`},
		{"auth token blank", []string{"ARDGATE_AUTH_TOKEN=  "}, "", "ARDGATE_AUTH_TOKEN: begins or ends with white space"},
		{"max out of range", []string{"ARDGATE_MAX_ATTACHMENTS=0"}, "max_attachments", ""},
		{"max too big", []string{"ARDGATE_MAX_ATTACHMENTS=101"}, "max_attachments", ""},
		{"max_sessions zero", []string{"ARDGATE_MAX_SESSIONS=0"}, "max_sessions", ""},
		{"session_idle_timeout not a duration", []string{"ARDGATE_SESSION_IDLE_TIMEOUT=forever"}, "session_idle_timeout", ""},
		{"bad transport", []string{"ARDGATE_TRANSPORT=carrier-pigeon"}, "transport", ""},
		{"bad log level", []string{"ARDGATE_LOG_LEVEL=loud"}, "log_level", ""},
		{"bad log format", []string{"ARDGATE_LOG_FORMAT=xml"}, "log_format", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(config.Flags{}, tt.env)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if c != nil {
				t.Errorf("a config was returned with the error")
			}
			if tt.field == "" {
				if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "strconv") || len(problems(t, err)) != 1 {
					t.Errorf("error %q does not say %q alone, or speaks Go", err, tt.want)
				}
				return
			}
			// The field, and the variable that set it.
			name, _, _ := strings.Cut(tt.env[0], "=")
			if probs := problems(t, err); !slices.ContainsFunc(probs, func(p string) bool { return strings.HasPrefix(p, tt.field+" (from "+name+"): ") }) {
				t.Errorf("problems %q do not name %q and %s", probs, tt.field, name)
			}
			if !strings.Contains(err.Error(), "invalid configuration (flags and environment)") {
				t.Errorf("error %q: no file, yet not said", err)
			}
		})
	}
}

// A bad variable does not hide the config file's problems: all are
// listed together.
func TestLoadEnvAndFileProblemsTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ardgate.json")
	if err := os.WriteFile(path, []byte(`{"log_level": "loud"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(config.Flags{Config: path}, []string{"ARDGATE_MAX_SESSIONS=many"})
	probs := problems(t, err)
	if !slices.ContainsFunc(probs, func(p string) bool { return strings.HasPrefix(p, `ARDGATE_MAX_SESSIONS: "many" is not a whole number`) }) ||
		!slices.ContainsFunc(probs, func(p string) bool { return strings.HasPrefix(p, "log_level: ") }) {
		t.Fatalf("problems %q: want the variable's and the file's", probs)
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string // substrings of the error
	}{
		{"unknown top-level field", `{"transport": "stdio", "max_attachment": 3}`, []string{`max_attachment: unknown field`}},
		{"unknown registry field", `{"registries": [{"id": "builtin", "kind": "catalog", "pathh": "x"}]}`, []string{`registries[0].pathh: unknown field`}},
		{"unknown stdio field", `{"stdio": {"allow_form": ["builtin"]}}`, []string{`stdio.allow_form: unknown field`}},
		{"malformed JSON line 4", "{\n  \"transport\": \"stdio\",\n  \"addr\": \"x\"\n  \"log_level\": \"info\"\n}", []string{"line 4, column 3: "}},
		{"malformed JSON line 1", `{"transport" "stdio"}`, []string{"line 1, column 14: "}},
		{"trailing comma", "{\n\"transport\": \"stdio\",\n}", []string{"line 3, column 1: "}},
		{"column counts characters, not bytes", `{"addr": "é", x}`, []string{"line 1, column 15: "}},
		{"syntax error after a duplicate", `{"addr": "a", "addr": "b", }`, []string{"line 1, column 28: "}},
		{"file ends early", `{"transport": "stdio"`, []string{"ends before the JSON is complete"}},
		{"wrong type names field", `{"max_attachments": "five"}`, []string{`max_attachments: "five" is not a whole number`}},
		{"trailing data", `{} {}`, []string{"trailing data"}},
		{"trailing bracket", `{} ]`, []string{"trailing data"}},
		{"not an object", `["transport"]`, []string{"not a JSON object"}},
		{"empty file", ``, []string{"ardgate.json is empty"}},
		{"whitespace only", " \n\t\n", []string{"ardgate.json is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			c, err := config.Load(config.Flags{Config: path}, nil)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file %s", err, path)
			}
		})
	}
}

// TestLoadValidation checks that each rule names the offending field path.
func TestLoadValidation(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		field string
	}{
		{"transport", `{"transport": "tcp"}`, "transport"},
		{"log_level", `{"log_level": "verbose"}`, "log_level"},
		{"log_format", `{"log_format": "xml"}`, "log_format"},
		{"consent", `{"consent": "sometimes"}`, "consent"},
		{"max_attachments zero", `{"max_attachments": 0}`, "max_attachments"},
		{"max_attachments negative", `{"max_attachments": -1}`, "max_attachments"},
		{"max_attachments too many", `{"max_attachments": 101}`, "max_attachments"},
		{"max_sessions too many", `{"max_sessions": 1000001}`, "max_sessions"},
		{"call_timeout not a duration", `{"call_timeout": "soon"}`, "call_timeout"},
		{"call_timeout zero", `{"call_timeout": "0s"}`, "call_timeout"},
		{"call_timeout negative", `{"call_timeout": "-5s"}`, "call_timeout"},
		{"call_timeout too long", `{"call_timeout": "2h"}`, "call_timeout"},
		{"max_call_time not a duration", `{"max_call_time": "long"}`, "max_call_time"},
		{"max_call_time shorter than call_timeout", `{"call_timeout": "2m", "max_call_time": "90s"}`, "max_call_time"},
		{"max_call_time too long", `{"max_call_time": "25h"}`, "max_call_time"},
		{"max_call_time zero", `{"max_call_time": "0s"}`, "max_call_time"},
		{"session_idle_timeout not a duration", `{"session_idle_timeout": "30"}`, "session_idle_timeout"},
		{"session_idle_timeout too short", `{"session_idle_timeout": "500ms"}`, "session_idle_timeout"},
		{"session_idle_timeout too long", `{"session_idle_timeout": "169h"}`, "session_idle_timeout"},
		{"session_reap_after not a duration", `{"session_reap_after": "5"}`, "session_reap_after"},
		{"session_reap_after too short", `{"session_reap_after": "10ms"}`, "session_reap_after"},
		{"pinned_list_wait not a duration", `{"pinned_list_wait": "a while"}`, "pinned_list_wait"},
		{"pinned_list_wait zero", `{"pinned_list_wait": "0s"}`, "pinned_list_wait"},
		{"pinned_list_wait too long", `{"pinned_list_wait": "6m"}`, "pinned_list_wait"},
		{"start_timeout not a duration", `{"start_timeout": "long"}`, "start_timeout"},
		{"start_timeout too short", `{"start_timeout": "10ms"}`, "start_timeout"},
		{"max_result_bytes small", `{"max_result_bytes": 10}`, "max_result_bytes"},
		{"max_result_bytes big", `{"max_result_bytes": 1000000000}`, "max_result_bytes"},
		{"limits calls_per_second negative", `{"limits": {"calls_per_second": -1}}`, "limits.calls_per_second"},
		{"limits call_burst negative", `{"limits": {"call_burst": -1}}`, "limits.call_burst"},
		{"limits discovery_per_minute negative", `{"limits": {"discovery_per_minute": -0.5}}`, "limits.discovery_per_minute"},
		{"limits repeat_max negative", `{"limits": {"repeat_max": -3}}`, "limits.repeat_max"},
		{"limits repeat_window", `{"limits": {"repeat_window": "often"}}`, "limits.repeat_window"},
		{"limits repeat_window negative", `{"limits": {"repeat_window": "-1m"}}`, "limits.repeat_window"},
		{"allow_attach_types", `{"allow_attach_types": ["application/mcp-server-card+json", "text/html"]}`, "allow_attach_types[1]"},
		{"server tools empty", `{"servers": [{"name": "fs", "command": "npx", "tools": []}]}`, "servers[0].tools"},
		{"server tools bad pattern", `{"servers": [{"name": "fs", "command": "npx", "tools": ["read_[a"]}]}`, "servers[0].tools[0]"},
		{"server tools blank", `{"servers": [{"name": "fs", "command": "npx", "tools": [" "]}]}`, "servers[0].tools[0]"},
		{"registry id pattern", `{"registries": [{"id": "Team One", "kind": "catalog", "path": "t.json"}]}`, "registries[0].id"},
		{"registry id empty", `{"registries": [{"kind": "catalog", "path": "t.json"}]}`, "registries[0].id"},
		{"registry id duplicate", `{"registries": [{"id": "builtin", "kind": "catalog"}, {"id": "builtin", "kind": "catalog", "path": "x.json"}]}`, "registries[1].id"},
		{"catalog needs path", `{"registries": [{"id": "builtin", "kind": "catalog"}, {"id": "team", "kind": "catalog"}]}`, "registries[1].path"},
		{"ard needs url", `{"registries": [{"id": "builtin", "kind": "catalog"}, {"id": "pub", "kind": "ard"}]}`, "registries[1].url"},
		{"ard url scheme", `{"registries": [{"id": "builtin", "kind": "catalog"}, {"id": "pub", "kind": "ard", "url": "ftp://r.example.com"}]}`, "registries[1].url"},
		{"mcp-registry needs url", `{"registries": [{"id": "mcp", "kind": "mcp-registry"}]}`, "registries[0].url"},
		{"ard url without host", `{"registries": [{"id": "pub", "kind": "ard", "url": "http://"}]}`, "registries[0].url"},
		{"mcp-registry url with a space", `{"registries": [{"id": "mcp", "kind": "mcp-registry", "url": "https://exa mple.com"}]}`, "registries[0].url"},
		{"well-known host with a query", `{"registries": [{"id": "hosts", "kind": "well-known", "hosts": ["https://x.example/path?q"]}]}`, "registries[0].hosts[0]"},
		{"catalog with a url", `{"registries": [{"id": "team", "kind": "catalog", "path": "t.json", "url": "https://r.example"}]}`, "registries[0].url"},
		{"catalog with hosts", `{"registries": [{"id": "team", "kind": "catalog", "path": "t.json", "hosts": ["https://r.example"]}]}`, "registries[0].hosts"},
		{"ard with a path", `{"registries": [{"id": "pub", "kind": "ard", "url": "https://r.example", "path": "t.json"}]}`, "registries[0].path"},
		{"federation of a catalog", `{"registries": [{"id": "team", "kind": "catalog", "path": "t.json", "federation": "none"}]}`, "registries[0].federation"},
		{"well-known needs hosts", `{"registries": [{"id": "hosts", "kind": "well-known"}]}`, "registries[0].hosts"},
		{"kind unknown", `{"registries": [{"id": "x", "kind": "sql"}]}`, "registries[0].kind"},
		{"kind missing", `{"registries": [{"id": "x"}]}`, "registries[0].kind"},
		{"federation", `{"registries": [{"id": "pub", "kind": "ard", "url": "https://r.example.com", "federation": "all"}]}`, "registries[0].federation"},
		{"token_env", `{"registries": [{"id": "pub", "kind": "ard", "url": "https://r.example.com", "token_env": "MY-TOKEN"}]}`, "registries[0].token_env"},
		{"stdio.allow_from unknown id", `{"stdio": {"allow_from": ["builtin", "nope"]}}`, "stdio.allow_from[1]"},
		{"stdio.allow_from first", `{"stdio": {"allow_from": ["public"]}}`, "stdio.allow_from[0]"},
		{"require_trust empty", `{"require_trust": ["SOC2", ""]}`, "require_trust[1]"},
		{"require_trust blank", `{"require_trust": [" "]}`, "require_trust[0]"},
		{"require_trust spaced", `{"require_trust": [" soc2 "]}`, "require_trust[0]"},
		{"stdio.launchers shell", `{"stdio": {"launchers": ["npx", "sh -c"]}}`, "stdio.launchers[1]"},
		{"stdio.launchers empty", `{"stdio": {"launchers": [""]}}`, "stdio.launchers[0]"},
		{"stdio.launchers metachar", `{"stdio": {"launchers": ["npx;id"]}}`, "stdio.launchers[0]"},
		{"stdio.launchers not a package launcher", `{"stdio": {"launchers": ["uvx", "bash"]}}`, "stdio.launchers[1]"},
		{"stdio.env", `{"stdio": {"env": ["HOME", "A=B"]}}`, "stdio.env[1]"},
		{"stdio.memory_mib too little", `{"stdio": {"memory_mib": 100}}`, "stdio.memory_mib"},
		{"stdio.memory_mib negative", `{"stdio": {"memory_mib": -1}}`, "stdio.memory_mib"},
		{"stdio.cpu_seconds negative", `{"stdio": {"cpu_seconds": -5}}`, "stdio.cpu_seconds"},
		{"stdio.open_files negative", `{"stdio": {"open_files": -1}}`, "stdio.open_files"},
		{"stdio.file_mib negative", `{"stdio": {"file_mib": -1}}`, "stdio.file_mib"},
		{"server needs command or url", `{"servers": [{"name": "files"}]}`, "servers[0]"},
		{"server name with __", `{"servers": [{"name": "a__b", "command": "x"}]}`, "servers[0].name"},
		{"server name ending in _", `{"servers": [{"name": "a_", "command": "x"}]}`, "servers[0].name"},
		{"server name too long", `{"servers": [{"name": "` + strings.Repeat("a", 33) + `", "command": "x"}]}`, "servers[0].name"},
		{"server token_env on a command", `{"servers": [{"name": "files", "command": "x", "token_env": "T"}]}`, "servers[0].token_env"},
		{"server token_env name", `{"servers": [{"name": "r", "url": "https://r.example", "token_env": "MY-TOKEN"}]}`, "servers[0].token_env"},
		{"server headers on a command", `{"servers": [{"name": "files", "command": "x", "headers": {"X-A": "b"}}]}`, "servers[0].headers"},
		{"server header name", `{"servers": [{"name": "r", "url": "https://r.example", "headers": {"X A": "b"}}]}`, "servers[0].headers"},
		{"server header value", `{"servers": [{"name": "r", "url": "https://r.example", "headers": {"X-A": "b\r\nX-B: c"}}]}`, "servers[0].headers.X-A"},
		{"server protocol header", `{"servers": [{"name": "r", "url": "https://r.example", "headers": {"mcp-session-id": "x"}}]}`, "servers[0].headers.mcp-session-id"},
		{"server Authorization twice", `{"servers": [{"name": "r", "url": "https://r.example", "token_env": "T", "headers": {"authorization": "Bearer x"}}]}`, "servers[0].headers.authorization"},
		{"server with both", `{"servers": [{"name": "files", "command": "npx", "url": "https://x.example.com/mcp"}]}`, "servers[0]"},
		{"server url scheme", `{"servers": [{"name": "files", "url": "file:///srv/mcp"}]}`, "servers[0].url"},
		{"server stateless command", `{"servers": [{"name": "files", "command": "npx", "stateless": true}]}`, "servers[0].stateless"},
		{"server framing unknown", `{"servers": [{"name": "files", "command": "npx", "framing": "lsp"}]}`, "servers[0].framing"},
		{"server framing of a url", `{"servers": [{"name": "files", "url": "https://a.example/mcp", "framing": "content-length"}]}`, "servers[0].framing"},
		{"server name", `{"servers": [{"name": "Files!", "command": "npx"}]}`, "servers[0].name"},
		{"server name duplicate", `{"servers": [{"name": "a", "command": "npx"}, {"name": "a", "command": "uvx"}]}`, "servers[1].name"},
		{"server env", `{"servers": [{"name": "a", "command": "npx", "env": ["OK", "1BAD"]}]}`, "servers[0].env[1]"},
		{"server timeout", `{"servers": [{"name": "a", "command": "npx", "timeout": "2h"}]}`, "servers[0].timeout"},
		{"server timeout not duration", `{"servers": [{"name": "a", "command": "npx", "timeout": "long"}]}`, "servers[0].timeout"},
		{"otel_endpoint scheme", `{"otel_endpoint": "grpc://collector:4317"}`, "otel_endpoint"},
		{"otel_endpoint no host", `{"otel_endpoint": "http://"}`, "otel_endpoint"},
		{"public_url scheme", `{"public_url": "gateway.example.com"}`, "public_url"},
		{"public_url with a query", `{"public_url": "https://gateway.example.com/?x=1"}`, "public_url"},
		{"agent url", `{"agents": [{"name": "research", "url": "research.example.com"}]}`, "agents[0].url"},
		{"agent name", `{"agents": [{"name": "", "url": "https://research.example.com"}]}`, "agents[0].name"},
		{"agent dialect", `{"agents": [{"name": "a", "url": "https://a.example", "dialect": "v2"}]}`, "agents[0].dialect"},
		{"agent and server share names", `{"servers": [{"name": "r", "command": "npx"}], "agents": [{"name": "r", "url": "https://r.example.com"}]}`, "agents[0].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			c, err := config.Load(config.Flags{Config: path}, nil)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if c != nil {
				t.Error("a config was returned with the error")
			}
			probs := problems(t, err)
			if !hasField(probs, tt.field) {
				t.Errorf("problems %q do not name %q", probs, tt.field)
			}
			if len(probs) != 1 {
				t.Errorf("want exactly one problem, got %d: %q", len(probs), probs)
			}
			var ce *config.Error
			if errors.As(err, &ce) && ce.Source != path {
				t.Errorf("Source = %q, want %q", ce.Source, path)
			}
		})
	}
}

func TestLoadReportsAllProblems(t *testing.T) {
	path := writeConfig(t, `{
		"transport": "tcp",
		"max_attachments": 0,
		"call_timeout": "forever",
		"registries": [
			{"id": "builtin", "kind": "catalog"},
			{"id": "pub", "kind": "ard", "url": "gopher://r.example.com"}
		],
		"stdio": {"allow_from": ["builtin", "ghost"]},
		"servers": [{"name": "files"}]
	}`)
	_, err := config.Load(config.Flags{Config: path}, nil)
	probs := problems(t, err)
	for _, f := range []string{"transport", "max_attachments", "call_timeout", "registries[1].url", "stdio.allow_from[1]", "servers[0]"} {
		if !hasField(probs, f) {
			t.Errorf("problems do not name %q:\n%s", f, strings.Join(probs, "\n"))
		}
	}
	if len(probs) != 6 {
		t.Errorf("got %d problems, want 6:\n%s", len(probs), strings.Join(probs, "\n"))
	}
	// One line per problem after the heading.
	if lines := strings.Split(err.Error(), "\n"); len(lines) != len(probs)+1 || !strings.Contains(lines[0], path) {
		t.Errorf("Error() = %q", err)
	}
	// Unwrap exposes the problems to errors.Is / errors.As.
	var ce *config.Error
	errors.As(err, &ce)
	if !errors.Is(err, ce.Problems[0]) {
		t.Error("errors.Is does not reach the problems")
	}
}

// TestLoadFileProblems checks that unknown fields, values of the wrong type
// and keys set twice are problems naming their field, anywhere in the file,
// listed with the value problems rather than stopping at the first.
func TestLoadFileProblems(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string // every problem, in order
	}{
		// Unknown fields, at every level.
		{"unknown top-level", `{"max_attachment": 3}`, []string{`max_attachment: unknown field "max_attachment"`}},
		{"unknown in limits", `{"limits": {"repeat_windw": "30s"}}`, []string{`limits.repeat_windw: unknown field "repeat_windw"`}},
		{"unknown in stdio", `{"stdio": {"allow_form": []}}`, []string{`stdio.allow_form: unknown field "allow_form"`}},
		{"unknown in a registry", `{"registries": [{"id": "builtin", "kind": "catalog"}, {"id": "t", "kind": "catalog", "path": "t.json", "pth": "x"}]}`,
			[]string{`registries[1].pth: unknown field "pth"`}},
		{"unknown in a server", `{"servers": [{"name": "a", "command": "npx", "stateles": true}]}`, []string{`servers[0].stateles: unknown field "stateles"`}},
		{"unknown in an agent", `{"agents": [{"name": "a", "url": "https://a.example", "token": "x"}]}`, []string{`agents[0].token: unknown field "token"`}},
		{"names match exactly", `{"Max_Attachments": 3}`, []string{`Max_Attachments: unknown field "Max_Attachments"`}},
		{"json:\"-\" fields are unknown", `{"agents": [{"name": "a", "url": "https://a.example", "-": "x"}]}`, []string{`agents[0].-: unknown field "-"`}},
		{"two unknown fields", `{"colour": 1, "limits": {"speed": 2}}`,
			[]string{`colour: unknown field "colour"`, `limits.speed: unknown field "speed"`}},

		// Values of the wrong type, in words rather than Go types.
		{"string for bool", `{"allow_local_urls": "yes"}`, []string{`allow_local_urls: "yes" is not true or false`}},
		{"string for int", `{"max_attachments": "five"}`, []string{`max_attachments: "five" is not a whole number`}},
		{"fraction for int", `{"max_attachments": 2.5}`, []string{`max_attachments: 2.5 is not a whole number`}},
		{"string for float", `{"limits": {"calls_per_second": "fast"}}`, []string{`limits.calls_per_second: "fast" is not a number`}},
		{"number for string", `{"transport": 5}`, []string{`transport: 5 is not a string`}},
		{"string for list", `{"require_trust": "soc2"}`, []string{`require_trust: "soc2" is not a list`}},
		{"list for object", `{"limits": [1]}`, []string{`limits: a list is not an object`}},
		{"object for string", `{"addr": {"host": "x"}}`, []string{`addr: an object is not a string`}},
		{"list element", `{"stdio": {"env": ["HOME", 3]}}`, []string{`stdio.env[1]: 3 is not a string`}},
		{"map value", `{"servers": [{"name": "a", "url": "https://a.example", "headers": {"X-Team": 1}}]}`,
			[]string{`servers[0].headers.X-Team: 1 is not a string`}},
		// The zero value a bad value leaves behind is not reported again,
		// and list indexes stay as in the file.
		{"bad registry kind once", `{"registries": [{"id": "builtin", "kind": "catalog"}, {"id": "x", "kind": 5}]}`,
			[]string{`registries[1].kind: 5 is not a string`}},
		{"bad registry once", `{"registries": [7, {"id": "x", "kind": "sql"}]}`,
			[]string{`registries[0]: 7 is not an object`, `registries[1].kind: "sql" is not catalog, ard, mcp-registry or well-known`}},
		{"null is absent", `{"max_attachments": null, "limits": null, "stdio": null, "registries": null}`, nil},

		// Keys set twice, at every level.
		{"duplicate top-level", `{"max_attachments": 5, "max_attachments": 7}`, []string{`max_attachments: set twice`}},
		{"duplicate in limits", `{"limits": {"repeat_max": 1, "repeat_max": 2}}`, []string{`limits.repeat_max: set twice`}},
		{"duplicate in a registry", `{"registries": [{"id": "builtin", "id": "b", "kind": "catalog"}]}`, []string{`registries[0].id: set twice`}},
		{"duplicate header", `{"servers": [{"name": "a", "url": "https://a.example", "headers": {"X": "1", "X": "2"}}]}`,
			[]string{`servers[0].headers.X: set twice`}},
		{"duplicate unknown", `{"colour": 1, "colour": 2}`, []string{`colour: unknown field "colour"`, `colour: set twice`}},

		// Decoding problems come with the value problems that can be checked.
		{"all together", `{"max_attachment": 3, "max_attachments": 0, "limits": {"call_burst": -2, "call_burst": 1}}`,
			[]string{`max_attachment: unknown field "max_attachment"`, `limits.call_burst: set twice`,
				`max_attachments: 0 is outside 1..100`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			c, err := config.Load(config.Flags{Config: path}, nil)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if c != nil {
				t.Error("a config was returned with the error")
			}
			if probs := problems(t, err); !slices.Equal(probs, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(probs, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestLoadSixProblems is the file a user had to fix in four rounds: every
// problem is now listed at once, each naming its field.
func TestLoadSixProblems(t *testing.T) {
	_, err := config.Load(config.Flags{Config: "testdata/six-problems.json"}, nil)
	want := []string{
		`max_attachment: unknown field "max_attachment"`,
		`allow_local_urls: "yes" is not true or false`,
		`limits.repeat_windw: unknown field "repeat_windw"`,
		`transport: "tcp" is not stdio or http`,
		`limits.calls_per_second: -1 may not be negative`,
		`registries[1].url: required for kind "ard"`,
	}
	if probs := problems(t, err); !slices.Equal(probs, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(probs, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(err.Error(), "invalid configuration (testdata/six-problems.json):\n") {
		t.Errorf("Error() = %q", err)
	}
}

func TestLoadDesignExample(t *testing.T) {
	c, err := config.Load(config.Flags{Config: "testdata/design.json"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(c.Registries), []string{"builtin", "team", "public", "mcp", "hosts"}; !slices.Equal(got, want) {
		t.Errorf("registries = %q, want %q", got, want)
	}
	if want := filepath.Join("testdata", "catalogs", "team.json"); c.Registries[1].Path != want {
		t.Errorf("team path = %q, want %q", c.Registries[1].Path, want)
	}
	if !slices.Equal(c.Stdio.AllowFrom, []string{"builtin", "team"}) || !slices.Equal(c.Stdio.Launchers, []string{"npx", "uvx"}) {
		t.Errorf("stdio = %+v", c.Stdio)
	}
	if len(c.Servers) != 2 || c.Servers[1].Headers["X-Team"] != "a" || len(c.Agents) != 1 {
		t.Errorf("servers=%+v agents=%+v", c.Servers, c.Agents)
	}
	if r, ok := c.RegistryByID("public"); !ok || r.Federation != "none" || r.TokenEnv != "ARD_REGISTRY_TOKEN" {
		t.Errorf("RegistryByID(public) = %+v, %v", r, ok)
	}
	if _, ok := c.RegistryByID("nope"); ok {
		t.Error("RegistryByID(nope) found something")
	}
}

func TestLoadDurationsAndLimits(t *testing.T) {
	tests := []struct {
		name        string
		body        string
		wantTimeout time.Duration
		wantLimits  config.Limits
	}{
		{"defaults", `{}`, config.DefaultCallTimeout, config.DefaultLimits},
		{"call_timeout", `{"call_timeout": "90s"}`, 90 * time.Second, config.DefaultLimits},
		{"call_timeout and pinned_list_wait", `{"call_timeout": "90s", "pinned_list_wait": "2m"}`, 90 * time.Second, config.DefaultLimits},
		{"start_timeout", `{"start_timeout": "10m"}`, config.DefaultCallTimeout, config.DefaultLimits},
		{"full limits", `{"limits": {"calls_per_second": 5, "call_burst": 10, "discovery_per_minute": 30, "repeat_max": 3, "repeat_window": "30s"}}`,
			config.DefaultCallTimeout, config.Limits{CallsPerSecond: 5, CallBurst: 10, DiscoveryPerMinute: 30, RepeatMax: 3, RepeatWindow: 30 * time.Second}},
		// A field the file does not set keeps its default.
		{"partial limits keep defaults", `{"limits": {"repeat_max": 3}}`,
			config.DefaultCallTimeout, config.Limits{DiscoveryPerMinute: 120, RepeatMax: 3, RepeatWindow: time.Minute}},
		{"explicit zero disables", `{"limits": {"discovery_per_minute": 0, "repeat_max": 0}}`,
			config.DefaultCallTimeout, config.Limits{RepeatWindow: time.Minute}},
		{"null limits", `{"limits": null}`, config.DefaultCallTimeout, config.DefaultLimits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(config.Flags{Config: writeConfig(t, tt.body)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.CallTimeout != tt.wantTimeout || c.Limits != tt.wantLimits {
				t.Errorf("timeout=%s limits=%+v, want %s %+v", c.CallTimeout, c.Limits, tt.wantTimeout, tt.wantLimits)
			}
			wantWait := config.DefaultPinnedListWait
			if strings.Contains(tt.body, "pinned_list_wait") {
				wantWait = 2 * time.Minute
			}
			if c.PinnedListWait != wantWait {
				t.Errorf("pinned_list_wait=%s, want %s", c.PinnedListWait, wantWait)
			}
			wantStart := config.DefaultStartTimeout
			if strings.Contains(tt.body, "start_timeout") {
				wantStart = 10 * time.Minute // a slow network's first download
			}
			if c.StartTimeout != wantStart {
				t.Errorf("start_timeout=%s, want %s", c.StartTimeout, wantStart)
			}
		})
	}
}

// max_call_time unset is 10 minutes, or call_timeout when that is longer.
func TestLoadMaxCallTime(t *testing.T) {
	for _, tt := range []struct {
		body string
		want time.Duration
	}{
		{`{}`, config.DefaultMaxCallTime},
		{`{"call_timeout": "15m"}`, 15 * time.Minute},
		{`{"max_call_time": "2h"}`, 2 * time.Hour},
		{`{"call_timeout": "90s", "max_call_time": "90s"}`, 90 * time.Second},
	} {
		c, err := config.Load(config.Flags{Config: writeConfig(t, tt.body)}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if c.MaxCallTime != tt.want {
			t.Errorf("%s: max_call_time %s, want %s", tt.body, c.MaxCallTime, tt.want)
		}
	}
}

func TestLoadRelativeCatalogPaths(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "etc", "ardgate")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "abs.json")
	body := `{
		"registries": [
			{"id": "builtin", "kind": "catalog"},
			{"id": "team", "kind": "catalog", "path": "catalogs/team.json"},
			{"id": "up", "kind": "catalog", "path": "../shared.json"},
			{"id": "abs", "kind": "catalog", "path": "` + filepath.ToSlash(abs) + `"}
		],
		"catalogs": ["extra.json"]
	}`
	path := filepath.Join(sub, "ardgate.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Flags{Config: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"builtin": "",
		"team":    filepath.Join(sub, "catalogs", "team.json"),
		"up":      filepath.Join(dir, "etc", "shared.json"),
		"abs":     abs,
		"extra":   filepath.Join(sub, "extra.json"), // file-named catalogs too
	}
	if len(c.Registries) != len(want) {
		t.Fatalf("registries = %+v", c.Registries)
	}
	for _, r := range c.Registries {
		if w, ok := want[r.ID]; !ok || r.Path != w {
			t.Errorf("%s: path %q, want %q", r.ID, r.Path, w)
		}
	}

	// Catalogs named on the command line or in the environment are
	// relative to the working directory, as a shell user expects.
	c, err = config.Load(config.Flags{Config: path, Catalogs: []string{"cwd.json"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Registries[len(c.Registries)-1]; r.Path != "cwd.json" {
		t.Errorf("--catalog path = %q, want it unchanged", r.Path)
	}
	c, err = config.Load(config.Flags{Config: path}, []string{"ARDGATE_CATALOGS=envcwd.json"})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Registries[len(c.Registries)-1]; r.Path != "envcwd.json" {
		t.Errorf("ARDGATE_CATALOGS path = %q, want it unchanged", r.Path)
	}
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

func TestLoadCatalogFlagIDs(t *testing.T) {
	tests := []struct {
		name     string
		catalogs []string
		want     []string // ids after builtin
	}{
		{"one", []string{"/srv/team.json"}, []string{"team"}},
		{"same base name twice", []string{"/a/team.json", "/b/team.json", "/c/team.json"}, []string{"team", "team-2", "team-3"}},
		{"clashes with builtin", []string{"/x/builtin.json", "/y/Builtin.JSON"}, []string{"builtin-2", "builtin-3"}},
		{"odd characters", []string{"/x/My Catalog (v2).json"}, []string{"my-catalog--v2"}},
		{"upper case and dots", []string{"/x/Team.Catalog.JSON"}, []string{"team-catalog"}},
		{"nothing usable", []string{"/x/.json", "/y/___.json", "/z/€€€.json"}, []string{"catalog", "catalog-2", "catalog-3"}},
		{"long name is cut", []string{"/x/" + strings.Repeat("abcdefghij", 5) + ".json"}, []string{"abcdefghijabcdefghijabcd"}},
		{"long names stay unique", []string{"/x/" + strings.Repeat("a", 40) + ".json", "/y/" + strings.Repeat("a", 50) + ".json"},
			[]string{strings.Repeat("a", 24), strings.Repeat("a", 24) + "-2"}},
		{"no extension", []string{"/x/catalog"}, []string{"catalog"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(config.Flags{Catalogs: tt.catalogs}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(c.Registries)
			if want := append([]string{"builtin"}, tt.want...); !slices.Equal(got, want) {
				t.Errorf("ids = %q, want %q", got, want)
			}
			for i, r := range c.Registries[1:] {
				if r.Kind != config.KindCatalog || r.Path != tt.catalogs[i] || !idPattern.MatchString(r.ID) {
					t.Errorf("registry %+v", r)
				}
			}
			// Default stdio.allow_from: builtin and every named catalog.
			if !slices.Equal(c.Stdio.AllowFrom, got) {
				t.Errorf("stdio.allow_from = %q, want %q", c.Stdio.AllowFrom, got)
			}
		})
	}

	t.Run("ids avoid file registries", func(t *testing.T) {
		path := writeConfig(t, `{"registries": [{"id": "builtin", "kind": "catalog"},
			{"id": "team", "kind": "catalog", "path": "/srv/team.json"},
			{"id": "team-2", "kind": "ard", "url": "https://r.example.com"}]}`)
		c, err := config.Load(config.Flags{Config: path, Catalogs: []string{"/other/team.json"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(c.Registries), []string{"builtin", "team", "team-2", "team-3"}; !slices.Equal(got, want) {
			t.Errorf("ids = %q, want %q", got, want)
		}
	})
}

func TestLoadDefaultAllowFrom(t *testing.T) {
	remote := `{"id": "builtin", "kind": "catalog"},
		{"id": "team", "kind": "catalog", "path": "/srv/team.json"},
		{"id": "public", "kind": "ard", "url": "https://registry.example.com/api/v1"},
		{"id": "mcp", "kind": "mcp-registry", "url": "https://registry.modelcontextprotocol.io"},
		{"id": "hosts", "kind": "well-known", "hosts": ["https://agents.example.com"]}`
	tests := []struct {
		name     string
		body     string
		catalogs []string
		want     []string
	}{
		{"catalog kinds only, never remote", `{"registries": [` + remote + `]}`, nil, []string{"builtin", "team"}},
		{"plus --catalog", `{"registries": [` + remote + `]}`, []string{"/x/extra.json"}, []string{"builtin", "team", "extra"}},
		{"stdio without allow_from still defaults", `{"registries": [` + remote + `], "stdio": {"launchers": ["npx"]}}`, nil, []string{"builtin", "team"}},
		{"explicit allow_from wins", `{"registries": [` + remote + `], "stdio": {"allow_from": ["public"]}}`, []string{"/x/extra.json"}, []string{"public"}},
		{"explicit empty allow_from", `{"registries": [` + remote + `], "stdio": {"allow_from": []}}`, nil, []string{}},
		{"no builtin configured", `{"registries": [{"id": "pub", "kind": "ard", "url": "https://r.example.com"}]}`, nil, nil},
		{"no registries at all", `{"registries": []}`, []string{"/x/only.json"}, []string{"only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(config.Flags{Config: writeConfig(t, tt.body), Catalogs: tt.catalogs}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Stdio.AllowFrom, tt.want) {
				t.Errorf("stdio.allow_from = %q, want %q", c.Stdio.AllowFrom, tt.want)
			}
			for _, id := range c.Stdio.AllowFrom {
				if r, _ := c.RegistryByID(id); r.Kind != config.KindCatalog && !strings.Contains(tt.body, `"allow_from"`) {
					t.Errorf("default allow_from has %s registry %q", r.Kind, id)
				}
			}
		})
	}
}

func TestFlagSet(t *testing.T) {
	var f config.Flags
	fs := config.FlagSet("serve", &f)
	fs.SetOutput(new(strings.Builder))
	err := fs.Parse([]string{"--transport", "http", "--addr", "127.0.0.1:9", "--config", "c.json",
		"--catalog", "a.json", "--catalog", "b.json", "--log-level", "debug", "--log-format", "json"})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Flags{Transport: "http", Addr: "127.0.0.1:9", Config: "c.json", Catalogs: []string{"a.json", "b.json"}, LogLevel: "debug", LogFormat: "json"}
	if f.Transport != want.Transport || f.Addr != want.Addr || f.Config != want.Config || !slices.Equal(f.Catalogs, want.Catalogs) ||
		f.LogLevel != want.LogLevel || f.LogFormat != want.LogFormat {
		t.Errorf("flags = %+v, want %+v", f, want)
	}
	if err := fs.Parse([]string{"--bogus"}); err == nil {
		t.Error("unknown flag accepted")
	}
}

// Registry, agent and server tokens are read from the variables the config names;
// ARD registries without token_env get ARD_REGISTRY_TOKEN.
func TestTokensFromEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, []byte(`{
	  "registries": [
	    {"id": "a", "kind": "ard", "url": "https://a.example"},
	    {"id": "b", "kind": "ard", "url": "https://b.example", "token_env": "B_TOKEN"},
	    {"id": "m", "kind": "mcp-registry", "url": "https://m.example"}
	  ],
	  "agents": [{"name": "research", "url": "https://r.example", "token_env": "R_TOKEN"}],
	  "servers": [{"name": "remote", "url": "https://s.example/mcp", "token_env": "S_TOKEN"}]
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Flags{Config: path}, []string{"ARD_REGISTRY_TOKEN=default", "B_TOKEN=bee", "R_TOKEN=arr", "S_TOKEN=ess"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range c.Registries {
		got[r.ID] = r.Token
	}
	if got["a"] != "default" || got["b"] != "bee" || got["m"] != "" {
		t.Fatalf("registry tokens %v", got)
	}
	if c.Agents[0].Token != "arr" {
		t.Fatalf("agent token %q", c.Agents[0].Token)
	}
	if c.Servers[0].Token != "ess" {
		t.Fatalf("server token %q", c.Servers[0].Token)
	}
}

// public_url comes from the file or ARDGATE_PUBLIC_URL, which beats it,
// without its trailing slash; serving stdio, it is said to be unused.
func TestLoadPublicURL(t *testing.T) {
	t.Parallel()
	file := writeConfig(t, `{"transport": "http", "public_url": "https://file.example/ardgate/"}`)
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"file", nil, "https://file.example/ardgate"},
		{"env over file", []string{"ARDGATE_PUBLIC_URL=https://env.example"}, "https://env.example"},
	} {
		c, err := config.Load(config.Flags{Config: file}, tt.env)
		if err != nil || c.PublicURL != tt.want || len(c.Warnings) != 0 {
			t.Errorf("%s: PublicURL %q, warnings %q, %v; want %q", tt.name, c.PublicURL, c.Warnings, err, tt.want)
		}
	}
	c, err := config.Load(config.Flags{}, []string{"ARDGATE_PUBLIC_URL=https://env.example"})
	if err != nil || !slices.Equal(c.Warnings, []string{"public_url https://env.example is for transport http: serving stdio, the user's pages are on loopback listeners"}) {
		t.Errorf("stdio: warnings %q, %v", c.Warnings, err)
	}
}

// Tracing is off unless an OTLP endpoint is set; --otel-endpoint beats
// ARDGATE_OTEL_ENDPOINT beats otel_endpoint in the file, and a value that
// is not an http(s) URL is refused naming the field, whichever source set
// it.
func TestLoadOTelEndpoint(t *testing.T) {
	file := writeConfig(t, `{"otel_endpoint": "http://file.example:4318"}`)
	env := []string{"ARDGATE_OTEL_ENDPOINT=https://env.example:4318/v1/traces"}
	tests := []struct {
		name  string
		flags config.Flags
		env   []string
		want  string
	}{
		{"off by default", config.Flags{}, nil, ""},
		{"file", config.Flags{Config: file}, nil, "http://file.example:4318"},
		{"env over file", config.Flags{Config: file}, env, "https://env.example:4318/v1/traces"},
		{"flag over env and file", config.Flags{Config: file, OTelEndpoint: "http://127.0.0.1:4318"}, env, "http://127.0.0.1:4318"},
		{"empty env falls through", config.Flags{Config: file}, []string{"ARDGATE_OTEL_ENDPOINT="}, "http://file.example:4318"},
		// The standard variable alone does not turn tracing on.
		{"OTEL_EXPORTER_OTLP_ENDPOINT alone", config.Flags{}, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://x.example:4318"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(tt.flags, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.OTelEndpoint != tt.want {
				t.Errorf("OTelEndpoint = %q, want %q", c.OTelEndpoint, tt.want)
			}
		})
	}
	for _, bad := range []struct {
		name  string
		flags config.Flags
		env   []string
	}{
		{"env", config.Flags{}, []string{"ARDGATE_OTEL_ENDPOINT=collector:4318"}},
		{"flag", config.Flags{OTelEndpoint: "udp://127.0.0.1:4318"}, nil},
		{"flag not a URL", config.Flags{OTelEndpoint: "http://[::1"}, nil},
	} {
		t.Run("bad "+bad.name, func(t *testing.T) {
			c, err := config.Load(bad.flags, bad.env)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if probs := problems(t, err); len(probs) != 1 || !hasField(probs, "otel_endpoint") {
				t.Errorf("problems %q, want one naming otel_endpoint", probs)
			}
		})
	}
	var f config.Flags
	fs := config.FlagSet("serve", &f)
	fs.SetOutput(new(strings.Builder))
	if err := fs.Parse([]string{"--otel-endpoint", "http://127.0.0.1:4318"}); err != nil || f.OTelEndpoint != "http://127.0.0.1:4318" {
		t.Errorf("--otel-endpoint: %v, %q", err, f.OTelEndpoint)
	}
}

// What is odd but not wrong is said as a warning: a token variable that
// is not set, an address stdio does not use. A clean config has none.
func TestLoadWarnings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ardgate.json")
	body := `{"registries": [{"id": "pub", "kind": "ard", "url": "https://r.example", "token_env": "PUB_TOKEN"}],
		"servers": [{"name": "gone", "command": "/nonexistent/bin/server"}, {"name": "here", "command": "go"}],
		"agents": [{"name": "helper", "url": "https://a.example/card.json", "token_env": "HELPER_TOKEN"}]}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Flags{Config: path, Addr: "127.0.0.1:9999"}, []string{"HELPER_TOKEN=t"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"registries[0].token_env: PUB_TOKEN is not set: requests go without a token",
		"servers[0].command: /nonexistent/bin/server: no executable file there: the server gone will be down",
		"addr 127.0.0.1:9999 is for transport http: serving stdio, listening nowhere"}
	if !slices.Equal(c.Warnings, want) {
		t.Fatalf("warnings %q, want %q", c.Warnings, want)
	}
	if c, err = config.Load(config.Flags{}, nil); err != nil || len(c.Warnings) != 0 {
		t.Fatalf("defaults: warnings %q, %v", c.Warnings, err)
	}
}

// A bad value in the file that a flag overrides is a warning, not an
// error: the gateway runs, and is told what breaks without the flag.
func TestLoadOverriddenFileValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ardgate.json")
	if err := os.WriteFile(path, []byte(`{"transport": "tcp", "max_attachments": 0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Flags{Config: path, Transport: "stdio"}, []string{"ARDGATE_MAX_ATTACHMENTS=3"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{path + `: transport: "tcp" is not stdio or http (a problem without the flags and variables given)`,
		path + ": max_attachments: 0 is outside 1..100 (a problem without the flags and variables given)"}
	if !slices.Equal(c.Warnings, want) {
		t.Fatalf("warnings %q, want %q", c.Warnings, want)
	}
}

// A token is sent in a header as it is: a value with a line break (the
// end of the file it came from) or white space at an end is refused at
// start naming the field; an empty one is warned of.
func TestTokenValues(t *testing.T) {
	file := writeConfig(t, `{"servers": [{"name": "r", "url": "https://r.example/mcp", "token_env": "R_TOKEN"}]}`)
	for _, tc := range []struct {
		value, err, warning string
	}{
		{"s3cret\n", "servers[0].token_env: R_TOKEN holds white space at an end, a line break or a control character", ""},
		{"s3c\x00ret", "servers[0].token_env: R_TOKEN holds", ""},
		{" s3cret", "servers[0].token_env: R_TOKEN holds", ""},
		{"", "", "servers[0].token_env: R_TOKEN is empty: requests go without a token"},
		{"s3cret", "", ""},
	} {
		if tc.err != "" {
			// The ARD registries' token, from its own variable, is held to
			// the same rule.
			_, err := config.Load(config.Flags{}, []string{"ARD_REGISTRY_TOKEN=" + tc.value})
			if err == nil || !strings.Contains(err.Error(), "ARD_REGISTRY_TOKEN: holds") {
				t.Errorf("ARD_REGISTRY_TOKEN=%q: %v", tc.value, err)
			}
		}
		c, err := config.Load(config.Flags{Config: file}, []string{"R_TOKEN=" + tc.value})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v; want an error saying %q", tc.value, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.value, err)
		case tc.err == "" && tc.warning != "" && !slices.Contains(c.Warnings, tc.warning):
			t.Errorf("%q: warnings %q; want %q", tc.value, c.Warnings, tc.warning)
		case tc.err == "" && tc.warning == "" && len(c.Warnings) != 0:
			t.Errorf("%q: warnings %q", tc.value, c.Warnings)
		}
	}
}

// The operator's own addresses: every configured URL's host and port, the
// scheme's port when it names none, the host in lower case, each once.
func TestOwnAddrs(t *testing.T) {
	c := &config.Config{
		Servers:    []config.Server{{Name: "a", URL: "http://LocalHost:8080/mcp"}, {Name: "b", Command: "npx"}, {Name: "c", URL: "https://mcp.svc.cluster/mcp"}},
		Agents:     []config.Agent{{Name: "d", URL: "http://[::1]:9000"}, {Name: "e", URL: "http://localhost:8080/.well-known/agent-card.json"}},
		Registries: []config.Registry{{ID: "builtin", Kind: config.KindCatalog}, {ID: "r", Kind: config.KindARD, URL: "http://127.0.0.1:7334/api"}, {ID: "w", Kind: config.KindWellKnown, Hosts: []string{"http://agents.internal"}}},
	}
	want := []string{"localhost:8080", "mcp.svc.cluster:443", "[::1]:9000", "127.0.0.1:7334", "agents.internal:80"}
	if got := c.OwnAddrs(); !slices.Equal(got, want) {
		t.Fatalf("OwnAddrs() = %v, want %v", got, want)
	}
}

// openribcage lists kagent's namespaces as well-known hosts with a path,
// and an agent may name its dialect.
func TestLoadWellKnownHostWithPath(t *testing.T) {
	p := writeConfig(t, `{"registries": [{"id": "kagent", "kind": "well-known", "hosts": ["http://localhost:8083/api/a2a/kagent"]}],
	  "agents": [{"name": "reviewer", "url": "https://openfang.example", "dialect": "tasks"}]}`)
	c, err := config.Load(config.Flags{Config: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Registries[len(c.Registries)-1].Hosts; len(got) != 1 || got[0] != "http://localhost:8083/api/a2a/kagent" {
		t.Fatalf("hosts %q", got)
	}
	if c.Agents[0].Dialect != "tasks" {
		t.Fatalf("dialect %q", c.Agents[0].Dialect)
	}
}

// ARDGATE_CREDENTIALS_KEY_FILE names a file holding the key, which then
// is not in the gateway's environment: the file is the owner's alone (on
// unix), holds a key as the variable would, and is not set beside the
// variable.
func TestLoadCredentialsKeyFile(t *testing.T) {
	random := base64.StdEncoding.EncodeToString([]byte("0123456789abcdefghijklmnopqrstuv"))
	path := writeConfig(t, `{"credentials": {"store": "creds.bin"}}`)
	dir := t.TempDir()
	keyFile := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		environ []string
		says    string
	}{
		{"mode 0600", []string{"ARDGATE_CREDENTIALS_KEY_FILE=" + keyFile("a", random+"\n", 0o600)}, ""},
		{"mode 0400", []string{"ARDGATE_CREDENTIALS_KEY_FILE=" + keyFile("b", random, 0o400)}, ""},
		{"mode 0644", []string{"ARDGATE_CREDENTIALS_KEY_FILE=" + keyFile("c", random, 0o644)}, "may be read by others than its owner (mode 0644)"},
		{"mode 0640", []string{"ARDGATE_CREDENTIALS_KEY_FILE=" + keyFile("d", random, 0o640)}, "chmod 600"},
		{"weak", []string{"ARDGATE_CREDENTIALS_KEY_FILE=" + keyFile("e", base64.StdEncoding.EncodeToString(make([]byte, 32)), 0o600)}, "a weak key"},
		{"missing", []string{"ARDGATE_CREDENTIALS_KEY_FILE=" + filepath.Join(dir, "none")}, "no such file"},
		{"a directory", []string{"ARDGATE_CREDENTIALS_KEY_FILE=" + dir}, "not a regular file"},
		{"both", []string{"ARDGATE_CREDENTIALS_KEY=" + random, "ARDGATE_CREDENTIALS_KEY_FILE=" + keyFile("f", random, 0o600)}, "both set"},
	} {
		if runtime.GOOS == "windows" && strings.HasPrefix(tc.name, "mode 06") {
			continue // no mode bits
		}
		c, err := config.Load(config.Flags{Config: path}, tc.environ)
		switch {
		case tc.says == "" && (err != nil || string(c.Credentials.Key) != "0123456789abcdefghijklmnopqrstuv"):
			t.Errorf("%s: %v, key %q", tc.name, err, c.Credentials.Key)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "ARDGATE_CREDENTIALS_KEY")):
			t.Errorf("%s: %v; want a refusal saying %q", tc.name, err, tc.says)
		}
	}
}

// consent is read from the file, each of its values as it is.
func TestLoadConsent(t *testing.T) {
	for _, v := range []string{config.ConsentNever, config.ConsentRemoteRegistries, config.ConsentAlways} {
		c, err := config.Load(config.Flags{Config: writeConfig(t, `{"consent": "`+v+`"}`)}, nil)
		if err != nil || c.Consent != v {
			t.Errorf("consent %q: %v, read as %+v", v, err, c)
		}
	}
}

// credentials.store needs a key of 32 random bytes in base64 from
// ARDGATE_CREDENTIALS_KEY: without one, or with a short, malformed or
// weak one, the gateway does not start, saying how to make one. The file
// is relative to the config; a key without a store is only warned of.
func TestLoadCredentials(t *testing.T) {
	random := base64.StdEncoding.EncodeToString([]byte("0123456789abcdefghijklmnopqrstuv"))
	path := writeConfig(t, `{"credentials": {"store": "creds.bin"}}`)
	for _, tc := range []struct {
		name, key, says string
	}{
		{"no key", "", "ARDGATE_CREDENTIALS_KEY: not set"},
		{"not base64", "not base64!", "not base64"},
		{"short", base64.StdEncoding.EncodeToString(make([]byte, 16)), "16 bytes, not 32"},
		{"weak", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("ab"), 16)), "a weak key"},
		{"good", random, ""},
	} {
		var environ []string
		if tc.key != "" {
			environ = []string{"ARDGATE_CREDENTIALS_KEY=" + tc.key}
		}
		c, err := config.Load(config.Flags{Config: path}, environ)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.says == "" && (c.Credentials.Store != filepath.Join(filepath.Dir(path), "creds.bin") || string(c.Credentials.Key) != "0123456789abcdefghijklmnopqrstuv" || len(c.Warnings) > 0):
			t.Errorf("%s: credentials %+v, warnings %q", tc.name, c.Credentials, c.Warnings)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "head -c 32 /dev/urandom | base64")):
			t.Errorf("%s: %v; want a refusal saying %q and how to make a key", tc.name, err, tc.says)
		}
	}
	c, err := config.Load(config.Flags{}, []string{"ARDGATE_CREDENTIALS_KEY=" + random})
	if err != nil || c.Credentials.Store != "" || c.Credentials.Key != nil || len(c.Warnings) != 1 {
		t.Errorf("a key without a store: %v, %+v, warnings %q", err, c.Credentials, c.Warnings)
	}
}
