package codec

import (
	"testing"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// BenchmarkEncode and BenchmarkDecode measure each encoding on each corpus
// message: ns/op, B/op, allocs/op, MB/s of encoded bytes and the encoded
// size (bytes/msg). Decode is the whole way from bytes to validated
// messages, the same work for every encoding.
//
//	go test -run='^$' -bench=. -benchmem ./codec/
func BenchmarkEncode(b *testing.B) {
	for _, e := range loadCorpus(b) {
		msgs, batch := parse(b, e.json)
		for _, n := range Names {
			c := Default(n)
			wire := encode(b, c, msgs, batch)
			b.Run(e.name+"/"+string(n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(wire)))
				buf := make([]byte, 0, len(wire))
				var err error
				for b.Loop() {
					if batch {
						buf, err = c.AppendBatch(buf[:0], msgs)
					} else {
						buf, err = c.Append(buf[:0], msgs[0])
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(wire)), "bytes/msg")
			})
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, e := range loadCorpus(b) {
		msgs, batch := parse(b, e.json)
		for _, n := range Names {
			c := Default(n)
			wire := encode(b, c, msgs, batch)
			b.Run(e.name+"/"+string(n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(wire)))
				for b.Loop() {
					p, err := c.Decode(wire)
					if err != nil {
						b.Fatal(err)
					}
					if got, _ := jsonrpc.Validate(p); len(got) != len(msgs) {
						b.Fatalf("%d messages", len(got))
					}
				}
				b.ReportMetric(float64(len(wire)), "bytes/msg")
			})
		}
	}
}
