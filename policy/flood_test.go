package policy_test

import (
	"bytes"
	"errors"
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
// terminal can show.
func TestParseErrorFlood(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("[")
	for b.Len() < policy.MaxDocumentSize-100 {
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
