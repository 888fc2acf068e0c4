package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// oddAnswers are upstream answers at the edges of the framing and field
// rules, for TestFrontOddAnswersAsNetHTTP. (A 1xx is in
// TestFrontRelaysEachFraming: diffRun reads the first answer only, and
// closes while the final one is relayed.)
var oddAnswers = []diffCase{
	{name: "304 with a type and a length", request: "GET /n HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 304 Not Modified\r\nContent-Type: text/html\r\nContent-Length: 10\r\nETag: \"x\"\r\n\r\n"}},
	{name: "204 with a length", request: "GET /n HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n"}},
	{name: "HEAD of a chunked answer with a length", request: "HEAD /h HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"}},
	{name: "HEAD of a chunked answer with a trailer", request: "HEAD /h HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n"}},
	{name: "a trailer announced on a sized answer", request: "GET /t HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "a trailer naming Content-Length", request: "GET /t HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n2\r\nok\r\n0\r\n\r\n"}},
	{name: "trailer fields not announced", request: "GET /t HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Late: 1\r\nConnection: X-Late\r\n\r\n"}},
	{name: "chunked and a length", request: "GET /c HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"}},
	{name: "two lengths spelled apart", request: "GET /l HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 02\r\n\r\nok"}},
	{name: "two equal lengths", request: "GET /l HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length:  2 \r\n\r\nok"}},
	{name: "Transfer-Encoding identity", request: "GET /l HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "HTTP/1.0 chunked", request: "GET /c HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"}},
	{name: "HTTP/1.0 kept alive", request: "GET /c HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "status 999", request: "GET /s HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 999 Odd\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "no reason phrase", request: "GET /s HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "bare LF lines", request: "GET /s HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: 1\n\nok"}},
	{name: "fields repeated and cased", request: "GET /f HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nx-a: 1\r\nX-A: 2\r\nX-Empty:\r\nX-Spaces:   s  \r\nContent-Length: 2\r\n\r\nok"}},
	{name: "a space before the colon", request: "GET /f HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nX-A : 1\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "obs-text in a value", request: "GET /f HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nX-A: caf\xe9\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "the answer closes", request: "GET /f HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "two Locations", request: "GET /f HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 302 Found\r\nLocation: /a\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n"}},
	{name: "a chunk extension and padded sizes", request: "GET /c HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n002;a=b\r\nok\r\n0 \r\n\r\n"}},
}

func TestFrontOddAnswersAsNetHTTP(t *testing.T) {
	// Each odd answer reaches the client as it does through net/http
	// alone (TestFrontSameAsNetHTTP's comparison).
	for _, c := range oddAnswers {
		t.Run(c.name, func(t *testing.T) {
			frontSaw, frontGot, frontEvents := diffRun(t, c, false)
			httpSaw, httpGot, httpEvents := diffRun(t, c, true)
			if frontGot != httpGot {
				t.Errorf("the client got, from the front end:\n%s\nfrom net/http:\n%s", frontGot, httpGot)
			}
			if frontSaw != httpSaw {
				t.Errorf("the upstream saw, from the front end:\n%s\nfrom net/http:\n%s", frontSaw, httpSaw)
			}
			if frontEvents != httpEvents {
				t.Errorf("the observer heard, from the front end:\n%s\nfrom net/http:\n%s", frontEvents, httpEvents)
			}
		})
	}
}

func TestFrontInformationalAsNetHTTP(t *testing.T) {
	// 1xx answers before the final one reach the client as through
	// net/http alone: which of them, with which fields.
	answers := map[string]string{
		"/100":  "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/102":  "HTTP/1.1 102 Processing\r\nX-A: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/103s": "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </b>\r\nX-Two: 2\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/199":  "HTTP/1.1 199 Odd\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\nConnection: X-H\r\nX-H: h\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	}
	url := answersByPath(t, answers)
	fp := newFrontProxy(t, url, Route{})
	netAddr := netHTTPProxy(t, url)
	for path := range answers {
		var got [2]string
		for i, addr := range []string{fp.addr, netAddr} {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
			io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: front\r\n\r\n")
			resp, body, early, err := readFinal(bufio.NewReader(c), "GET")
			c.Close()
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			for _, e := range append(early, resp) {
				delete(e.Header, "Date")
				got[i] += fmt.Sprintf("%s\n%s", e.Status, describeHeader(e.Header))
			}
			got[i] += "body " + body
		}
		if got[0] != got[1] {
			t.Errorf("GET %s: the client got, from the front end:\n%s\nfrom net/http:\n%s", path, got[0], got[1])
		}
	}
}
