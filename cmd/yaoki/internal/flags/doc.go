// Package flags holds the command-line flags that several yaoki commands
// share: the retry-policy flags of plan, exec, http and proxy (Policy, and
// the Resolved policy a command runs), yaoki http's and yaoki proxy's
// hedging flags (Hedge), and the duration flag that takes Go durations and
// plain seconds (Seconds). A flag set is used by one command at a time.
package flags
