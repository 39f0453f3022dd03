package conformance

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"sync"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/quic-go/webtransport-go"
)

// What the judge knows of execution streams: the ref/stream block, the reset
// codes and the bytes of the test tool generate. Each is written here from
// docs/spec.md and the guide, not taken from package flow or demotools: a
// judge that shared the implementation's writing of a rule would share its
// mistakes. streams_test.go holds the two writings to each other.

// refBlock is the content block that names an execution stream in a result
// (spec §5.2): {"type": "ref/stream", "streamTag": N, "mimeType": "…"}.
type refBlock struct {
	Type      string `json:"type"`
	StreamTag uint32 `json:"streamTag"`
	MimeType  string `json:"mimeType"`
}

// newRef is the block naming the stream tag of the request it answers.
func newRef(tag uint32, mime string) refBlock {
	return refBlock{Type: protocol.ContentTypeRef, StreamTag: tag, MimeType: mime}
}

// refs returns the ref/stream blocks of r's result content, in order.
func refs(r *jsonrpc.Response) []refBlock {
	var res struct{ Content []refBlock }
	_ = json.Unmarshal(r.Result, &res)
	var out []refBlock
	for _, c := range res.Content {
		if c.Type == protocol.ContentTypeRef {
			out = append(out, c)
		}
	}
	return out
}

// The stream reset codes (spec §1): a reset carries the absolute value of
// the JSON-RPC code of its reason.
const (
	resetWriterFailed webtransport.StreamErrorCode = 32603 // the writer failed mid-stream (spec §5.4)
	resetNoRef        webtransport.StreamErrorCode = 32001 // no ref/stream names the stream (spec §5.3)
	resetInjection    webtransport.StreamErrorCode = 32002 // the header names no request in flight (spec §5.3)
	resetCancelled    webtransport.StreamErrorCode = 32800 // the request was cancelled (spec §7.1)
)

// generated returns a reader of the first n bytes that mcp-flow-server's
// tool generate streams (spec §5.5): blocks of 64 KiB, each the block's
// index as 8 bytes big-endian followed by bytes 8 to 65535 of a fixed
// pattern.
func generated(n int64) io.Reader { return io.LimitReader(&genBlocks{}, n) }

// genBlocks is the endless run of generate's blocks.
type genBlocks struct {
	block [64 << 10]byte
	index uint64 // of the next block
	rest  []byte // of the current block, unread
}

func (g *genBlocks) Read(p []byte) (int, error) {
	if len(g.rest) == 0 {
		copy(g.block[:], genPattern())
		binary.BigEndian.PutUint64(g.block[:8], g.index)
		g.index++
		g.rest = g.block[:]
	}
	n := copy(p, g.rest)
	g.rest = g.rest[n:]
	return n, nil
}

// genPattern is generate's pattern (spec §5.5): 8,192 words of 64 bits, each
// little-endian, the successive states of xorshift64 (shifts 13, 7, 17) from
// the seed 0x9E3779B97F4A7C15, the seed itself excluded.
var genPattern = sync.OnceValue(func() []byte {
	p := make([]byte, 0, 64<<10)
	x := uint64(0x9E3779B97F4A7C15)
	for len(p) < cap(p) {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p = binary.LittleEndian.AppendUint64(p, x)
	}
	return p
})
