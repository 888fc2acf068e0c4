package proxy

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// FuzzParseFrontRequest checks what parseFrontRequest takes against its
// rules, and against net/http's reading of the same bytes: a request the
// front end serves is one net/http's server would have read the same way
// (the same method, path, query, host and Connection: close), so that the
// two paths never disagree on what a request is.
func FuzzParseFrontRequest(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"HEAD /a/b?c=d&e=%20 HTTP/1.1\r\nHost: a.example:8080\r\nConnection: close\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: [::1]:80\r\nAccept: */*\r\nUser-Agent: curl/8\r\n\r\n",
		"GET /a/./b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a/../b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a%2e%2e/b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a/b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: a\nX: y\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: a\r\nX: y\x00z\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\n",
		"GET /a HTTP/1.1\r\nhOsT: a\r\nConnection: keep-alive, close\r\n\r\n",
		"GET /a? HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a?b?c HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET //a/b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a HTTP/1.0\r\nHost: a\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET * HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: \r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: a\r\nX: \x80\xff\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		var r frontRequest
		if !parseFrontRequest(head, &r) {
			return
		}
		line, _, _ := strings.Cut(string(head), "\r\n")
		method, _, _ := strings.Cut(line, " ")
		if method != "GET" && method != "HEAD" || r.head != (method == "HEAD") {
			t.Fatalf("%q taken, method %q (head %v): want GET or HEAD", head, method, r.head)
		}
		if len(r.path) == 0 || r.path[0] != '/' {
			t.Fatalf("%q taken, path %q: want one that starts with /", head, r.path)
		}
		for _, c := range r.path {
			if !strings.ContainsRune("-._~!$&'()*+,;=:@/", rune(c)) && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				t.Fatalf("%q taken, path %q has %q: want unreserved, sub-delims, ':', '@' and '/' only", head, r.path, c)
			}
		}
		for _, seg := range strings.Split(string(r.path), "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q taken, path %q has a dot segment", head, r.path)
			}
		}
		hosts := 0
		for _, l := range strings.Split(string(head), "\r\n")[1:] {
			name, _, _ := strings.Cut(l, ":")
			switch strings.ToLower(name) {
			case "host":
				hosts++
			case "content-length", "transfer-encoding", "upgrade", "expect", "te", "trailer", "via", "attempt-count",
				"idempotency-key", "x-idempotency-key":
				t.Fatalf("%q taken, with a %s field: want it handed over", head, name)
			}
		}
		if hosts != 1 {
			t.Fatalf("%q taken with %d Host fields, want 1", head, hosts)
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("%q taken, but net/http does not read it: %v", head, err)
		}
		if req.Method != method || req.URL.Path != string(r.path) || req.URL.EscapedPath() != string(r.path) || req.URL.RawQuery != string(r.query) ||
			req.Host != string(r.host) || req.Close != r.close {
			t.Fatalf("%q: front end %s path %q query %q host %q close %v; net/http %s path %q (escaped %q) query %q host %q close %v",
				head, method, r.path, r.query, r.host, r.close, req.Method, req.URL.Path, req.URL.EscapedPath(), req.URL.RawQuery, req.Host, req.Close)
		}
		for _, fl := range r.fields {
			if !fl.send {
				continue
			}
			vs := req.Header.Values(string(fl.name))
			found := false
			for _, v := range vs {
				found = found || v == string(fl.value)
			}
			if !found {
				t.Fatalf("%q: the front end sends %s: %q, net/http read %q", head, fl.name, fl.value, vs)
			}
		}
	})
}

// FuzzFrontResponseRead checks frontResponse.read against
// http.ReadResponse on the same bytes: an answer head the front end reads
// is one net/http reads too, with the same status and the same framing of
// its body (none, a length, chunked, or to the connection's end). Where
// the front end is stricter (a status line of HTTP/1.x only, a status
// from 100, no control character in a value) it fails the attempt, as
// net/http fails it for what it refuses.
func FuzzFrontResponseRead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X\r\n\r\n2\r\nok\r\n0\r\nX: y\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\n\r\nbody",
		"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\n X: a\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
		"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
		"HTTP/2.0 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: \x00\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTrailer: Transfer-Encoding\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX\x7f: a\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX:\ta\x80\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length:  7 \r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0x7\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding:  Chunked \r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching\r\n\r\n",
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 205 Reset Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A : 1\r\n b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nX (a: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 02\r\n\r\nok",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, head bool) {
		var r frontResponse
		if err := r.read(bufio.NewReader(bytes.NewReader(b)), head); err != nil {
			return
		}
		if len(statusLines) <= r.code || statusLines[r.code] == nil {
			t.Fatalf("%q read, status %d: the front end has no status line to relay it with", b, r.code)
		}
		method := "GET"
		if head {
			method = "HEAD"
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%q read by the front end (status %d), not by net/http: %v", b, r.code, err)
		}
		if resp.StatusCode != r.code {
			t.Fatalf("%q: front end status %d, net/http %d", b, r.code, resp.StatusCode)
		}
		if r.code < 200 {
			return // the front end reads the next answer; net/http's caller does
		}
		chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
		noBody := resp.Body == http.NoBody
		switch r.body {
		case bodyNone:
			if !noBody {
				t.Fatalf("%q: the front end reads no body, net/http reads one (length %d, chunked %v)", b, resp.ContentLength, chunked)
			}
		case bodyLength:
			if chunked || resp.ContentLength != r.length || noBody != (r.length == 0) {
				t.Fatalf("%q: the front end reads a body of %d bytes; net/http length %d, chunked %v", b, r.length, resp.ContentLength, chunked)
			}
		case bodyChunked:
			if !chunked || noBody {
				t.Fatalf("%q: the front end reads a chunked body; net/http length %d, transfer encoding %q", b, resp.ContentLength, resp.TransferEncoding)
			}
		case bodyToClose:
			if chunked || noBody || resp.ContentLength != -1 || !resp.Close {
				t.Fatalf("%q: the front end reads the body to the close; net/http length %d, chunked %v, close %v", b, resp.ContentLength, chunked, resp.Close)
			}
		}
		if r.close && !resp.Close && r.proto10 && resp.Header["Transfer-Encoding"] != nil {
			// An HTTP/1.0 answer with Transfer-Encoding: net/http keeps
			// its connection when it says keep-alive; the front end
			// closes it, as RFC 9112 §6.1 asks of a faulty framing.
			return
		}
		if r.close != resp.Close {
			t.Fatalf("%q: the front end's close %v, net/http's %v", b, r.close, resp.Close)
		}
	})
}
