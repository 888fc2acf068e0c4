package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
)

// A file saved with a UTF-8 byte order mark (Windows editors write one)
// loads as the same document, and positions count from the first
// character after the mark, as editors show them.
func TestParseByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	doc, err := policy.ParseFile("p.json", []byte(bom+`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}]}`))
	if err != nil {
		t.Fatalf("document with a byte order mark refused: %v", err)
	}
	if doc.Attempts() != 3 {
		t.Errorf("Attempts() = %d, want 3", doc.Attempts())
	}
	if _, err := policy.ParseFile("p.json", []byte(bom+`"Retry": [{"ErrorEquals": ["States.ALL"]}],`)); err != nil {
		t.Errorf("fragment with a byte order mark refused: %v", err)
	}
	_, err = policy.ParseFile("p.json", []byte(bom+`[{"ErrorEquals": ["States.ALL"], "MaxAttempts": -1}]`))
	var pe *policy.Error
	if !errors.As(err, &pe) {
		t.Fatalf("MaxAttempts -1 after a byte order mark: err %v, want a *policy.Error", err)
	}
	if pe.Line != 1 || pe.Column != 49 || pe.Offset != 48+3 {
		t.Errorf("position %d:%d offset %d, want 1:49 (after the mark) at byte 51 of the file", pe.Line, pe.Column, pe.Offset)
	}
	if _, err := policy.Parse([]byte(bom + "  \n")); err == nil || !strings.Contains(err.Error(), "the document is empty") {
		t.Errorf("a byte order mark alone: err %v, want the document is empty", err)
	}
}
