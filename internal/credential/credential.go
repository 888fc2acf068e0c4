// Package credential names the parts of a URL that carry credentials, so
// that what the toolkit reports (an error, a log line, a kept letter)
// leaves them out.
package credential

import (
	"net/url"
	"strings"
)

// Hidden is what stands for a credential's value in what is reported, as
// url.URL.Redacted writes a password.
const Hidden = "xxxxx"

// Query reports whether the query parameter name (compared
// case-insensitively) carries a credential: api_key, apikey, api-key,
// access_token, client_secret, password, and the signature, credential
// and security token of an AWS presigned URL.
func Query(name string) bool {
	switch strings.ToLower(name) {
	case "api_key", "apikey", "api-key", "access_token", "client_secret", "password",
		"x-amz-security-token", "x-amz-signature", "x-amz-credential":
		return true
	}
	return false
}

// QueryName returns the decoded name of a query's name=value part (the
// part as written if it does not decode).
func QueryName(part string) string {
	name, _, _ := strings.Cut(part, "=")
	if n, err := url.QueryUnescape(name); err == nil {
		return n
	}
	return name
}

// RedactedURL is u as url.URL.Redacted writes it (its password as
// Hidden), with the value of every query parameter that Query names as
// Hidden too; the other parameters keep their order and their encoding.
// A nil u is "".
func RedactedURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.RawQuery == "" {
		return u.Redacted()
	}
	parts := strings.Split(u.RawQuery, "&")
	changed := false
	for i, part := range parts {
		if name, _, hasValue := strings.Cut(part, "="); hasValue && Query(QueryName(part)) {
			parts[i] = name + "=" + Hidden
			changed = true
		}
	}
	if !changed {
		return u.Redacted()
	}
	c := *u
	c.RawQuery = strings.Join(parts, "&")
	return c.Redacted()
}
