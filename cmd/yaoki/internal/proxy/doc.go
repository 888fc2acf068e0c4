// Package proxy is yaoki proxy, a reverse proxy (a sidecar) that sends
// every request with yaoki's retry loop and httpretry's rules, so that a
// service in any language gets the toolkit's retries, Retry-After
// handling, retry budget, breaker and hedging. Plain GETs and HEADs are
// served by the proxy's own HTTP/1.1 front end (Server.Listener), the rest
// by net/http's server through httputil.ReverseProxy and
// httpretry.Transport, with the same rules.
//
// A Config lists routes (LoadConfig and ParseConfig read its YAML file and
// report every error with its file, line and column); a Route takes the
// requests of a path prefix, a host, or both, to an upstream, with its own
// policy. A Server serves the routes of the Config it was last given (Load,
// Reload), shares one pool of upstream connections between them, relays
// answers as they stream, answers what it cannot relay with a problem
// (application/problem+json), and stops gracefully (Shutdown). NewCommand
// is the command line around them (flags, signals, telemetry);
// docs/proxy.md is the manual.
package proxy
