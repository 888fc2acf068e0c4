package idempotency_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

func TestParseKey(t *testing.T) {
	long := strings.Repeat("k", idempotency.MaxKeyLen)
	for _, tc := range []struct {
		in, want string
		why      string // empty when valid; else a word the error must contain
	}{
		{in: "abc", want: "abc"},
		{in: `"abc"`, want: "abc"},
		{in: "  abc\t", want: "abc"},
		{in: `8e03978e-40d5-43e8-bc93-6894a57f9324`, want: "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{in: `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, want: "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{in: `"a \"quoted\" \\ key"`, want: `a "quoted" \ key`},
		{in: `a b`, want: "a b"},
		{in: long, want: long},
		{in: `"` + long + `"`, want: long},
		{in: `ab"c`, want: `ab"c`}, // bare: any printable ASCII
		{in: "", why: "empty"},
		{in: "   ", why: "empty"},
		{in: `""`, why: "empty"},
		{in: long + "k", why: "256 bytes"},
		{in: `"` + long + `k"`, why: "256 bytes"},
		{in: "caf\xc3\xa9", why: "not printable ASCII"},
		{in: "a\x00b", why: "not printable ASCII"},
		{in: "a\x7fb", why: "not printable ASCII"},
		{in: `"a` + "\x01" + `"`, why: "not printable ASCII"},
		{in: `"abc`, why: "unterminated"},
		{in: `"abc\"`, why: "unterminated"},
		{in: `"abc\`, why: "unterminated"},
		{in: `"a\bc"`, why: "invalid escape"},
		{in: `"abc";p=1`, why: "parameters"},
		{in: `"a", "b"`, why: "after the closing quote"},
		{in: `a, b`, why: "two keys joined"},
		{in: `a,b`, why: "comma"},
		{in: `"a, b"`, want: "a, b"}, // one quoted key may hold a comma
	} {
		got, err := idempotency.ParseKey(tc.in)
		if tc.why == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseKey(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		var ke *idempotency.KeyError
		if err == nil || !errors.Is(err, idempotency.ErrMalformedKey) || !errors.As(err, &ke) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("ParseKey(%q) = %q, %v; want a KeyError saying %q", tc.in, got, err, tc.why)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"abc", `"abc"`, `"a\"b\\c"`, `""`, `"abc`, `"a\x"`, "\xff", `"a";b`, " x ", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		key, err := idempotency.ParseKey(in)
		if err != nil {
			if !errors.Is(err, idempotency.ErrMalformedKey) || key != "" {
				t.Fatalf("ParseKey(%q) = %q, %v: an error must match ErrMalformedKey and come with no key", in, key, err)
			}
			return
		}
		if len(key) == 0 || len(key) > idempotency.MaxKeyLen {
			t.Fatalf("ParseKey(%q) = %q: length %d out of [1, %d]", in, key, len(key), idempotency.MaxKeyLen)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("ParseKey(%q) = %q: byte %d not printable ASCII", in, key, i)
			}
		}
		// A key sent quoted parses back to itself.
		q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if again, err := idempotency.ParseKey(q); err != nil || again != key {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q back", q, again, err, key)
		}
		// A bare key that does not start with a quote, has no edge
		// spaces and no comma parses to itself too.
		if key[0] != '"' && key[0] != ' ' && key[len(key)-1] != ' ' && !strings.Contains(key, ",") {
			if again, err := idempotency.ParseKey(key); err != nil || again != key {
				t.Fatalf("ParseKey(%q) = %q, %v; want it back", key, again, err)
			}
		}
	})
}
