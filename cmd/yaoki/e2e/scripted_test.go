package e2e

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// answer is one scripted answer: a raw HTTP/1.1 response, or a fault.
type answer struct {
	status  int
	headers map[string]string
	body    string
	reset   bool          // close the connection with a TCP reset, no answer
	close   bool          // close the connection cleanly, no answer (an empty reply)
	cut     bool          // close the connection once the answer is written (a Content-Length header longer than the body cuts it short)
	delay   time.Duration // wait before answering
	wire    string        // when set, the answer as written on the wire, as is (headers in the server's order and case), for any method
}

// raw is the answer as bytes on the wire: the status line, the headers
// sorted by name (the order net/http's Header.Write gives them, so that
// curl's -i output and yaoki's can be compared byte for byte), a
// Content-Length, the body.
func (a answer) raw() []byte {
	h := map[string]string{"Content-Length": fmt.Sprint(len(a.body))}
	for k, v := range a.headers {
		h[k] = v
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", a.status, http.StatusText(a.status))
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s\r\n", k, h[k])
	}
	b.WriteString("\r\n")
	b.WriteString(a.body)
	return []byte(b.String())
}

// seen is a request as the scripted server received it.
type seen struct {
	method, uri string
	host        string // the Host header (net/http keeps it out of header)
	header      http.Header
	body        string
}

// scripted is an HTTP/1.1 server on a loopback port that answers the
// requests it gets with its script, in order, the last answer repeating;
// it writes its answers as raw bytes and records each request.
type scripted struct {
	url    string
	cert   []byte // with TLS: the server's certificate, DER
	ln     net.Listener
	mu     sync.Mutex
	script []answer
	next   int
	got    []seen
	wg     sync.WaitGroup
}

// startScripted starts a scripted server over plain TCP, or TLS with a
// self-signed certificate when tlsOn. It stops at the end of the test.
func startScripted(t *testing.T, tlsOn bool, script ...answer) *scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{ln: ln, script: script, url: "http://" + ln.Addr().String() + "/"}
	if tlsOn {
		cert := selfSigned(t)
		s.cert = cert.Certificate[0]
		s.ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
		s.url = "https://" + ln.Addr().String() + "/"
	}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() { s.ln.Close(); s.wg.Wait() })
	return s
}

// restart sends the next request to the script's first answer again and
// forgets the requests seen.
func (s *scripted) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next, s.got = 0, nil
}

func (s *scripted) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.got...)
}

func (s *scripted) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.conn(c)
		}()
	}
}

func (s *scripted) conn(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		req, err := readRequest(rd)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.got = append(s.got, req)
		a := s.script[min(s.next, len(s.script)-1)]
		s.next++
		s.mu.Unlock()
		if a.delay > 0 {
			time.Sleep(a.delay) // the server is slow on purpose: the client's timeout is under test
		}
		switch {
		case a.reset:
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			return
		case a.close:
			return
		}
		out := a.raw()
		if a.wire != "" {
			out = []byte(a.wire)
		} else if req.method == http.MethodHead {
			out = out[:strings.Index(string(out), "\r\n\r\n")+4]
		}
		if _, err := c.Write(out); err != nil || a.cut {
			return
		}
	}
}

// readRequest reads one HTTP/1.1 request as it came. (net/http's
// ReadRequest refuses a request target that is not a valid URI, such as
// "/a%zz", which curl and yaoki http send as written.)
func readRequest(rd *bufio.Reader) (seen, error) {
	tp := textproto.NewReader(rd)
	line, err := tp.ReadLine()
	if err != nil {
		return seen{}, err
	}
	method, rest, ok1 := strings.Cut(line, " ")
	uri, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !strings.HasPrefix(proto, "HTTP/1.") {
		return seen{}, fmt.Errorf("malformed request line %q", line)
	}
	mh, err := tp.ReadMIMEHeader()
	if err != nil {
		return seen{}, err
	}
	h := http.Header(mh)
	var body io.Reader = strings.NewReader("")
	chunked := strings.EqualFold(h.Get("Transfer-Encoding"), "chunked")
	switch cl := h.Get("Content-Length"); {
	case chunked:
		body = httputil.NewChunkedReader(rd)
	case cl != "":
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < 0 {
			return seen{}, fmt.Errorf("bad Content-Length %q", cl)
		}
		body = io.LimitReader(rd, n)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return seen{}, err
	}
	if chunked { // the trailer section, empty or not
		if _, err := tp.ReadMIMEHeader(); err != nil {
			return seen{}, err
		}
	}
	host := h.Get("Host")
	h.Del("Host")
	return seen{method: method, uri: uri, host: host, header: h, body: string(b)}, nil
}

// selfSigned makes a certificate for 127.0.0.1 that no one trusts.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "yaoki e2e"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
