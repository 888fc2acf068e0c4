package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestRelay sends requests through floorproxy to a loopback upstream:
// GETs come back with the upstream's answer over one kept connection, and
// a request with a body is refused with 501.
func TestRelay(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		io.WriteString(w, "ok "+r.URL.Path)
	}))
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pool{addr: strings.TrimPrefix(up.URL, "http://")}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.serve(c) // one client connection at a time is enough here
		}
	}()
	defer func() { ln.Close(); <-done }()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	base := "http://" + ln.Addr().String()
	for _, path := range []string{"/a", "/b"} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok "+path {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, body, "ok "+path)
		}
	}
	resp, err := client.Post(base+"/c", "text/plain", strings.NewReader("a body"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("POST with a body: %d, want 501", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "GET /a,GET /b"; strings.Join(seen, ",") != want {
		t.Errorf("upstream saw %q, want %q", strings.Join(seen, ","), want)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) != 1 {
		t.Errorf("%d idle upstream connections after two GETs in turn, want 1", len(p.idle))
	}
	for _, c := range p.idle {
		c.nc.Close()
	}
}
