package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// -E/--cert FILE and --key FILE present a client certificate (PEM; the
// key in FILE itself when --key is not given), as curl 7.88, to a server
// that asks for one (mutual TLS); a file that holds none exits 58.
func TestHTTPClientCertLikeCurl(t *testing.T) {
	client := selfSigned(t)
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: client.Certificate[0]})
	der, err := x509.MarshalPKCS8PrivateKey(client.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	certFile, keyFile := write("cert.pem", certPEM), write("key.pem", keyPEM)
	both := write("both.pem", append(append([]byte(nil), certPEM...), keyPEM...))
	junk := write("junk.pem", []byte("not a certificate\n"))

	// The server answers with the common name of the certificate it got.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, ClientAuth: tls.RequestClientCert})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c *tls.Conn) {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				cn := "none"
				if peers := c.ConnectionState().PeerCertificates; len(peers) > 0 {
					cn = peers[0].Subject.CommonName
				}
				body := "client: " + cn + "\n"
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
			}(c.(*tls.Conn))
		}
	}()
	url := "https://" + ln.Addr().(*net.TCPAddr).String() + "/"
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, 0, "client: none\n"},
		{[]string{"--cert", certFile, "--key", keyFile}, 0, "client: yaoki e2e\n"},
		{[]string{"-E", both}, 0, "client: yaoki e2e\n"},
		{[]string{"-E", junk}, 58, ""},
		{[]string{"--cert", certFile, "--key", junk}, 58, ""},
	} {
		args := append(append([]string{"-sSk", "--retry", "0"}, tc.args...), url)
		y := run(t, nil, append([]string{"http"}, args...)...)
		c := runCurl(t, args...)
		if y.code != tc.code || c.code != tc.code || y.stdout != tc.out || c.stdout != tc.out {
			t.Errorf("%q: yaoki exit %d %q, curl %d %q; want %d %q\nyaoki: %s\ncurl: %s", tc.args, y.code, y.stdout, c.code, c.stdout, tc.code, tc.out, y.stderr, c.stderr)
		}
	}
}
