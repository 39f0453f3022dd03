package flow

import (
	"encoding/binary"

	"github.com/mcp-flow/mcp-flow/internal/faults"
	"github.com/mcp-flow/mcp-flow/wire"
)

func init() {
	faults.Register(func(c *ServerConfig, f faults.Faults) { c.faults = f })
}

// faults returns the server's faults (none on a client), which only the
// tests set, through package internal/faults.
func (s *Session) faults() faults.Faults {
	if s.srv.cfg == nil {
		return faults.Faults{}
	}
	return s.srv.cfg.faults
}

// streamHeader encodes an execution stream header, wrongly if asked to.
func (s *Session) streamHeader(h wire.StreamHeader) []byte {
	if s.faults().StreamHeaderLittleEndian {
		b := binary.LittleEndian.AppendUint32(nil, h.RequestID)
		return binary.LittleEndian.AppendUint32(b, h.StreamTag)
	}
	return h.Append(nil)
}
