package codec

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// seedFrames adds every corpus message, encoded in enc, to f. The seeds run
// in the normal test suite.
func seedFrames(f *testing.F, enc Name) {
	for _, e := range loadCorpus(f) {
		if len(e.json) > 1<<16 {
			continue // the 1 MiB image: too slow a seed for the fuzzer
		}
		msgs, batch := parse(f, e.json)
		f.Add(encode(f, Default(enc), msgs, batch))
	}
}

// checkDecode decodes data in c and, when it decodes, checks that every
// valid message re-encodes and decodes again to the same message.
func checkDecode(t *testing.T, c Codec, data []byte) {
	p, err := c.Decode(data)
	if err != nil {
		if _, ok := err.(*DecodeError); !ok {
			t.Fatalf("error of type %T: %v", err, err)
		}
		return
	}
	msgs, _ := jsonrpc.Validate(p)
	for _, m := range msgs {
		first := jsonrpc.AppendJSON(nil, m)
		if !json.Valid(first) {
			t.Fatalf("decoded message is not valid JSON: %s", first)
		}
		wire, err := c.Append(nil, m)
		if err != nil {
			t.Fatalf("re-encoding %s: %v", first, err)
		}
		p2, err := c.Decode(wire)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", first, err)
		}
		again, replies := jsonrpc.Validate(p2)
		if len(again) != 1 || len(replies) != 0 {
			t.Fatalf("re-decoded %d messages from %s", len(again), first)
		}
		if ok, why := valueEqualText(first, jsonrpc.AppendJSON(nil, again[0])); !ok {
			t.Fatalf("round trip changed %s: %s", first, why)
		}
	}
}

// valueEqualText compares JSON texts as values, numbers by normalised
// decimal (cheap for any exponent, unlike math/big).
func valueEqualText(a, b []byte) (bool, string) {
	va, err := decodeAny(a)
	if err != nil {
		return false, err.Error()
	}
	vb, err := decodeAny(b)
	if err != nil {
		return false, err.Error()
	}
	return valueEqual(va, vb, "$", sameDecimal)
}

func FuzzJSONDecode(f *testing.F) {
	seedFrames(f, JSON)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[1,{"jsonrpc":"2.0","method":"m"}]`))
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, Default(JSON), data) })
}

func FuzzCBORDecode(f *testing.F) {
	seedFrames(f, CBOR)
	f.Add([]byte{0xa1, 0x66, 'p', 'a', 'r', 'a', 'm', 's', 0xc4, 0x82, 0x20, 0xc2, 0x41, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, Default(CBOR), data) })
}

func FuzzProtobufDecode(f *testing.F) {
	seedFrames(f, Protobuf)
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, Default(Protobuf), data) })
}

// FuzzValidate feeds JSON frames through decoding and JSON-RPC validation:
// every message must be valid, every reply an error with an id, and a
// non-empty payload must yield a message or a reply for each element
// (invalid responses excepted).
func FuzzValidate(f *testing.F) {
	seedFrames(f, JSON)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1.5,"method":"m"}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"x","method":"m","params":3},{"jsonrpc":"2.0","id":2}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Default(JSON).Decode(data)
		if err != nil {
			return
		}
		msgs, replies := jsonrpc.Validate(p)
		if p.Batch && len(p.Elems) == 0 && len(replies) != 1 {
			t.Fatalf("empty batch: %d replies", len(replies))
		}
		if len(msgs)+len(replies) > max(len(p.Elems), 1) {
			t.Fatalf("%d elements gave %d messages and %d replies", len(p.Elems), len(msgs), len(replies))
		}
		for _, r := range replies {
			if r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidRequest || !r.ID.IsValid() {
				t.Fatalf("bad reply %+v", r)
			}
		}
		for _, m := range msgs {
			if req, ok := m.(*jsonrpc.Request); ok {
				if req.ID.IsNull() || (len(req.Params) > 0 && req.Params[0] != '{' && req.Params[0] != '[') {
					t.Fatalf("invalid request passed: %s", jsonrpc.AppendJSON(nil, m))
				}
			}
		}
	})
}

// FuzzRoundTrip: any JSON value goes through each encoding and comes back
// equal.
func FuzzRoundTrip(f *testing.F) {
	for _, e := range loadCorpus(f) {
		if len(e.json) <= 1<<16 {
			f.Add(e.json)
		}
	}
	f.Add([]byte(`[1e400,-0,0.1,{"data":"AAEC","blob":"YQ"},18446744073709551616]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !jsontext.Value(data).IsValid() || bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) > 60 {
			return
		}
		for _, n := range []Name{CBOR, Protobuf, JSON} {
			c := Default(n)
			b, err := c.AppendValue(nil, json.RawMessage(data))
			if err != nil {
				if _, ok := err.(*EncodeError); ok {
					continue // e.g. an exponent beyond 64 bits, refused on purpose
				}
				t.Fatalf("%s: %v", n, err)
			}
			back, err := c.DecodeValue(b)
			if err != nil {
				t.Fatalf("%s: decoding our own encoding of %s: %v", n, data, err)
			}
			if ok, why := valueEqualText(data, back); !ok {
				t.Fatalf("%s: %s came back as %s: %s", n, data, back, why)
			}
		}
	})
}
