package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fault: request smuggling through a request that carries both
// Content-Length and Transfer-Encoding. An intermediary in front of the
// proxy that frames the request by its Content-Length, and the proxy (Go's
// net/http server, which removes the Content-Length and reads the body as
// chunked) disagree on where the request ends: what the one takes for the
// body, the other reads as a second request on the same connection, which
// it sends on as a request of its own. RFC 9112 §6.3: a server may process
// such a request as chunked, but MUST close the connection after
// responding; the bytes that follow are then never read as a request.

// smuggleUpstream is a loopback upstream that reads requests as bytes and
// reports each one (method, path and body), answering 200 "ok" to each,
// after a 103 Early Hints to /hinted.
func smuggleUpstream(t *testing.T) (url string, seen <-chan string) {
	t.Helper()
	got := make(chan string, 16)
	url, _ = rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				got <- req.Method + " " + req.URL.Path + " cut: " + err.Error()
				return
			}
			got <- req.Method + " " + req.URL.Path + " " + string(body)
			if req.URL.Path == "/hinted" {
				io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	return url, got
}

// exchangeAll writes msg to the server at url, reads its final answers
// until the connection ends, and reports whether it ended: closed is false
// when the connection was still open after a bound (each of the proxy's
// answers comes at once: its upstream answers at once), a wait that only
// a connection wrongly left open takes (10 s). With next, it sends next on the
// connection after the answers it expects (want) instead, and reads its
// answer: a connection rightly kept open is found without a wait.
func exchangeAll(t *testing.T, url, msg string, want int, next string) (answers []*http.Response, bodies []string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for {
		if next != "" && len(answers) == want {
			io.WriteString(c, next)
			next = ""
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			return answers, bodies, !(errors.As(err, &ne) && ne.Timeout())
		}
		if resp.StatusCode/100 == 1 {
			continue // an informational answer: the final one follows
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading answer %d's body: %v", len(answers)+1, err)
		}
		answers, bodies = append(answers, resp), append(bodies, string(b))
		if resp.Close {
			// The server said it closes: see that it does.
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := br.ReadByte()
			var ne net.Error
			return answers, bodies, !(errors.As(err, &ne) && ne.Timeout())
		}
		if next == "" && len(answers) > want {
			return answers, bodies, false
		}
	}
}

func TestProxyContentLengthAndChunked(t *testing.T) {
	// The first request's body is "hello" as chunked; framed by its
	// Content-Length, it takes the smuggled request's bytes too.
	const chunked = "5\r\nhello\r\n0\r\n\r\n"
	const smuggled = "GET /admin HTTP/1.1\r\nHost: front\r\n\r\n"
	for _, c := range []struct {
		name, method, path string
		route              Route
		want               int    // the first answer's status
		upstream           string // what the upstream sees: "" nothing
	}{
		{"PUT, body kept for retries", "PUT", "/upload", Route{}, 200, "PUT /upload hello"},
		{"POST without key, body sent once", "POST", "/upload", Route{}, 200, "POST /upload hello"},
		{"PUT, body streamed once", "PUT", "/upload", Route{MaxBody: 2}, 200, "PUT /upload hello"},
		{"after 103 Early Hints", "PUT", "/hinted", Route{}, 200, "PUT /hinted hello"},
		{"answered by the proxy (no route)", "PUT", "/upload", Route{Path: "/api/"}, 404, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, seen := smuggleUpstream(t)
			front := routeFront(t, url, c.route)
			msg := c.method + " " + c.path + " HTTP/1.1\r\nHost: front\r\nContent-Length: " + strconv.Itoa(len(chunked+smuggled)) +
				"\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + smuggled
			answers, bodies, closed := exchangeAll(t, front.URL, msg, 1, "")
			if len(answers) == 0 {
				t.Fatal("no answer to the request with Content-Length and Transfer-Encoding")
			}
			if got := answers[0].StatusCode; got != c.want || (c.want == 200 && bodies[0] != "ok") {
				t.Errorf("the first answer: %d %q, want %d (the request processed as chunked)", got, bodies[0], c.want)
			}
			if !answers[0].Close {
				t.Error("the answer has no Connection: close, want it (RFC 9112 §6.3)")
			}
			if !closed {
				t.Error("the connection stayed open after the answer, want it closed (RFC 9112 §6.3)")
			}
			if len(answers) > 1 {
				t.Errorf("the client got %d answers, want 1: the bytes after the chunked body were read as a request", len(answers))
			}
			var got []string
			for len(got) < 2 {
				select {
				case s := <-seen:
					got = append(got, s)
					continue
				default:
				}
				break
			}
			var want []string
			if c.upstream != "" {
				want = []string{c.upstream}
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("the upstream saw %q, want %q; never GET /admin", got, want)
			}
		})
	}
}

func TestProxyChunkedClosesConnection(t *testing.T) {
	// net/http removes the Content-Length of a request that also has
	// Transfer-Encoding before the handler sees it, so the proxy cannot
	// tell such a request from a chunked one: the connection of every
	// chunked request is closed after its answer. A client that sends a
	// request after a chunked one on the same connection gets the first
	// answer, with Connection: close, and sends the next again on a new
	// connection.
	url, seen := smuggleUpstream(t)
	front := routeFront(t, url, Route{})
	answers, _, closed := exchangeAll(t, front.URL, "PUT /upload HTTP/1.1\r\nHost: front\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+
		"GET /next HTTP/1.1\r\nHost: front\r\n\r\n", 1, "")
	if len(answers) != 1 || answers[0].StatusCode != 200 || !answers[0].Close || !closed {
		t.Errorf("got %d answers (the first with Connection: close: %v), connection closed: %v; want one, with close, and the connection closed",
			len(answers), len(answers) > 0 && answers[0].Close, closed)
	}
	if got := <-seen; got != "PUT /upload hello" {
		t.Errorf("the upstream saw %q, want PUT /upload with the body hello", got)
	}
	// A request without a chunked body keeps its connection: the one
	// after it, and a third sent once both are answered, are answered on
	// it.
	answers, _, _ = exchangeAll(t, front.URL, "PUT /upload HTTP/1.1\r\nHost: front\r\nContent-Length: 5\r\n\r\nhello"+
		"GET /next HTTP/1.1\r\nHost: front\r\n\r\n", 2, "GET /third HTTP/1.1\r\nHost: front\r\n\r\n")
	if len(answers) != 3 || answers[0].Close || answers[1].Close {
		t.Errorf("with Content-Length alone: %d answers on the connection, want 3, none closing it", len(answers))
	}
}

func TestProxyHTTP10TransferEncodingClosesConnection(t *testing.T) {
	// RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has
	// faulty framing, and its connection MUST be closed after it is
	// processed. net/http reads such a request by its Content-Length
	// (HTTP/1.0 has no chunks) and removes the Transfer-Encoding before
	// the proxy sees it; an intermediary in front that read the body as
	// chunked would take the bytes after the Content-Length for body, and
	// a request hidden there reached the upstream as one of its own on a
	// connection kept alive. net/http leaves no trace of the field, so the
	// connection of every HTTP/1.0 request is closed after its answer,
	// one that asks to keep it (Connection: keep-alive) too.
	url, seen := smuggleUpstream(t)
	front := routeFront(t, url, Route{})
	const smuggled = "GET /admin HTTP/1.0\r\nHost: front\r\n\r\n"
	answers, _, closed := exchangeAll(t, front.URL, "PUT /upload HTTP/1.0\r\nHost: front\r\nConnection: keep-alive\r\nContent-Length: 5\r\n"+
		"Transfer-Encoding: chunked\r\n\r\nhello"+smuggled, 1, "")
	if len(answers) != 1 || answers[0].StatusCode != 200 || !closed {
		t.Errorf("got %d answers, connection closed: %v; want one 200, and the connection closed", len(answers), closed)
	}
	var got []string
	for len(got) < 2 {
		select {
		case s := <-seen:
			got = append(got, s)
			continue
		default:
		}
		break
	}
	if strings.Join(got, "|") != "PUT /upload hello" {
		t.Errorf("the upstream saw %q, want one PUT /upload with the body hello; never GET /admin", got)
	}
	answers, _, closed = exchangeAll(t, front.URL, "GET /a HTTP/1.0\r\nHost: front\r\nConnection: keep-alive\r\n\r\n"+
		"GET /b HTTP/1.0\r\nHost: front\r\nConnection: keep-alive\r\n\r\n", 1, "")
	if len(answers) != 1 || !closed {
		t.Errorf("HTTP/1.0 keep-alive: %d answers on the connection (closed after: %v), want 1 and the connection closed", len(answers), closed)
	}
}
