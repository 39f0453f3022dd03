//go:build !linux

package lossrelay

import (
	"net"
	"time"
)

func enableRxTime(*net.UDPConn) {}

const rxTimeOOB = 0

func parseRxTime([]byte) (time.Time, bool) { return time.Time{}, false }
