package codec

import (
	"testing"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// BenchmarkEncode and BenchmarkDecode measure each encoding on each corpus
// message: ns/op, the process's CPU time per op (cpu-ns/op: on a loaded
// machine ns/op also counts the time spent waiting for a core), B/op,
// allocs/op, MB/s of encoded bytes and the encoded size (bytes/msg). Decode
// is the whole way from bytes to validated messages, the same work for every
// encoding.
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
				c0 := cpuTime()
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
				b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
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
				c0 := cpuTime()
				for b.Loop() {
					p, err := c.Decode(wire)
					if err != nil {
						b.Fatal(err)
					}
					if got, _ := jsonrpc.Validate(p); len(got) != len(msgs) {
						b.Fatalf("%d messages", len(got))
					}
				}
				// The process's CPU time per op: the decode and the
				// collector's work on its garbage, which waiting for a core
				// on a loaded machine does not inflate as it does ns/op.
				b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(len(wire)), "bytes/msg")
			})
		}
	}
}

// BenchmarkEchoRoundTrip is the codec's share of one echo tools/call (the
// bench package's BenchmarkEcho): the client encodes the request, the server
// decodes and validates it, encodes the result, and the client decodes and
// validates that, on 16 goroutines at once as at c=16. calls/s is per core
// of what the codec alone would allow.
//
//	go test -run='^$' -bench=EchoRoundTrip -benchmem ./codec/
func BenchmarkEchoRoundTrip(b *testing.B) {
	req := &jsonrpc.Request{ID: jsonrpc.Uint32ID(7), Method: "tools/call",
		Params: []byte(`{"arguments":{"text":"hello"},"name":"echo"}`)}
	resp := &jsonrpc.Response{ID: jsonrpc.Uint32ID(7), Result: []byte(`{"content":[{"type":"text","text":"hello"}]}`)}
	for _, n := range Names {
		c := Default(n)
		b.Run(string(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				var buf []byte
				for pb.Next() {
					for _, m := range []jsonrpc.Message{req, resp} {
						var err error
						if buf, err = c.Append(buf[:0], m); err != nil {
							b.Error(err)
							return
						}
						p, err := c.Decode(buf)
						if err != nil {
							b.Error(err)
							return
						}
						if got, bad := jsonrpc.Validate(p); len(got) != 1 || len(bad) != 0 {
							b.Errorf("%d messages, %d errors", len(got), len(bad))
							return
						}
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
