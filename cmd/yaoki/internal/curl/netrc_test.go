package curl

import "testing"

func TestNetrcLogin(t *testing.T) {
	const text = "machine a.test login al password ap\n" +
		"machine B.test\n  login bl\n  password \"b p\\\"q\"\n" +
		"macdef init\ncd /\nlogin never\n\n" +
		"machine a.test login second password no\n" +
		"default login dl password dp\n"
	for _, tc := range []struct {
		text, host, login, password string
		ok                          bool
	}{
		{text, "a.test", "al", "ap", true},
		{text, "b.test", "bl", `b p"q`, true},
		{text, "c.test", "dl", "dp", true},
		{"machine a.test login al password ap\n", "c.test", "", "", false},
		{"", "a.test", "", "", false},
		{"machine", "a.test", "", "", false},
		{"machine a.test login", "a.test", "", "", false},
	} {
		login, password, ok := netrcLogin(tc.text, tc.host)
		if login != tc.login || password != tc.password || ok != tc.ok {
			t.Errorf("netrcLogin(%q, %q) = %q, %q, %v; want %q, %q, %v", tc.text, tc.host, login, password, ok, tc.login, tc.password, tc.ok)
		}
	}
}

// FuzzNetrcLogin checks that netrcLogin never panics nor loops.
func FuzzNetrcLogin(f *testing.F) {
	f.Add("machine a login b password \"c\\\"d\"\ndefault login x password y", "a")
	f.Add("macdef x\nmachine a\n\n", "a")
	f.Fuzz(func(t *testing.T, text, host string) {
		netrcLogin(text, host)
	})
}
