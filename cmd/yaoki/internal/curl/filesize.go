package curl

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is --max-filesize's value: bytes, with curl's k, M or G
// suffix (powers of 1024, either case); 0 is no limit.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }
func (b *byteSize) Type() string   { return "BYTES" }

func (b *byteSize) Set(v string) error {
	n, unit := v, int64(1)
	if i := len(v) - 1; i > 0 {
		switch v[i] {
		case 'k', 'K':
			n, unit = v[:i], 1<<10
		case 'm', 'M':
			n, unit = v[:i], 1<<20
		case 'g', 'G':
			n, unit = v[:i], 1<<30
		}
	}
	x, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
	if err != nil || x < 0 || x > (1<<63-1)/unit {
		return fmt.Errorf("want a number of bytes ≥ 0, with k, M or G after it for KiB, MiB, GiB (0: no limit)")
	}
	*b = byteSize(x * unit)
	return nil
}
