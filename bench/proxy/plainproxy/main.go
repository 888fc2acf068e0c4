// Command plainproxy is the baseline of bench/proxy/run.sh: a plain
// httputil.ReverseProxy in front of one upstream, over an http.Transport
// set up as yaoki proxy's fallback transport is (512 idle connections per
// host, no transparent compression) and with a pool of copy buffers as
// yaoki proxy has. What the benchmark compares is then what yaoki proxy
// does differently: its routing, the retrying transport (httpretry), its
// headers, its own connection pool for requests without a body
// (cmd/yaoki/internal/proxy/upstream.go) and its garbage collector setting.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	upstream := flag.String("upstream", "", "the upstream URL")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		fmt.Fprintf(os.Stderr, "plainproxy: --upstream %q: want an http URL\n", *upstream)
		os.Exit(2)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = 512
	t.DisableCompression = true
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = t
	rp.BufferPool = &buffers{}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/\n", ln.Addr())
	log.Fatal(http.Serve(ln, rp))
}

type buffers struct{ p sync.Pool }

func (b *buffers) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *buffers) Put(buf []byte) { b.p.Put(&buf) }
