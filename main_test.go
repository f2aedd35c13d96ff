package main

import (
	"net"
	"strings"
	"testing"
)

// Only a listener on a loopback address is taken for one: 0.0.0.0 and
// :: listen on every interface.
func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
	}{{"127.0.0.1", true}, {"127.0.0.2", true}, {"::1", true}, {"0.0.0.0", false}, {"::", false}, {"192.0.2.1", false}} {
		if got := loopback(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 7333}); got != tc.want {
			t.Errorf("loopback(%s) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}

// Help is asked for as users ask for it, and answered with what each
// command takes, exit status 0; a command or flag unknown is status 2.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		code        int
		out, errOut string // what stdout and stderr hold
	}{
		{[]string{"--help"}, 0, "ardgate registry serve --catalog", ""},
		{[]string{"-h"}, 0, "ardgate catalog validate", ""},
		{[]string{"help"}, 0, "ardgate serve [--transport", ""},
		{[]string{"serve", "--help"}, 0, "", "-transport"},
		{[]string{"registry", "serve", "-h"}, 0, "", "-source"},
		{[]string{"catalog", "--help"}, 0, "ardgate catalog export", ""},
		{[]string{"catalog", "validate", "--help"}, 0, "ardgate catalog validate FILE", ""}, // not a file named --help
		{[]string{"catalog", "export", "-h"}, 0, "ardgate catalog export", ""},              // not the catalog
		{[]string{"registry", "--help"}, 0, "ardgate registry serve --catalog FILE", ""},
		{[]string{"version", "--help"}, 0, "usage: ardgate version", ""},
		{[]string{"--version"}, 0, "ardgate ", ""},
		{[]string{"--help"}, 0, "[--log-level debug|info|warn|error] [--log-format text|json] [--otel-endpoint URL]", ""},
		{[]string{"bogus"}, 2, "", `unknown command "bogus"`},
		{[]string{"serve", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		// registry serve's mistakes: each said, none dropped.
		{[]string{"registry", "serve", "--catalog", "a.json", "b.json", "--addr", "127.0.0.1:1"}, 2, "", `unexpected argument "b.json"`},
		{[]string{"registry", "serve", "--catalog", "a.json", "--log-level", "loud"}, 2, "", `--log-level "loud" is not`},
		{[]string{"registry", "serve", "--catalog", "a.json", "--log-format", "xml"}, 2, "", `--log-format "xml" is not`},
		{[]string{"registry", "serve", "--catalog", "a.json", "--source", "not a url"}, 2, "", `--source "not a url" is not an http(s) URL`},
	} {
		var out, errOut strings.Builder
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.errOut) {
			t.Errorf("ardgate %s: status %d, stdout %q, stderr %q; want %d, %q, %q", strings.Join(tc.args, " "), code, out.String(), errOut.String(), tc.code, tc.out, tc.errOut)
		}
	}
}
