// Package telemetry is what the yaoki commands report while they run, as
// their flags ask (Flags: --metrics-addr, --metrics-push, --metrics-job,
// --log-format, and OpenTelemetry's OTLP environment): Prometheus metrics
// from module yaoki/otel, served or pushed, and structured logs of the
// retry events (package eventlog). Running is what Start set up; its
// methods are safe on a nil *Running.
package telemetry
