//go:build unix

package sim

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time this process has used (user + system). The
// benchmarks of whole sweeps report it next to wall time, because a shared
// machine's wall time says more about the neighbours than about the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
