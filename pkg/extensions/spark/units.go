package spark

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// sparkSize is Spark's size syntax (JavaUtils.byteStringAs): whole digits and
// an optional unit suffix, case-insensitive.
var sparkSize = regexp.MustCompile(`^([0-9]+)([a-z]+)?$`)

const (
	mib = 1 << 20
	// maxMiB bounds a size, so that sums of sizes in bytes cannot overflow.
	maxMiB = 1 << 30
)

// bytesPerUnit are Spark's size suffixes, all powers of 1024.
var bytesPerUnit = map[string]int64{
	"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50,
}

// mebibytes reads a Spark memory setting ("512m", "2g", "1024") as whole MiB,
// as Spark does: a number without a suffix is MiB, a fraction is refused,
// and a size that is not a whole number of MiB is rounded down.
func mebibytes(s string) (int64, error) { return sizeMiB(s, mib) }

// sizeMiB reads a Spark size as whole MiB, as mebibytes does, a number
// without a suffix being in units of bytes (mib for MiB, 1 for bytes, as
// the setting's own unit says).
func sizeMiB(s string, unit int64) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	m := sparkSize.FindStringSubmatch(v)
	if m == nil {
		if strings.Contains(v, ".") {
			return 0, fmt.Errorf("%q: Spark takes no fractions here; give a whole number in a smaller unit, such as 1536m for 1.5g", s)
		}
		return 0, fmt.Errorf("%q is not a Spark size such as 512m or 2g", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	if m[2] != "" {
		var ok bool
		if unit, ok = bytesPerUnit[m[2]]; !ok {
			return 0, fmt.Errorf("%q: unknown unit %q; Spark knows b, k, m, g, t and p (or kb, mb, gb, tb, pb)", s, m[2])
		}
	}
	if unit < mib {
		return n / (mib / unit), nil
	}
	if n > maxMiB/(unit/mib) {
		return 0, fmt.Errorf("%q is more than a pebibyte", s)
	}
	return n * (unit / mib), nil
}
