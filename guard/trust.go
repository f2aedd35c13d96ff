package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// TrustManifest is the part of an ARD trustManifest the gate reads.
type TrustManifest struct {
	Identity     string        `json:"identity"`
	IdentityType string        `json:"identityType"`
	Attestations []Attestation `json:"attestations"`
}

// Attestation is one claim in a trust manifest.
type Attestation struct {
	Type      string `json:"type"`
	URI       string `json:"uri"`
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
}

// TrustReport says what the gate checked and what is only claimed. It is
// shown to the model, so it says plainly that attestations are claims.
type TrustReport struct {
	// Identity is the manifest's identity, if any.
	Identity string `json:"identity,omitempty"`
	// IdentityMatchesPublisher: the identity's host is the URN publisher or
	// a subdomain of it. This is checked.
	IdentityMatchesPublisher bool `json:"identity_matches_publisher"`
	// Claimed lists the attestation types, as claimed by the publisher.
	Claimed []string `json:"claimed_attestations,omitempty"`
	// Required lists require_trust values; Missing those no claim matched.
	Required []string `json:"required,omitempty"`
	Missing  []string `json:"missing,omitempty"`
	// DigestVerified lists attestations whose document matched its digest;
	// DigestNotChecked those whose document could not be fetched, which
	// stand as plain claims, as they would with no digest.
	DigestVerified   []string `json:"digest_verified,omitempty"`
	DigestNotChecked []string `json:"digest_not_checked,omitempty"`
	// Note says what the report does not prove.
	Note string `json:"note"`
}

const trustNote = "Identity is checked against the URN publisher; attestations are claims by the publisher, not proof, unless listed as digest_verified (digest_not_checked: its document could not be fetched)."

// Trust is the trust gate.
type Trust struct {
	// Require lists attestation types every attached entry must claim
	// (case-insensitive substring match).
	Require []string
	// Fetch reads an attestation document for digest checks, through the
	// guarded client and with a size cap; nil skips digest checks.
	Fetch func(ctx context.Context, url string) ([]byte, error)
}

// Check applies the gate to an entry whose URN names publisher, without
// touching the network. The report is returned even when the gate refuses.
func (t *Trust) Check(publisher string, manifest json.RawMessage) (TrustReport, error) {
	r := TrustReport{Required: t.Require, Note: trustNote}
	if len(manifest) == 0 || string(manifest) == "null" {
		r.Missing = t.Require
		if len(t.Require) > 0 {
			return r, refuse("require_trust", "the entry has no trustManifest, and attestations %v are required", t.Require)
		}
		return r, nil
	}
	var m TrustManifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return r, refuse("trust", "the trustManifest is malformed: %v", err)
	}
	r.Identity = Text(m.Identity, 200)
	host, err := IdentityHost(m.Identity)
	if err != nil {
		return r, refuse("trust.identity", "%v", err)
	}
	if !hostWithin(host, publisher) {
		return r, refuse("trust.identity", "identity %q (host %s) does not belong to the URN publisher %s", r.Identity, host, publisher)
	}
	r.IdentityMatchesPublisher = true
	for _, a := range m.Attestations {
		r.Claimed = append(r.Claimed, Text(a.Type, 100))
		if a.Digest != "" {
			if _, err := parseDigest(a.Digest); err != nil {
				return r, refuse("trust.digest", "attestation %s: %v", Text(a.Type, 100), err)
			}
		}
	}
	for _, want := range t.Require {
		if !matchesAny(want, m.Attestations) {
			r.Missing = append(r.Missing, want)
		}
	}
	if len(r.Missing) > 0 {
		return r, refuse("require_trust", "no attestation claims %v (claimed: %v)", r.Missing, r.Claimed)
	}
	return r, nil
}

// VerifyDigests fetches every attestation that carries a digest and
// compares. A mismatch refuses the entry. A document that cannot be
// fetched leaves the claim a plain claim, as with no digest, and reported
// as not checked: refusing it would have made a digest cost a publisher
// more than leaving it out. Check has refused digests it cannot read.
func (t *Trust) VerifyDigests(ctx context.Context, manifest json.RawMessage, r *TrustReport) error {
	if t.Fetch == nil || len(manifest) == 0 {
		return nil
	}
	var m TrustManifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil // Check already refused it
	}
	for _, a := range m.Attestations {
		want, err := parseDigest(a.Digest)
		if a.Digest == "" || err != nil {
			continue
		}
		var doc []byte
		if _, err = CheckURL(a.URI); err == nil {
			doc, err = t.Fetch(ctx, a.URI)
		}
		if err != nil {
			r.DigestNotChecked = append(r.DigestNotChecked, Text(a.Type, 100))
			continue
		}
		got := sha256.Sum256(doc)
		if hex.EncodeToString(got[:]) != want {
			return refuse("trust.digest", "attestation %s: the document at %s does not match its sha256 digest", Text(a.Type, 100), Text(a.URI, 200))
		}
		r.DigestVerified = append(r.DigestVerified, Text(a.Type, 100))
	}
	return nil
}

// IdentityHost extracts the host a trust identity names: the host of an
// https URL, the domain of did:web, the trust domain of a SPIFFE ID.
func IdentityHost(identity string) (string, error) {
	id := strings.TrimSpace(identity)
	switch {
	case id == "":
		return "", fmt.Errorf("the trustManifest has no identity")
	case strings.HasPrefix(strings.ToLower(id), "did:web:"):
		seg, _, _ := strings.Cut(id[len("did:web:"):], ":")
		host, err := url.PathUnescape(seg) // "example.com%3A8443" carries a port
		if err != nil || host == "" {
			return "", fmt.Errorf("identity %q is not a valid did:web", Text(id, 200))
		}
		return hostOnly(host)
	case strings.HasPrefix(strings.ToLower(id), "spiffe://"), strings.HasPrefix(strings.ToLower(id), "https://"):
		u, err := url.Parse(id)
		if err != nil || u.Host == "" || u.User != nil {
			return "", fmt.Errorf("identity %q is not a valid URL", Text(id, 200))
		}
		return hostOnly(u.Host)
	}
	return "", fmt.Errorf("identity %q is not an https URL, did:web or spiffe ID, so its host cannot be checked", Text(id, 200))
}

func hostOnly(hostport string) (string, error) {
	host := hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.Contains(hostport[i:], "]") {
		host = hostport[:i]
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || strings.ContainsAny(host, "/@ ") {
		return "", fmt.Errorf("identity host %q is not a host name", Text(hostport, 200))
	}
	return host, nil
}

// hostWithin reports whether host is domain or one of its subdomains.
func hostWithin(host, domain string) bool {
	domain = strings.TrimSuffix(strings.ToLower(domain), ".")
	return domain != "" && (host == domain || strings.HasSuffix(host, "."+domain))
}

func matchesAny(want string, atts []Attestation) bool {
	w := strings.ToLower(want)
	for _, a := range atts {
		if w != "" && strings.Contains(strings.ToLower(a.Type), w) {
			return true
		}
	}
	return false
}

// parseDigest accepts "sha256:<hex>" or bare hex.
func parseDigest(d string) (string, error) {
	d = strings.ToLower(strings.TrimSpace(d))
	if alg, rest, ok := strings.Cut(d, ":"); ok {
		if alg != "sha256" {
			return "", fmt.Errorf("digest algorithm %q is not sha256", alg)
		}
		d = rest
	}
	if b, err := hex.DecodeString(d); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("digest %q is not a sha256 hex value", Text(d, 80))
	}
	return d, nil
}
