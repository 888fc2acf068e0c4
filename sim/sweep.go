package sim

import (
	"math"
	"sync"
)

// Stat is a mean over runs with its standard deviation and the standard
// error of the mean.
type Stat struct {
	Mean, SD, SE float64 // the mean, the standard deviation, the standard error of the mean
}

// stat accumulates values (Welford's method, stable for long sums).
type stat struct {
	n       int
	mean, m float64
}

func (s *stat) add(x float64) {
	s.n++
	d := x - s.mean
	s.mean += d / float64(s.n)
	s.m += d * (x - s.mean)
}

func (s *stat) result() Stat {
	if s.n == 0 {
		return Stat{Mean: math.NaN(), SD: math.NaN(), SE: math.NaN()}
	}
	var sd float64
	if s.n > 1 {
		sd = math.Sqrt(s.m / float64(s.n-1))
	}
	return Stat{Mean: s.mean, SD: sd, SE: sd / math.Sqrt(float64(s.n))}
}

// Progress is told, after each point of a sweep, how many points are done
// out of how many. It is called from the goroutine that called the sweep's
// Run, never concurrently.
type Progress func(done, total int)

// sweep is what a scenario's sweep says beside the swept values: runs per
// point, the sweep's seed, the goroutines to run it on, and who hears of
// its progress.
type sweep struct {
	runs     int
	seed     uint64
	workers  int
	progress Progress
}

// sweepPoints is what the scenarios' sweeps share: it checks the scenario
// with each value of the swept parameter (set puts one in a copy of base),
// compiles the policies, and returns one point per policy and value,
// policy by policy. A point runs the scenario, with its defaults, sw.runs
// times on one of sw.workers goroutines, on that worker's reusable
// workspace W, each run with its seed from the sweep's seed, the point's
// key (key of the scenario) and the run's index (seedOf); point makes the
// point from the runs' results, in run order.
func sweepPoints[W any, PW interface {
	*W
	run(s S, c *compiled, seed uint64) R
}, S scenario[S], V, R, P any](base S, values []V, set func(*S, V), key func(S) uint64, sw sweep, policies []Policy,
	point func(s S, pi int, runs []R) P) ([]P, error) {
	for _, v := range values {
		s := base
		set(&s, v)
		if err := s.Validate(); err != nil {
			return nil, err
		}
	}
	compiled, err := compileAll(policies)
	if err != nil {
		return nil, err
	}
	points := make([]P, len(policies)*len(values))
	workers := max(sw.workers, 1)
	state := make([]W, workers)
	results := make([][]R, workers)
	forEach(len(points), workers, sw.progress, func(w, i int) {
		pi, vi := i/len(values), i%len(values)
		s := base
		set(&s, values[vi])
		s = s.withDefaults()
		k := key(s)
		rs := results[w][:0]
		for run := range sw.runs {
			rs = append(rs, PW(&state[w]).run(s, &compiled[pi], seedOf(sw.seed, k, run)))
		}
		results[w] = rs
		points[i] = point(s, pi, rs)
	})
	return points, nil
}

// orDefault returns values, or def() when values is nil.
func orDefault[V any](values []V, def func() []V) []V {
	if values == nil {
		return def()
	}
	return values
}

// forEach runs job(worker, i) for i in [0, n) on workers goroutines (at
// least one, at most n), calling progress after each job in the calling
// goroutine. Each worker has its own index in [0, workers) so that it can
// keep reusable state.
func forEach(n, workers int, progress Progress, job func(worker, i int)) {
	if workers < 1 {
		workers = 1
	}
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		for i := range n {
			job(0, i)
			if progress != nil {
				progress(i+1, n)
			}
		}
		return
	}
	jobs := make(chan int)
	done := make(chan struct{}, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range jobs {
				job(w, i)
				done <- struct{}{}
			}
		})
	}
	go func() {
		for i := range n {
			jobs <- i
		}
		close(jobs)
	}()
	for i := range n {
		<-done
		if progress != nil {
			progress(i+1, n)
		}
	}
	wg.Wait()
}

// seedOf derives the seed of one run of a sweep from the sweep's seed, the
// point's key and the run index. Each is mixed in by a hash (splitmix64's
// finaliser, a bijection that spreads nearby inputs over the whole range),
// so that nearby sweep seeds give unrelated runs, and the key is made from
// the point's parameters (pointKey), not its position in a list: a point
// gets the same runs whatever else the sweep holds. Every policy sees the
// same seeds at the same point (common random numbers make the comparison
// sharper) and a point's result does not depend on how many workers ran
// the sweep.
func seedOf(seed, key uint64, run int) uint64 {
	return mix(mix(mix(seed)^key) ^ uint64(run))
}

// pointKey hashes a point's parameters into the key seedOf takes.
func pointKey(params ...uint64) uint64 {
	k := uint64(0x5eed)
	for _, p := range params {
		k = mix(k ^ p)
	}
	return k
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
