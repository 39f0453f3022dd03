package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
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
// decimal, for any exponent (sameNumber).
func valueEqualText(a, b []byte) (bool, string) {
	va, err := decodeAny(a)
	if err != nil {
		return false, err.Error()
	}
	vb, err := decodeAny(b)
	if err != nil {
		return false, err.Error()
	}
	return valueEqual(va, vb, "$", sameNumber)
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
		for _, n := range Names {
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

// smallLimits are the limits the bound fuzz targets cross.
var smallLimits = Limits{MaxDepth: 8, MaxElements: 16, MaxBatch: 4, MaxNumberDigits: 40, MaxDecoded: 4096}

// FuzzBounds decodes any payload in every encoding with smallLimits: what
// decodes holds at most MaxBatch elements and no number longer than
// MaxNumberDigits, a CBOR or protobuf payload no more than MaxDecoded bytes
// of JSON text, and a refusal is always a *DecodeError.
func FuzzBounds(f *testing.F) {
	for _, enc := range Names {
		for _, n := range []int{1, 4, 5} {
			batch := make([]jsonrpc.Message, n)
			for i := range batch {
				batch[i] = &jsonrpc.Request{ID: jsonrpc.Int64ID(int64(i)), Method: "m", Params: json.RawMessage(`[1e39,-123456789012345678901234567890123456789]`)}
			}
			b, err := Default(enc).AppendBatch(nil, batch)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte{0x81, 0xa1, 0x62, 'i', 'd', 0xc2, 0x58, 0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	codecs := map[Name]Codec{}
	for _, n := range Names {
		c, err := New(n, smallLimits)
		if err != nil {
			f.Fatal(err)
		}
		codecs[n] = c
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, n := range Names {
			p, err := codecs[n].Decode(data)
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("%s: error of type %T: %v", n, err, err)
				}
				continue
			}
			if p.Batch && len(p.Elems) > smallLimits.MaxBatch {
				t.Fatalf("%s: a batch of %d elements passed MaxBatch %d", n, len(p.Elems), smallLimits.MaxBatch)
			}
			total := 0
			for _, e := range p.Elems {
				for _, m := range [][]byte{e.JSONRPC, e.ID, e.Method, e.Params, e.Result, e.Error} {
					total += len(m)
					if l := mostDigits(m); l > smallLimits.MaxNumberDigits {
						t.Fatalf("%s: a number of %d digits passed MaxNumberDigits in %s", n, l, m)
					}
				}
			}
			if n != JSON && total > smallLimits.MaxDecoded {
				t.Fatalf("%s: %d bytes decoded past MaxDecoded %d", n, total, smallLimits.MaxDecoded)
			}
		}
	})
}

// mostDigits returns the most mantissa digits of a number in JSON text b.
func mostDigits(b []byte) int {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	longest := 0
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return longest
		}
		if tok.Kind() == '0' {
			longest = max(longest, mantissaDigits([]byte(tok.String())))
		}
	}
}

// FuzzNumberBound: a number goes through every encoding (AppendValue, then
// DecodeValue with smallLimits) unchanged when its mantissa is within
// MaxNumberDigits, and is refused for that limit when it is not.
func FuzzNumberBound(f *testing.F) {
	for _, s := range []string{"0", "-0", "1e400", "0.1", "18446744073709551616", strings.Repeat("9", 40), strings.Repeat("9", 41),
		"-" + strings.Repeat("1", 39), "0." + strings.Repeat("1", 45), "1" + strings.Repeat("0", 60) + "e-60"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !validNumber(s) {
			return
		}
		for _, n := range Names {
			c, err := New(n, smallLimits)
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.AppendValue(nil, json.RawMessage(s))
			var le *LimitError
			if d := mantissaDigits([]byte(s)); d > smallLimits.MaxNumberDigits {
				if !errors.As(err, &le) || le.Limit != "MaxNumberDigits" {
					t.Fatalf("%s: a number of %d digits: err %v, want MaxNumberDigits", n, d, err)
				}
				continue
			}
			if err != nil {
				if _, ok := err.(*EncodeError); ok && !errors.As(err, &le) {
					continue // an exponent beyond 64 bits, refused on purpose
				}
				t.Fatalf("%s: %s: %v", n, s, err)
			}
			back, err := c.DecodeValue(b)
			if err != nil {
				t.Fatalf("%s: decoding our own encoding of %s: %v", n, s, err)
			}
			if !sameNumber(s, string(back)) {
				t.Fatalf("%s: %s came back as %s", n, s, back)
			}
		}
	})
}
