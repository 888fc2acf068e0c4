package policy_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
)

// TestParseErrorFlood: a document just under MaxDocumentSize made of
// half a million bad values ([1,1,1,...], all on one line) took about
// two minutes and 700 MB to parse: every error was reported, each one
// counting the lines before it from the start of the file, into an error
// text of 45 MB. The errors reported are bounded, the last one saying how
// many more there are, so such a file is refused at once with an error a
// terminal can show. (A quarter of the size here keeps the test fast;
// it took 12 s before.)
func TestParseErrorFlood(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("[")
	for b.Len() < policy.MaxDocumentSize/4 {
		b.WriteString("1,")
	}
	b.WriteString(`{"ErrorEquals": ["States.ALL"]}]`)
	_, err := policy.ParseFile("flood.json", b.Bytes())
	var first *policy.Error
	if !errors.As(err, &first) || first.Line != 1 || first.Column != 2 || first.Path != "Retry[0]" {
		t.Fatalf("first error %v, want Retry[0] at flood.json:1:2", err)
	}
	msg := err.Error()
	if len(msg) > 64<<10 {
		t.Errorf("the error text is %d bytes, want it bounded (a few kilobytes)", len(msg))
	}
	if !strings.Contains(msg, "more errors not shown") {
		t.Errorf("the error text does not say that more errors were left out; it ends %q", msg[max(0, len(msg)-200):])
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n > 101 {
		t.Errorf("%d errors joined, want at most 101", n)
	}
}

// manyKeys returns an object of distinct keys "0", "1", ... about size
// bytes long, one per line, ending with the key last.
func manyKeys(size int, last string) []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	for i := 0; b.Len() < size; i++ {
		b.WriteString(`"` + strconv.Itoa(i) + "\": 0,\n")
	}
	b.WriteString(`"` + last + `": 0}`)
	return b.Bytes()
}

// TestDuplicateKeyAmongMany: a key repeated in an object of many keys,
// or of a few, is found, at its second place. (An object of 115 000 keys
// took 14 s to parse, each key compared with all those before it; see
// BenchmarkParseManyKeys.)
func TestDuplicateKeyAmongMany(t *testing.T) {
	for _, doc := range [][]byte{
		manyKeys(1000, "3"),
		manyKeys(policy.MaxDocumentSize/4, "3"),
		[]byte(`{"a": 1, "b": 2, "a": 3}`),
		manyKeys(100, "11"), // keys 0 to 11: one scan of the keys
		manyKeys(200, "0"),  // keys 0 to 23: the map of the keys
		manyKeys(200, "15"),
		manyKeys(200, "16"),
	} {
		_, err := policy.Parse(doc)
		var pe *policy.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "appears twice") {
			t.Errorf("%.40q…: %v, want the key that appears twice", doc, err)
			continue
		}
		if want := bytes.Count(doc, []byte("\n")) + 1; pe.Line != want {
			t.Errorf("%.40q…: error at line %d, want %d (the last)", doc, pe.Line, want)
		}
	}
	if _, err := policy.Parse(manyKeys(1000, "x")); err == nil || strings.Contains(err.Error(), "appears twice") {
		t.Errorf("distinct keys: %v, want only unknown fields", err)
	}
}

// With 101 errors, the last line counts one more error.
func TestParseErrorFloodOneMore(t *testing.T) {
	doc := "[" + strings.Repeat("1,", 100) + "1]"
	_, err := policy.ParseFile("f.json", []byte(doc))
	if err == nil || !strings.HasSuffix(err.Error(), "policy: f.json: 1 more error not shown: fix these first") {
		t.Errorf("error %v, want it to end with the one more error not shown", err)
	}
	if _, err := policy.Parse([]byte("[" + strings.Repeat("1,", 99) + "1]")); err == nil || strings.Contains(err.Error(), "not shown") {
		t.Errorf("100 errors: %v, want all shown", err)
	}
}
