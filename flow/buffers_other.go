//go:build !unix

package flow

import "errors"

var errNotSocket = errors.New("not a socket")

func getsockoptInt(uintptr, int) (int, error) {
	return 0, errors.New("socket buffer sizes are not read on this system")
}
