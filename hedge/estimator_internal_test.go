package hedge

import (
	"testing"
	"time"
)

// Every latency falls in the bucket whose bounds hold it, and the buckets
// tile the range without gaps.
func TestBucketBounds(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 1023, 1024, 1025, 1151, 1152, 2047, 2048,
		time.Millisecond, 3 * time.Millisecond, time.Second, 1<<38 - 1, 1 << 38, 1 << 40} {
		i := bucketOf(d)
		lo, hi := bounds(i)
		if i == nBuckets-1 {
			if d < lo {
				t.Errorf("bucketOf(%v) = last bucket, whose bound is %v", d, lo)
			}
			continue
		}
		if d < lo || d >= hi {
			t.Errorf("bucketOf(%v) = %d, which holds [%v, %v)", d, i, lo, hi)
		}
	}
	for i := 1; i < nBuckets-1; i++ {
		_, hi := bounds(i - 1)
		lo, _ := bounds(i)
		if hi != lo {
			t.Fatalf("bucket %d ends at %v, bucket %d starts at %v", i-1, hi, i, lo)
		}
	}
}
