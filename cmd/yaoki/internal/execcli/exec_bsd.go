//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package execcli

import "os/exec"

// adoptOrphans reports false: on the BSDs yaoki does not adopt what an
// attempt leaves running; endLeftovers ends the attempt's process group only.
func adoptOrphans() bool { return false }

func orphans() []int { return nil }

func reap() {}

func dieWithYaoki(*exec.Cmd) {}

// awaitExit returns at once: the BSDs offer no portable wait that leaves
// the process unreaped; os/exec reaps it.
func awaitExit(int) {}
