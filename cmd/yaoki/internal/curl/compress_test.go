package curl

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/yaoki-go/yaoki/internal/leakcheck"
)

// TestMain fails the package's tests when a decoder (zstd's) or another
// goroutine is left running.
func TestMain(m *testing.M) { leakcheck.Main(m) }

func encodeWith(t testing.TB, enc string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "br":
		w = brotli.NewWriter(&b)
	case "zstd":
		z, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w = z
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func TestDecodeBody(t *testing.T) {
	plain := []byte(strings.Repeat("resume and retry\n", 50))
	gz := encodeWith(t, "gzip", plain)
	for _, tc := range []struct {
		name     string
		encoding string
		body     []byte
		bad      bool
	}{
		{name: "none", body: plain},
		{name: "identity", encoding: "identity", body: plain},
		{name: "br", encoding: "br", body: encodeWith(t, "br", plain)},
		{name: "zstd", encoding: "zstd", body: encodeWith(t, "zstd", plain)},
		{name: "upper case, spaces", encoding: " ZSTD ", body: encodeWith(t, "zstd", plain)},
		{name: "gzip then br", encoding: "gzip, br", body: encodeWith(t, "br", gz)},
		{name: "gzip then zstd", encoding: "gzip,zstd", body: encodeWith(t, "zstd", gz)},
		{name: "five: the most curl takes", encoding: "identity, identity, identity, identity, gzip", body: gz},
		{name: "six", encoding: "identity, identity, identity, identity, identity, gzip", body: gz, bad: true},
		{name: "unknown", encoding: "compress", body: plain, bad: true},
		{name: "zstd that is not", encoding: "zstd", body: plain, bad: true},
		{name: "br that is not", encoding: "br", body: plain, bad: true},
		{name: "zstd cut short", encoding: "zstd", body: encodeWith(t, "zstd", plain)[:20], bad: true},
		{name: "br in the wrong order", encoding: "br, gzip", body: encodeWith(t, "br", gz), bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, end, err := decodeBody(bytes.NewReader(tc.body), tc.encoding)
			defer end()
			var got []byte
			if err == nil {
				got, err = io.ReadAll(r)
			}
			if tc.bad {
				if !errors.Is(err, errDecode) {
					t.Fatalf("error %v, want one that is errDecode (exit 61)", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("got %d bytes, error %v; want the %d bytes encoded", len(got), err, len(plain))
			}
		})
	}
}

// FuzzDecodeBody reads any Content-Encoding list and body: it decodes
// them or fails with errDecode, and a body without encoding comes out
// as it went in.
func FuzzDecodeBody(f *testing.F) {
	f.Add("gzip, br", []byte("x"))
	f.Add("zstd", encodeWith(f, "zstd", []byte("hello")))
	f.Add("br", encodeWith(f, "br", []byte("hello")))
	f.Add(",,identity,", []byte("plain"))
	f.Fuzz(func(t *testing.T, encoding string, body []byte) {
		r, end, err := decodeBody(bytes.NewReader(body), encoding)
		defer end()
		if err == nil {
			var out []byte
			out, err = io.ReadAll(io.LimitReader(r, 1<<20))
			if err == nil && strings.Trim(encoding, " \t,") == "" && !bytes.Equal(out, body) {
				t.Fatalf("no encoding: got %q, want %q", out, body)
			}
		}
		if err != nil && !errors.Is(err, errDecode) {
			t.Fatalf("decodeBody(%q): error %v is not errDecode", encoding, err)
		}
	})
}
