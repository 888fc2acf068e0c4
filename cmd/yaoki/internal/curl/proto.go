package curl

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
)

// protoSet is the protocols that --proto or --proto-redir let through, of
// the two yaoki http speaks.
type protoSet struct{ http, https bool }

// allows reports whether scheme is in the set.
func (p protoSet) allows(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "http":
		return p.http
	case "https":
		return p.https
	}
	return false
}

// parseProto reads --proto's value as curl 7.88 reads it, from start:
// comma-separated names, each after an optional "+" (add it: also a name
// alone), "-" (take it out) or "=" (only it); "all" is every protocol.
// Names of protocols yaoki http does not speak (ftp) change nothing, as
// curl leaves out those it was built without.
func parseProto(v string, start protoSet) protoSet {
	p := start
	for _, tok := range strings.Split(v, ",") {
		tok = strings.TrimSpace(tok)
		op := byte('+')
		if tok != "" && strings.IndexByte("+-=", tok[0]) >= 0 {
			op, tok = tok[0], tok[1:]
		}
		var only protoSet
		switch strings.ToLower(tok) {
		case "all":
			only = protoSet{true, true}
		case "http":
			only.http = true
		case "https":
			only.https = true
		}
		switch op {
		case '=':
			p = only
		case '+':
			p.http, p.https = p.http || only.http, p.https || only.https
		case '-':
			p.http, p.https = p.http && !only.http, p.https && !only.https
		}
	}
	return p
}

// errProtoDisabled is a redirect to a protocol that --proto or
// --proto-redir leaves out: curl's exit 1.
type errProtoDisabled struct{ scheme, flag string }

func (e *errProtoDisabled) Error() string {
	return fmt.Sprintf("protocol %q not allowed by %s", e.scheme, e.flag)
}

// checkProto refuses a redirect to a protocol --proto or --proto-redir
// leaves out.
func (o *httpOptions) checkProto(req *http.Request) error {
	if !o.protos.allows(req.URL.Scheme) {
		return &errProtoDisabled{scheme: req.URL.Scheme, flag: "--proto " + o.protoFlag}
	}
	if !o.protosRedir.allows(req.URL.Scheme) {
		return &errProtoDisabled{scheme: req.URL.Scheme, flag: "--proto-redir " + o.protoRedirFlag}
	}
	return nil
}

// tlsVersions maps --tls-max's values and the --tlsv1.N flags to Go's.
var tlsVersions = map[string]uint16{
	"1.0": tls.VersionTLS10, "1.1": tls.VersionTLS11, "1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13,
}

// tlsMinFlag is --tlsv1.N: it makes TLS 1.N the oldest version spoken.
type tlsMinFlag struct {
	dst     *string
	version string
}

func (f tlsMinFlag) String() string { return "false" }
func (f tlsMinFlag) Type() string   { return "bool" }
func (f tlsMinFlag) IsBoolFlag() bool {
	return true
}

func (f tlsMinFlag) Set(v string) error {
	switch v {
	case "true":
		*f.dst = f.version
	case "false":
	default:
		return fmt.Errorf("a switch: give it alone")
	}
	return nil
}

// tlsConfig sets the TLS versions --tlsv1.N and --tls-max ask for, and
// -E's client certificate, on c,
// which may be nil; it returns c, or a new config when versions are set.
func (o *httpOptions) tlsConfig(c *tls.Config) *tls.Config {
	if o.tlsMin == "" && (o.tlsMax == "" || o.tlsMax == "default") && o.clientCert == nil {
		return c
	}
	if c == nil {
		c = &tls.Config{}
	}
	if v, ok := tlsVersions[o.tlsMin]; ok {
		c.MinVersion = v
	}
	if v, ok := tlsVersions[o.tlsMax]; ok {
		c.MaxVersion = v
	}
	if o.clientCert != nil {
		c.Certificates = []tls.Certificate{*o.clientCert}
	}
	return c
}
