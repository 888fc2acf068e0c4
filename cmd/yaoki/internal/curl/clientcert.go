package curl

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"
)

// loadClientCert reads -E/--cert's certificate and --key's private key
// (from -E's FILE when --key is not given), both PEM, as curl 7.88 reads
// them for a server that asks for a client certificate. A file that
// cannot be read or holds no certificate or key exits 58, curl's code
// for a problem with the local certificate.
func (o *httpOptions) loadClientCert() error {
	if o.certFile == "" {
		if o.keyFile != "" {
			return o.failWith(curlLocalCert, "--key without -E/--cert: give the certificate with -E FILE")
		}
		return nil
	}
	if strings.Contains(o.certFile, ":") {
		if _, err := os.Stat(o.certFile); err != nil {
			return o.failWith(curlLocalCert, fmt.Sprintf("-E %s: a pass phrase after ':' is not taken: yaoki http reads keys that are not encrypted", o.certFile))
		}
	}
	certPEM, err := os.ReadFile(o.certFile)
	if err != nil {
		return o.failWith(curlLocalCert, fmt.Sprintf("could not load PEM client certificate from %s: %v", o.certFile, err))
	}
	keyPEM, keyFrom := certPEM, o.certFile
	if o.keyFile != "" {
		if keyPEM, err = os.ReadFile(o.keyFile); err != nil {
			return o.failWith(curlLocalCert, fmt.Sprintf("unable to set private key file: %s: %v", o.keyFile, err))
		}
		keyFrom = o.keyFile
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return o.failWith(curlLocalCert, fmt.Sprintf("could not load PEM client certificate from %s with the key of %s: %v (want PEM: CERTIFICATE, and a PRIVATE KEY not encrypted)", o.certFile, keyFrom, err))
	}
	o.clientCert = &cert
	return nil
}
