package oauth

import "strings"

// bearerParams returns the auth-params of the first Bearer challenge in
// WWW-Authenticate values (RFC 9110 §11.6.1), names lower-cased; nil
// when there is none. A malformed rest of a value is ignored.
func bearerParams(values []string) map[string]string {
	for _, v := range values {
		if params := bearerIn(v); params != nil {
			return params
		}
	}
	return nil
}

// bearerIn is bearerParams for one header value.
func bearerIn(v string) map[string]string {
	var scheme string
	var params map[string]string
	for s := v; ; {
		s = strings.TrimLeft(s, " \t,")
		name, rest := cutToken(s)
		if name == "" {
			return params
		}
		after := strings.TrimLeft(rest, " \t")
		if scheme == "" || !strings.HasPrefix(after, "=") {
			if params != nil {
				return params // the next challenge begins
			}
			if scheme = strings.ToLower(name); scheme == "bearer" {
				params = map[string]string{}
			}
			s = rest
			continue
		}
		val, rest, ok := cutValue(strings.TrimLeft(after[1:], " \t"))
		if !ok {
			return params
		}
		if _, seen := params[strings.ToLower(name)]; params != nil && !seen {
			params[strings.ToLower(name)] = val
		}
		s = rest
	}
}

// cutToken splits a token (RFC 9110 §5.6.2) off the front of s.
func cutToken(s string) (token, rest string) {
	i := strings.IndexAny(s, " \t,=\"")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// cutValue splits an auth-param value, a token or a quoted string, off
// the front of s.
func cutValue(s string) (val, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		val, rest = cutToken(s)
		return val, rest, val != ""
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false // unterminated
}
