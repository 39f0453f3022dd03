// Command slowest reads the lines of `gotestsum tool slowest` (a package, a
// test and its duration, slowest first, optionally behind a word such as
// "race") from several runs on stdin and prints the n slowest of them all,
// slowest first: make test's closing list of its slowest tests.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 15, "how many tests to print")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *n); err != nil {
		fmt.Fprintln(os.Stderr, "slowest:", err)
		os.Exit(1)
	}
}

// entry is one test's line and its duration.
type entry struct {
	line string
	d    time.Duration
}

// run prints the n slowest of in's lines to out, the duration first.
func run(in io.Reader, out io.Writer, n int) error {
	var all []entry
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		d, err := time.ParseDuration(f[len(f)-1])
		if err != nil {
			return fmt.Errorf("line %q: %v", sc.Text(), err)
		}
		pkg := f[len(f)-3]
		pkg = pkg[strings.LastIndex(pkg, "mcp-flow/mcp-flow/")+len("mcp-flow/mcp-flow/"):]
		line := strings.Join(append(f[:len(f)-3:len(f)-3], pkg, f[len(f)-2]), " ")
		all = append(all, entry{line, d})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.SortStableFunc(all, func(a, b entry) int { return int(b.d - a.d) })
	for i, e := range all {
		if i == n {
			break
		}
		fmt.Fprintf(out, "%8.1fs  %s\n", e.d.Seconds(), e.line)
	}
	return nil
}
