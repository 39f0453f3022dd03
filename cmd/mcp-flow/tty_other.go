//go:build !linux

package main

import (
	"io"
	"os"
)

// isTerminal reports whether w is a terminal; off Linux, whether it is a
// character device (which /dev/null is too).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
