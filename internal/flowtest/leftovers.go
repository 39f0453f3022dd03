package flowtest

import (
	"fmt"
	"os"
	"strings"
)

// LeaveNothing runs a test binary's tests (run: usually m.Run, with the
// TestMain's own set-up and clean-up) with TMPDIR set to a directory of their
// own, which every test, server and bridge subprocess of the package
// inherits, and fails the run (status 1) if anything is left in it
// afterwards: a file or directory that a test, a server or a front created
// and did not remove. TMPDIR is private so that another test run beside this
// one cannot be taken for a leak.
func LeaveNothing(run func() int) int {
	dir, err := os.MkdirTemp("", "mcp-flow-leftovers-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", dir)
	code := run()
	if had {
		os.Setenv("TMPDIR", old)
	} else {
		os.Unsetenv("TMPDIR")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if len(entries) > 0 {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		fmt.Fprintf(os.Stderr, "FAIL: the tests left %d entries behind in their TMPDIR: %s\n", len(names), strings.Join(names, ", "))
		if code == 0 {
			code = 1
		}
	}
	return code
}
