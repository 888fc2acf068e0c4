// Package policyfile reads the policy documents the yaoki command is given
// (a Step Functions Retry document, in JSON or YAML) and derives from one
// what an HTTP transport needs. Its functions are safe for concurrent use.
package policyfile

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/policy"
)

// Load reads a policy file: YAML when its name ends in .yaml or
// .yml, JSON otherwise.
func Load(path string) (*policy.Document, error) {
	data, err := policy.ReadFile(path) // at most policy.MaxDocumentSize bytes
	var tooBig *policy.Error
	if errors.As(err, &tooBig) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the policy file: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		js, err := YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("policy: %s: %v", path, err)
		}
		return policy.ParseFile(path, js)
	}
	// A byte order mark is left to policy.ParseFile, which skips it.
	if t := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))); len(t) > 0 && !bytes.ContainsAny(t[:1], `{["`) {
		return nil, fmt.Errorf("policy: %s: the file does not start with {, [ or \": is it YAML? name it .yaml or .yml", path)
	}
	return policy.ParseFile(path, data)
}

// Statuses returns the statuses a transport must treat as retryable for
// doc: the defaults and every status its retriers name (HTTP.404, or each
// status of HTTP.4XX), in no particular order. A status no retrier
// matches is then final.
func Statuses(doc *policy.Document) []int {
	set := map[int]bool{}
	for _, s := range httpretry.DefaultStatuses() {
		set[s] = true
	}
	for _, r := range doc.Retry {
		for _, n := range r.ErrorEquals {
			rest, ok := strings.CutPrefix(n, "HTTP.")
			if !ok || len(rest) != 3 {
				continue
			}
			if rest[1:] == "XX" {
				c := int(rest[0]-'0') * 100
				for s := c; s < c+100; s++ {
					set[s] = true
				}
				continue
			}
			var s int
			if _, err := fmt.Sscanf(rest, "%d", &s); err == nil {
				set[s] = true
			}
		}
	}
	out := make([]int, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	return out
}
