// Package curl is yaoki http: curl's command line (its options, its exit
// codes, its -w variables, its cookies and redirects, as curl 7.88 has
// them) over yaoki's retrying HTTP transport (package httpretry), so that
// a script can swap curl for yaoki http and get the toolkit's retries,
// Retry-After handling and Idempotency-Keys. NewCommand returns the
// command; docs/cli.md is its manual and says where it differs from curl.
package curl
