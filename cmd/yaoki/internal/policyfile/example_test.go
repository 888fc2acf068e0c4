package policyfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/policyfile"
)

// A YAML policy file whose retrier names 404: the statuses a transport
// retries are the defaults and 404.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "policyfile")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "partner.yaml")
	doc := "Retry:\n  - ErrorEquals: [HTTP.404, HTTP.503]\n    MaxAttempts: 4\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	d, err := policyfile.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	statuses := policyfile.Statuses(d)
	slices.Sort(statuses)
	fmt.Println(d.Attempts(), statuses)
	// Output: 5 [404 408 429 500 502 503 504]
}
