package flowtest

import (
	"fmt"
	"slices"
	"time"
)

// Spread says a measurement's rounds in a few words: median and worst,
// and how many ("median 9ms, worst 13ms (3 rounds)"); "none" for none.
func Spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	ds = slices.Sorted(slices.Values(ds))
	return fmt.Sprintf("median %v, worst %v (%d rounds)", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), len(ds))
}
