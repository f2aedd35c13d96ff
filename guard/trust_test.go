package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func manifest(identity string, atts ...Attestation) json.RawMessage {
	b, _ := json.Marshal(TrustManifest{Identity: identity, Attestations: atts})
	return b
}

func TestTrustCheck(t *testing.T) {
	soc2 := Attestation{Type: "SOC2-Type2", URI: "https://acme.com/soc2.pdf", MediaType: "application/pdf"}
	cases := []struct {
		name      string
		publisher string
		manifest  json.RawMessage
		require   []string
		rule      string // "" means pass
	}{
		{"no manifest, nothing required", "acme.com", nil, nil, ""},
		{"no manifest, required", "acme.com", nil, []string{"soc2"}, "require_trust"},
		{"did:web equal", "acme.com", manifest("did:web:acme.com"), nil, ""},
		{"did:web subdomain", "acme.com", manifest("did:web:agents.acme.com"), nil, ""},
		{"did:web with port and path", "acme.com", manifest("did:web:acme.com%3A8443:users:alice"), nil, ""},
		{"https subdomain", "acme.com", manifest("https://api.ACME.com/.well-known/x"), nil, ""},
		{"spiffe trust domain", "acme.com", manifest("spiffe://acme.com/ns/prod/sa/agent"), nil, ""},
		{"suffix trick", "acme.com", manifest("did:web:evilacme.com"), nil, "trust.identity"},
		{"publisher as subdomain of identity", "acme.com", manifest("did:web:acme.com.evil.io"), nil, "trust.identity"},
		{"parent domain is not enough", "api.acme.com", manifest("https://acme.com"), nil, "trust.identity"},
		{"userinfo", "acme.com", manifest("https://acme.com@evil.io/"), nil, "trust.identity"},
		{"unknown identity kind", "acme.com", manifest("urn:x:acme.com"), nil, "trust.identity"},
		{"empty identity", "acme.com", manifest(""), nil, "trust.identity"},
		{"malformed manifest", "acme.com", json.RawMessage(`{"identity": 3}`), nil, "trust"},
		{"required attestation claimed", "acme.com", manifest("did:web:acme.com", soc2), []string{"SOC2"}, ""},
		{"every requirement must match", "acme.com", manifest("did:web:acme.com", soc2), []string{"soc2", "hipaa"}, "require_trust"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Trust{Require: c.require}
			r, err := g.Check(c.publisher, c.manifest)
			if c.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(c.manifest) > 0 && !r.IdentityMatchesPublisher {
					t.Fatal("passed without the identity matching")
				}
				return
			}
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != c.rule {
				t.Fatalf("err = %v, want refusal by %s", err, c.rule)
			}
			if r.Note == "" {
				t.Fatal("report without its note on claims")
			}
		})
	}
}

func TestTrustDigests(t *testing.T) {
	doc := []byte("%PDF- audited")
	sum := sha256.Sum256(doc)
	good := hex.EncodeToString(sum[:])
	fetched := 0
	fetch := func(_ context.Context, url string) ([]byte, error) {
		fetched++
		if strings.Contains(url, "missing") {
			return nil, errors.New("HTTP 404")
		}
		return doc, nil
	}
	cases := []struct {
		name    string
		att     Attestation
		require []string
		rule    string
	}{
		{"matching digest", Attestation{Type: "SOC2", URI: "https://acme.com/a.pdf", Digest: "sha256:" + good}, []string{"soc2"}, ""},
		{"bare hex digest", Attestation{Type: "SOC2", URI: "https://acme.com/a.pdf", Digest: strings.ToUpper(good)}, nil, ""},
		{"mismatch", Attestation{Type: "SOC2", URI: "https://acme.com/a.pdf", Digest: "sha256:" + strings.Repeat("0", 64)}, nil, "trust.digest"},
		{"other algorithm", Attestation{Type: "SOC2", URI: "https://acme.com/a.pdf", Digest: "md5:abc"}, nil, "trust.digest"},
		// A claim whose document cannot be fetched stands as a claim, as it
		// would with no digest (it was refused when required).
		{"unfetchable, required", Attestation{Type: "SOC2", URI: "https://acme.com/missing.pdf", Digest: "sha256:" + good}, []string{"soc2"}, ""},
		{"unfetchable, not required", Attestation{Type: "SOC2", URI: "https://acme.com/missing.pdf", Digest: "sha256:" + good}, nil, ""},
		{"forbidden scheme not fetched", Attestation{Type: "SOC2", URI: "file:///etc/passwd", Digest: "sha256:" + good}, []string{"soc2"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := fetched
			g := &Trust{Require: c.require, Fetch: fetch}
			m := manifest("did:web:acme.com", c.att)
			r, err := g.Check("acme.com", m) // refuses a digest it cannot read, without fetching
			if err == nil {
				err = g.VerifyDigests(context.Background(), m, &r)
			} else if fetched != before {
				t.Fatal("fetched for a digest the check refused")
			}
			if c.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				var ref *Refusal
				if !errors.As(err, &ref) || ref.Rule != c.rule {
					t.Fatalf("err = %v, want refusal by %s", err, c.rule)
				}
			}
			if strings.HasPrefix(c.att.URI, "file:") && fetched != before {
				t.Fatal("fetched a file: URI")
			}
			if c.name == "matching digest" && len(r.DigestVerified) != 1 {
				t.Fatalf("verified digest not reported: %+v", r)
			}
			if strings.HasPrefix(c.name, "unfetchable") || strings.HasPrefix(c.name, "forbidden") {
				if len(r.DigestNotChecked) != 1 || len(r.DigestVerified) != 0 {
					t.Fatalf("a document not fetched: %+v; want it not checked", r)
				}
			}
		})
	}
}
