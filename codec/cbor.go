package codec

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"sync"

	"github.com/fxamacker/cbor/v2"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/x448/float16"
)

// The CBOR encoding (RFC 8949) of MCP-Flow (spec §4.4).
//
// A JSON value maps to CBOR as: null, true, false → simple values 22, 21,
// 20; numbers as described in number.go (major types 0/1, tag 2/3 bignums,
// float64, tag 4 decimal fractions); strings → text strings; arrays and
// objects → definite-length arrays and maps with text keys, member order
// kept. A canonical base64 string held by a member named "data" or "blob" is
// tag 22 (expected conversion to base64) around a byte string.
//
// Decoding accepts, besides: any float width, untagged byte strings (as
// standard base64), tag 21 (base64url without padding) and tag 23 (hex).
// Indefinite lengths, map keys other than text, duplicate keys, other tags,
// undefined, NaN and infinities are rejected (-32700).
//
// A message is a map with the keys jsonrpc, id, method, params, result and
// error; a batch is an array of such maps.
type cborCodec struct {
	lim Limits
	dm  cbor.DecMode
}

func newCBOR(lim Limits) (*cborCodec, error) {
	dm, err := cbor.DecOptions{
		MaxNestedLevels:  max(lim.MaxDepth+1, 4), // +1: the message map itself
		MaxArrayElements: max(lim.MaxElements, 16),
		MaxMapPairs:      max(lim.MaxElements, 16),
		IndefLength:      cbor.IndefLengthForbidden,
		// Only the options above bind Wellformed, the one use of this mode;
		// duplicate keys and invalid UTF-8 are refused by the walk below.
	}.DecMode()
	if err != nil {
		return nil, err
	}
	return &cborCodec{lim: lim, dm: dm}, nil
}

func (c *cborCodec) Name() Name { return CBOR }

// ---- encoding ----

// cborWriter is the sink that writes CBOR.
type cborWriter struct {
	b     []byte
	heads []int // offsets of the one-byte heads of open containers
	wk    walker
}

func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= math.MaxUint8:
		return append(b, m|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func (w *cborWriter) null() { w.b = append(w.b, 0xf6) }
func (w *cborWriter) boolean(v bool) {
	if v {
		w.b = append(w.b, 0xf5)
	} else {
		w.b = append(w.b, 0xf4)
	}
}
func (w *cborWriter) str(s []byte) {
	w.b = appendHead(w.b, 3, uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *cborWriter) key(s []byte) { w.str(s) }

// text writes a text string.
func (w *cborWriter) text(s string) {
	w.b = appendHead(w.b, 3, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *cborWriter) number(n number) {
	switch n.kind {
	case numInt:
		if n.i >= 0 {
			w.b = appendHead(w.b, 0, uint64(n.i))
		} else {
			w.b = appendHead(w.b, 1, uint64(-(n.i + 1)))
		}
	case numUint:
		w.b = appendHead(w.b, 0, n.u)
	case numBig:
		w.bignum(n.mant)
	case numFloat:
		w.float(n.f)
	case numDecimal:
		w.b = append(w.b, 0xc4, 0x82) // tag 4, [exponent, mantissa]
		if n.exp >= 0 {
			w.b = appendHead(w.b, 0, uint64(n.exp))
		} else {
			w.b = appendHead(w.b, 1, uint64(-(n.exp + 1)))
		}
		if n.mant.IsInt64() {
			w.number(number{kind: numInt, i: n.mant.Int64()})
		} else {
			w.bignum(n.mant)
		}
	}
}

// float writes f in the shortest IEEE 754 width that holds it exactly
// (RFC 8949 §4.1 preferred serialization).
func (w *cborWriter) float(f float64) { w.b = appendFloatCBOR(w.b, f) }

// appendFloatCBOR appends f as cborWriter.float writes it.
func appendFloatCBOR(b []byte, f float64) []byte {
	if f32 := float32(f); float64(f32) == f {
		if h := float16.Fromfloat32(f32); h.Float32() == f32 {
			return binary.BigEndian.AppendUint16(append(b, 0xf9), h.Bits())
		}
		return binary.BigEndian.AppendUint32(append(b, 0xfa), math.Float32bits(f32))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xfb), math.Float64bits(f))
}

// bignum writes tag 2 (n ≥ 0) or tag 3 (-1-n) around n's magnitude.
func (w *cborWriter) bignum(n *big.Int) {
	if n.Sign() >= 0 {
		w.b = append(w.b, 0xc2)
		mag := n.Bytes()
		w.b = appendHead(w.b, 2, uint64(len(mag)))
		w.b = append(w.b, mag...)
		return
	}
	m := new(big.Int).Neg(n)
	m.Sub(m, big.NewInt(1))
	mag := m.Bytes()
	w.b = append(w.b, 0xc3)
	w.b = appendHead(w.b, 2, uint64(len(mag)))
	w.b = append(w.b, mag...)
}

func (w *cborWriter) binary(b64 []byte) bool {
	start := len(w.b)
	n := decodedLen(b64)
	w.b = append(w.b, 0xd6) // tag 22
	w.b = appendHead(w.b, 2, uint64(n))
	off := len(w.b)
	w.b = grow(w.b, n)
	if m, err := strictBase64.Decode(w.b[off:off+n], b64); err != nil || m != n {
		w.b = w.b[:start]
		return false
	}
	return true
}

// grow extends b by n bytes.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

func (w *cborWriter) beginArray()     { w.heads = append(w.heads, len(w.b)); w.b = append(w.b, 0x80) }
func (w *cborWriter) beginObject()    { w.heads = append(w.heads, len(w.b)); w.b = append(w.b, 0xa0) }
func (w *cborWriter) endArray(n int)  { w.close(4, n) }
func (w *cborWriter) endObject(n int) { w.close(5, n) }

// close fills in the head of the container opened last.
func (w *cborWriter) close(major byte, n int) {
	at := w.heads[len(w.heads)-1]
	w.heads = w.heads[:len(w.heads)-1]
	w.b = closeHead(w.b, at, major, n)
}

// closeHead fills in the head at b[at] of a container of n elements
// (major type major); when n ≥ 24 the head needs more bytes than the one
// reserved and the contents shift right.
func closeHead(b []byte, at int, major byte, n int) []byte {
	if n < 24 {
		b[at] = major<<5 | byte(n)
		return b
	}
	var hb [9]byte
	h := appendHead(hb[:0], major, uint64(n))
	extra := len(h) - 1
	b = grow(b, extra)
	copy(b[at+1+extra:], b[at+1:len(b)-extra])
	copy(b[at:], h)
	return b
}

// fromJSON writes the JSON value raw with the fused scanner (fused.go),
// and reports false, leaving w as it found it, on anything walkJSON
// refuses.
func (w *cborWriter) fromJSON(raw []byte, lim Limits) bool {
	mark := len(w.b)
	// Room for the output in one go: strings are copied 8 bytes at a time
	// into the room past the output's end (cborWriter.quoted).
	if cap(w.b)-mark < len(raw)+16 {
		w.b = grow(w.b, len(raw)+16)[:mark]
	}
	if !fuse(fusedOut{cbor: w}, &w.wk, raw, lim) {
		w.b = w.b[:mark]
		return false
	}
	return true
}

// value transcodes raw JSON into w.
func (c *cborCodec) value(w *cborWriter, raw json.RawMessage) error {
	if fastValue(w, raw) || w.fromJSON(raw, c.lim) {
		return nil
	}
	// Refused: the walk through the sink interface finds the exact error.
	if err := w.wk.walk(raw, c.lim, w); err != nil {
		return encodeErr(CBOR, err)
	}
	return nil
}

// fastValue writes the tiny values that most messages carry (an integer id,
// an empty result, a literal) without a walk. It reports false for anything
// else.
func fastValue(w *cborWriter, raw json.RawMessage) bool {
	switch string(raw) {
	case "{}":
		w.b = append(w.b, 0xa0)
		return true
	case "[]":
		w.b = append(w.b, 0x80)
		return true
	case "null":
		w.null()
		return true
	case "true", "false":
		w.boolean(raw[0] == 't')
		return true
	}
	if n, ok := smallInt(raw); ok {
		w.number(number{kind: numInt, i: n})
		return true
	}
	return false
}

var cborWriters = sync.Pool{New: func() any { return new(cborWriter) }}

func getCBORWriter(dst []byte) *cborWriter {
	w := cborWriters.Get().(*cborWriter)
	w.b = dst
	return w
}

func (w *cborWriter) put() {
	w.b = nil
	w.heads = w.heads[:0]
	w.wk.release()
	cborWriters.Put(w)
}

func (c *cborCodec) AppendValue(dst []byte, v json.RawMessage) ([]byte, error) {
	w := getCBORWriter(dst)
	defer w.put()
	err := c.value(w, v)
	return w.b, err
}

func (c *cborCodec) Append(dst []byte, m jsonrpc.Message) ([]byte, error) {
	w := getCBORWriter(dst)
	defer w.put()
	err := c.message(w, m)
	return w.b, err
}

func (c *cborCodec) AppendBatch(dst []byte, batch []jsonrpc.Message) ([]byte, error) {
	w := getCBORWriter(appendHead(dst, 4, uint64(len(batch))))
	defer w.put()
	for _, m := range batch {
		if err := c.message(w, m); err != nil {
			return w.b, err
		}
	}
	return w.b, nil
}

func (c *cborCodec) message(w *cborWriter, m jsonrpc.Message) error {
	switch m := m.(type) {
	case *jsonrpc.Request:
		n := 2
		if m.ID.IsValid() {
			n++
		}
		if len(m.Params) > 0 {
			n++
		}
		w.b = appendHead(w.b, 5, uint64(n))
		w.text("jsonrpc")
		w.text("2.0")
		if m.ID.IsValid() {
			w.text("id")
			if err := c.value(w, json.RawMessage(m.ID.Raw())); err != nil {
				return err
			}
		}
		w.text("method")
		w.text(m.Method)
		if len(m.Params) > 0 {
			w.text("params")
			return c.value(w, m.Params)
		}
	case *jsonrpc.Response:
		w.b = appendHead(w.b, 5, 3)
		w.text("jsonrpc")
		w.text("2.0")
		w.text("id")
		id := m.ID
		if !id.IsValid() {
			id = jsonrpc.NullID
		}
		if err := c.value(w, json.RawMessage(id.Raw())); err != nil {
			return err
		}
		if m.Error != nil {
			w.text("error")
			n := 2
			if len(m.Error.Data) > 0 {
				n++
			}
			w.b = appendHead(w.b, 5, uint64(n))
			w.text("code")
			w.number(number{kind: numInt, i: int64(m.Error.Code)})
			w.text("message")
			w.text(m.Error.Message)
			if len(m.Error.Data) > 0 {
				w.text("data")
				return c.value(w, m.Error.Data)
			}
			return nil
		}
		w.text("result")
		if len(m.Result) == 0 {
			w.b = append(w.b, 0xa0)
			return nil
		}
		return c.value(w, m.Result)
	}
	return nil
}
