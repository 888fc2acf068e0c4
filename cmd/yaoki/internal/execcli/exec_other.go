//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package execcli

import (
	"os"
	"os/exec"
	"time"
)

// ownGroup reports false: where yaoki does not manage process groups (not
// Linux or a BSD), yaoki exec signals the command only.
func ownGroup() bool { return false }

func setGroup(*exec.Cmd) {}

func signalGroup(p *os.Process, s os.Signal) error { return p.Signal(s) }

func adoptOrphans() bool { return false }

func endLeftovers(int, bool, bool, time.Time, <-chan struct{}) {}
func dieWithYaoki(*exec.Cmd)                                   {}

func awaitExit(int) {}
