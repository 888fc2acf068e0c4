package credential

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedactedURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.test/v1/x":                                         "https://api.test/v1/x",
		"https://u:secret@api.test/x?page=2":                            "https://u:xxxxx@api.test/x?page=2",
		"https://api.test/x?page=2&api_key=s3cr3t&q=a%20b":              "https://api.test/x?page=2&api_key=xxxxx&q=a%20b",
		"https://api.test/x?API_KEY=s3cr3t":                             "https://api.test/x?API_KEY=xxxxx",
		"https://b.test/o?X-Amz-Credential=AK%2F1&X-Amz-Signature=ab12": "https://b.test/o?X-Amz-Credential=xxxxx&X-Amz-Signature=xxxxx",
		"https://api.test/x?access%5Ftoken=t0k3n":                       "https://api.test/x?access%5Ftoken=xxxxx",
		"https://api.test/x?password":                                   "https://api.test/x?password",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := RedactedURL(u); got != want {
			t.Errorf("RedactedURL(%s) = %s, want %s", in, got, want)
		}
		if u.String() != in && !strings.Contains(in, "%5F") {
			t.Errorf("RedactedURL changed its argument: %s", u)
		}
	}
	if RedactedURL(nil) != "" {
		t.Error("RedactedURL(nil) is not empty")
	}
}

// FuzzRedactedURL: every credential parameter's value is Hidden in what
// RedactedURL writes, and every other part of the query is kept.
func FuzzRedactedURL(f *testing.F) {
	f.Add("https://api.test/x?api_key=s3cr3tvalue&page=2")
	f.Add("https://u:p@h/x?X-Amz-Signature=abcdef")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || u.RawQuery == "" {
			return
		}
		got := RedactedURL(u)
		_, q, _ := strings.Cut(got, "?")
		q, _, _ = strings.Cut(q, "#")
		in, out := strings.Split(u.RawQuery, "&"), strings.Split(q, "&")
		if len(in) != len(out) {
			t.Fatalf("RedactedURL(%q) = %q: %d query parts, want %d", raw, got, len(out), len(in))
		}
		for i, part := range in {
			name, _, hasValue := strings.Cut(part, "=")
			want := part
			if hasValue && Query(QueryName(part)) {
				want = name + "=" + Hidden
			}
			if out[i] != want {
				t.Fatalf("RedactedURL(%q) = %q: part %d is %q, want %q", raw, got, i, out[i], want)
			}
		}
	})
}
