package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

func TestProxyDotSegmentsRefused(t *testing.T) {
	// The fault: a route takes the prefix /public/ to an upstream whose
	// base path is /v2, and a client asks for /public/../private/x (or
	// writes the dots or the slash percent-encoded, or a backslash that
	// some servers take for a slash). The path matched the route's
	// prefix, went upstream as /v2/public/../private/x, and the upstream,
	// resolving the dot-segments, served /v2/private/x: a part of it the
	// route does not take, or, with one more "..", outside its base path.
	// A path with a ".." segment is refused with 400, and the upstream
	// sees nothing; a ".." inside a segment name is an ordinary path.
	var mu sync.Mutex
	var seen []string
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			mu.Lock()
			seen = append(seen, req.RequestURI)
			mu.Unlock()
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	front := routeFront(t, url+"/v2", Route{Path: "/public/"})
	for _, target := range []string{
		"/public/../private/x",
		"/public/../../admin",
		"/public/%2e%2e/private/x",
		"/public/.%2E/private/x",
		"/public/..%2Fprivate/x",
		"/public/a%2F..%2F..%2Fprivate",
		"/public/..\\private/x",
		"/public/..",
	} {
		resp, body := rawExchange(t, front.URL, fmt.Sprintf("GET %s HTTP/1.1\r\nHost: api.local\r\n\r\n", target))
		if resp.StatusCode != 400 || !strings.Contains(body, `"reason":"bad_request_path"`) || !strings.Contains(body, "..") || resp.Header.Get("Do-Not-Retry") != "true" {
			t.Errorf("%s: got %d %s, want 400 problem+json bad_request_path naming the dot-segment, Do-Not-Retry", target, resp.StatusCode, body)
		}
	}
	for _, target := range []string{"/public/a..b/x", "/public/..hidden", "/public/./x", "/public/x.."} {
		resp, body := rawExchange(t, front.URL, fmt.Sprintf("GET %s HTTP/1.1\r\nHost: api.local\r\n\r\n", target))
		if resp.StatusCode != 200 || body != "ok" {
			t.Errorf("%s: got %d %s, want the upstream's 200", target, resp.StatusCode, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "[/v2/public/a..b/x /v2/public/..hidden /v2/public/./x /v2/public/x..]"; fmt.Sprint(seen) != want {
		t.Errorf("the upstream saw %v, want only %s", seen, want)
	}
}

func TestHasDotDotSegment(t *testing.T) {
	for path, want := range map[string]bool{
		"/": false, "": false, "*": false, "/a/b": false, "/a..b": false, "/...": false, "/.": false,
		"/..": true, "/../": true, "/a/../b": true, "..": true, "/a/..\\b": true, "/a\\..\\b": true, "/a\\..": true,
	} {
		if got := hasDotDotSegment(path); got != want {
			t.Errorf("hasDotDotSegment(%q) = %v, want %v", path, got, want)
		}
	}
}
