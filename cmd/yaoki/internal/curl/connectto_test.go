package curl

import "testing"

func TestConnectTo(t *testing.T) {
	o := &httpOptions{connectToFlag: []string{"a.test:80:127.0.0.1:8080", "b.test::10.0.0.1:", ":443:[::1]:8443", "::c.test:9"}}
	if err := o.parseConnectTo(); err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"a.test:80":   "127.0.0.1:8080",
		"A.TEST:80":   "127.0.0.1:8080",
		"a.test:81":   "c.test:9",
		"b.test:1234": "10.0.0.1:1234",
		"x.test:443":  "[::1]:8443",
		"[::2]:80":    "c.test:9",
	} {
		if got := o.connectAddr(addr); got != want {
			t.Errorf("connectAddr(%q) = %q, want %q", addr, got, want)
		}
	}
	for _, bad := range []string{"foo", "a:b:c:d", "a:80:b", "a:80:b:99999", "[::1:80:b:1", "a:80:b:1:2"} {
		o := &httpOptions{connectToFlag: []string{bad}}
		if err := o.parseConnectTo(); err == nil {
			t.Errorf("--connect-to %q: no error", bad)
		}
	}
}
