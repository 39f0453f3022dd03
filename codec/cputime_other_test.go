//go:build !unix

package codec

import "time"

var start = time.Now()

// cpuTime stands in for the process's CPU time where there is no
// getrusage: the wall time.
func cpuTime() time.Duration { return time.Since(start) }
