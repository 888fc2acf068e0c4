package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
)

// TestLoadTooLarge: a file larger than MaxDocumentSize (here one valid
// document padded with a long Comment) is refused with its name and the
// limit, and Load reads no more than the limit of it.
func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	doc := `{"Retry": [{"ErrorEquals": ["States.ALL"]}], "Comment": "` + strings.Repeat("x", policy.MaxDocumentSize) + `"}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := policy.Load(path)
	if !errors.Is(err, policy.ErrInvalidDocument) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "1048576 bytes") {
		t.Fatalf("Load of a %d-byte file: %v, want a refusal naming the file and the limit", len(doc), err)
	}
	if _, err := policy.Parse([]byte(doc)); !errors.Is(err, policy.ErrInvalidDocument) {
		t.Fatalf("Parse of %d bytes: %v, want a refusal", len(doc), err)
	}
	small := doc[:len(doc)-policy.MaxDocumentSize+100] + `"}`
	if _, err := policy.Parse([]byte(small)); err != nil {
		t.Fatal(err)
	}
}
