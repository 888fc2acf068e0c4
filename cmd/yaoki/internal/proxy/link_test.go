package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"strings"
	"testing"
)

func TestProxyLinkFollowed(t *testing.T) {
	// The fault: a paginated API at a base path (/v2) gives the next page
	// in a Link field (RFC 8288), written in its own space. The client
	// followed </v2/items?page=2> through the proxy to /v2/v2/items, and
	// an absolute link past the proxy. Links into the upstream point the
	// client through the proxy, as Location does; the others, and the
	// parameters, are kept as they came.
	var self string
	saw := make(chan string, 4)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			saw <- req.RequestURI
			link := fmt.Sprintf(`<%s/v2/items?page=2>; rel="next", </v2/items?page=9>; rel="last"; title="a, b <c>", <https://docs.example/items>; rel="help"`, self)
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nLink: %s\r\nContent-Length: 2\r\n\r\nok", link)
		}
	})
	self = url
	front := proxyFront(t, url+"/v2")
	resp, err := front.Client().Get(front.URL + "/items")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	<-saw
	want := `</items?page=2>; rel="next", </items?page=9>; rel="last"; title="a, b <c>", <https://docs.example/items>; rel="help"`
	if got := resp.Header.Get("Link"); got != want {
		t.Fatalf("Link %s\nwant %s", got, want)
	}
	// The client follows the next link, resolved against its request.
	next, _ := neturl.Parse(strings.TrimPrefix(strings.Split(want, ">")[0], "<"))
	resp, err = front.Client().Get(resp.Request.URL.ResolveReference(next).String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-saw; got != "/v2/items?page=2" {
		t.Errorf("the next page reached the upstream as %s, want /v2/items?page=2", got)
	}
}

func TestClientLinks(t *testing.T) {
	up, _ := neturl.Parse("http://up:9000/v2")
	for _, c := range []struct{ in, want string }{
		{`</v2/a>; rel=next`, `</a>; rel=next`},
		{`<http://up:9000/v2/a>;rel="x",<http://up:9000/v2/b>`, `</a>;rel="x",</b>`},
		{`<http://other/v2/a>; rel=next`, `<http://other/v2/a>; rel=next`},
		{`  </v2/a> ; title="x,</v2/b>", </v2/c>`, `  </a> ; title="x,</v2/b>", </c>`},
		{`</v2/a>; title="q\"</v2/b>", </v2/c>`, `</a>; title="q\"</v2/b>", </c>`},
		{`</v2/a`, `</v2/a`},     // no closing >: as it came
		{`rel=next`, `rel=next`}, // not a link: as it came
		{`</v2/a>; t="open, </v2/b>`, `</a>; t="open, </v2/b>`},
		{``, ``},
	} {
		if got := clientLinks(up, c.in); got != c.want {
			t.Errorf("clientLinks(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzClientLinks(f *testing.F) {
	for _, s := range []string{`</v2/a>; rel=next, <http://up:9000/v2/b>`, `<x>;t="a\"<b>",<c>`, `<`, `">`} {
		f.Add(s)
	}
	up, _ := neturl.Parse("http://up:9000/v2")
	none, _ := neturl.Parse("http://nowhere.invalid")
	f.Fuzz(func(t *testing.T, v string) {
		if got := clientLinks(none, v); got != v {
			t.Fatalf("clientLinks(%q) for an upstream no link points to = %q, want it unchanged", v, got)
		}
		got := clientLinks(up, v)
		if strings.Count(got, ",") != strings.Count(v, ",") || strings.Count(got, ";") != strings.Count(v, ";") {
			t.Fatalf("clientLinks(%q) = %q: its separators changed", v, got)
		}
	})
}
