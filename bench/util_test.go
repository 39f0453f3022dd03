package bench

import "io"

func ioCopyDiscard(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	return io.CopyBuffer(io.Discard, r, buf)
}
