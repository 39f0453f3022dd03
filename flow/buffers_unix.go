//go:build unix

package flow

import (
	"errors"
	"syscall"
)

var errNotSocket = errors.New("not a socket")

func getsockoptInt(fd uintptr, opt int) (int, error) {
	return syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt)
}
