//go:build !unix

package main

import (
	"os"
	"os/exec"
	"time"
)

// ownGroup reports false: without Unix process groups, yaoki exec signals
// the command only.
func ownGroup() bool { return false }

func setGroup(*exec.Cmd) {}

func signalGroup(p *os.Process, s os.Signal) error { return p.Signal(s) }

func endGroup(int, time.Time) {}
