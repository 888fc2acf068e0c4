//go:build race

package sim

// raceOn: the race detector slows the simulator down about tenfold; the
// long statistical tests run fewer runs under it (as with -short).
const raceOn = true
