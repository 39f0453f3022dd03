//go:build unix

package codec

import (
	"syscall"
	"time"
)

// cpuTime returns this process's user+system CPU time (Linux keeps their
// sum exact to the nanosecond).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
