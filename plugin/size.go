package plugin

import (
	"fmt"
	"strconv"
	"strings"
)

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"TB", 1000 * 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

// ParseSize parses a size written the way people write one: "512", "512B",
// "64KiB", "1.5MiB", "10MB", "1GiB". Binary suffixes (KiB) are powers of
// 1024, decimal ones (KB) powers of 1000; bare K, M, G are binary.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := int64(1)
	num := t
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			mult, num = u.mult, strings.TrimSpace(n)
			break
		}
	}
	if num == "" {
		return 0, fmt.Errorf("size %q has no number", s)
	}
	if i, err := strconv.ParseInt(num, 10, 64); err == nil {
		if i < 0 {
			return 0, fmt.Errorf("size %q is negative", s)
		}
		if mult > 1 && i > (1<<62)/mult {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return i * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f != f {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	v := f * float64(mult)
	if v > 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// FormatSize formats n bytes with the largest binary unit that divides it
// evenly ("64MiB", "1536B").
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
