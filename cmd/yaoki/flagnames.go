package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

// simFlags names the yaoki sim flag behind each configuration field that
// package sim checks, so that an error says "--clients -5", the way the
// user wrote it, and not "Herd.Clients -5".
var simFlags = map[string]string{
	"Herd.Clients": "--clients", "Herd.HopMean": "--hop-mean", "Herd.HopStdDev": "--hop-sd",
	"Outage.Clients": "--clients", "Outage.Rate": "--rate (or --total-rate ÷ --clients)", "Outage.Duration": "--duration",
	"Outage.HopMean": "--hop-mean", "Outage.FailureRate": "--p",
	"Collapse.Rate": "--rate", "Collapse.Trigger.At": "--at", "Collapse.Trigger.Width": "--width",
	"Collapse.Trigger.Peak": "--peak", "Collapse.Trigger.Factor": "--factor", "Collapse.Timeout": "--timeout",
	"Collapse.HopMean": "--hop-mean", "Collapse.Duration": "--duration", "Collapse.Threshold": "--threshold",
	"Collapse.Clients": "--clients",
	"Tail.Fanout":      "--fanout", "Tail.Rate": "--rate", "Tail.Duration": "--duration", "Tail.Fast": "--fast",
	"Tail.Slow": "--slow", "Tail.SlowShare": "--slow-share",
}

// zeroMeans matches the "(0 means 100)" of a field's accepted range: a
// flag has its default written in its help, and 0 is not that default.
var zeroMeans = regexp.MustCompile(`\s*\(0 means [^)]*\)`)

// simUsage turns a sim configuration error into bad usage that names the
// flag: "--clients -5: out of range; want 1 to 1e6". Errors of fields no
// flag sets keep their own words.
func simUsage(err error) error {
	var ce *configerr.Error
	if errors.As(err, &ce) {
		if flag, ok := simFlags[ce.Field]; ok {
			problem := ce.Problem
			if problem == "" {
				problem = "out of range"
			}
			return usagef("%s %v: %s; want %s", flag, ce.Value, problem, strings.TrimSpace(zeroMeans.ReplaceAllString(ce.Want, "")))
		}
	}
	return usagef("%s", strings.TrimPrefix(fmt.Sprint(err), "sim: "))
}

// checkOutFolder makes sure the report folder can be written before the
// simulations start, which may take minutes: it creates the folder and a
// file in it, and removes the file.
func checkOutFolder(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("--out %s: cannot make the report folder: %v", dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(dir, ".yaoki-check-*")
	if err != nil {
		return usagef("--out %s: cannot write in the report folder: %v", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath drops the path that *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}
