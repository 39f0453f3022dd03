package lossrelay

import (
	"net"
	"syscall"
	"time"
	"unsafe"
)

// enableRxTime asks the kernel to stamp each datagram c receives with the
// time it arrived (SO_TIMESTAMPNS).
func enableRxTime(c *net.UDPConn) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
}

// rxTimeOOB is room for the SO_TIMESTAMPNS control message.
const rxTimeOOB = 64

// parseRxTime returns the arrival time in oob (SCM_TIMESTAMPNS), if any.
func parseRxTime(oob []byte) (time.Time, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix()), true
		}
	}
	return time.Time{}, false
}
