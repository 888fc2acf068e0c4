package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawExchange writes msg, one request as bytes, to the server at url and
// reads its answer, body and all.
func rawExchange(t *testing.T, url, msg string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func TestProxyClientBodyMalformed(t *testing.T) {
	// The fault: a client sends a chunked body whose chunk size is not a
	// number (a broken client, or a framing attack). Reading the body
	// fails in the proxy, not in the upstream: the client gets 400 with a
	// problem that says so, not 502 upstream_error, which blames the
	// upstream and invites a retry of the same broken request. A body
	// the proxy keeps for its retries is read before any attempt, so the
	// upstream sees nothing; one too long to keep is streamed, and the
	// attempt is cut before the upstream has a whole request.
	const malformed = "Transfer-Encoding: chunked\r\n\r\na\r\nhelloworld\r\nzz\r\nagain\r\n0\r\n\r\n"
	for _, c := range []struct {
		name    string
		maxBody int64
		method  string
	}{
		{"PUT, body kept for retries", 0, "PUT"},
		{"POST without key", 0, "POST"},
		{"PUT, body streamed once", 4, "PUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			upstreamGot := make(chan string, 4)
			url, _ := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
				for {
					req, ok := readRequest(t, br)
					if !ok {
						return
					}
					body, err := io.ReadAll(req.Body)
					if err != nil {
						upstreamGot <- "cut after " + string(body)
						return
					}
					upstreamGot <- string(body)
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			front := routeFront(t, url, Route{MaxBody: c.maxBody})

			resp, body := rawExchange(t, front.URL, c.method+" /x HTTP/1.1\r\nHost: front\r\n"+malformed)
			if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" ||
				!strings.Contains(body, `"reason":"bad_request_body"`) || !strings.Contains(body, "invalid byte in chunk length") {
				t.Errorf("got %d %s %s, want 400 problem+json bad_request_body saying what was wrong", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if v, ok := resp.Header["Do-Not-Retry"]; ok {
				t.Errorf("Do-Not-Retry %q on the client's own error, want none", v)
			}
			select {
			case got := <-upstreamGot:
				if !strings.HasPrefix(got, "cut after") {
					t.Errorf("the upstream got a whole request, body %q; want none, or one cut", got)
				}
			default:
			}
		})
	}
}
