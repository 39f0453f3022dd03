package codec

// This file is long because it is the CBOR decoder in one piece: the envelope,
// every major type, and the tags MCP-Flow maps to JSON (bignums, byte strings,
// expected encodings), each checked against the limits before it allocates.

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/x448/float16"
)

// Decoding CBOR (spec §4.4): fxamacker/cbor checks well-formedness and the
// limits, then cborReader transcodes the items to JSON text.

// cborReader transcodes well-formed CBOR to JSON text.
type cborReader struct {
	data []byte
	pos  int
	lim  Limits
}

func (c *cborCodec) check(data []byte) error {
	if len(data) > c.lim.MaxPayload {
		return &DecodeError{Encoding: CBOR, Offset: -1, Reason: "payload of " + strconv.Itoa(len(data)) + " bytes exceeds the limit of " + strconv.Itoa(c.lim.MaxPayload)}
	}
	// The library checks well-formedness and the limits first, without
	// allocating from any declared length; the walk below can then trust
	// every length it reads.
	if err := c.dm.Wellformed(data); err != nil {
		var (
			nest  *cbor.MaxNestedLevelError
			arr   *cbor.MaxArrayElementsError
			pairs *cbor.MaxMapPairsError
		)
		switch {
		case errors.As(err, &nest):
			err = errTooDeep(c.lim)
		case errors.As(err, &arr), errors.As(err, &pairs):
			err = errTooMany(c.lim)
		}
		return decodeErr(CBOR, -1, err)
	}
	return nil
}

func (c *cborCodec) DecodeValue(data []byte) (json.RawMessage, error) {
	if err := c.check(data); err != nil {
		return nil, err
	}
	r := &cborReader{data: data, lim: c.lim}
	out, err := r.value(make([]byte, 0, min(len(data)+len(data)/2, c.lim.MaxDecoded)), 1)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *cborCodec) Decode(data []byte) (jsonrpc.Payload, error) {
	if err := c.check(data); err != nil {
		return jsonrpc.Payload{}, err
	}
	r := &cborReader{data: data, lim: c.lim}
	var envs []envSpans
	major, n := r.head()
	if major == 4 && n > uint64(c.lim.MaxBatch) {
		return jsonrpc.Payload{}, decodeErr(CBOR, 0, errBatch(c.lim))
	}
	// One output buffer for every member's JSON text, sized for the worst
	// common case (byte strings grow by a third as base64).
	buf := make([]byte, 0, min(len(data)+len(data)/2+64, c.lim.MaxDecoded))
	switch major {
	case 5:
		e, b, err := r.envelope(buf, n)
		if err != nil {
			return jsonrpc.Payload{}, err
		}
		return jsonrpc.Payload{Elems: []jsonrpc.Envelope{e.envelope(b)}}, nil
	case 4:
		envs = make([]envSpans, 0, n)
		for range n {
			e := envSpans{notObject: true}
			if r.peekMajor() == 5 {
				_, m := r.head()
				var err error
				if e, buf, err = r.envelope(buf, m); err != nil {
					return jsonrpc.Payload{}, err
				}
			} else {
				r.skip()
			}
			envs = append(envs, e)
		}
		p := jsonrpc.Payload{Batch: true, Elems: make([]jsonrpc.Envelope, len(envs))}
		for i, e := range envs {
			p.Elems[i] = e.envelope(buf)
		}
		return p, nil
	}
	return jsonrpc.Payload{Elems: []jsonrpc.Envelope{{NotObject: true}}}, nil
}

// envelope reads the n pairs of a message map.
func (r *cborReader) envelope(buf []byte, n uint64) (envSpans, []byte, error) {
	var e envSpans
	for range n {
		if r.peekMajor() != 3 {
			return e, buf, r.fail("message map key is not a text string")
		}
		_, kl := r.head()
		i := memberIndex(r.data[r.pos : r.pos+int(kl)])
		r.pos += int(kl)
		if i < 0 {
			r.skip()
			continue
		}
		if e.spans[i].to != 0 {
			return e, buf, r.fail("duplicate message member")
		}
		from := len(buf)
		var err error
		// The message map is level 1; its members' containers start at 2,
		// as in the json codec.
		if buf, err = r.value(buf, 2); err != nil {
			return e, buf, err
		}
		e.spans[i] = span{from, len(buf)}
	}
	return e, buf, nil
}

func (r *cborReader) fail(reason string) error {
	return &DecodeError{Encoding: CBOR, Offset: r.pos, Reason: reason}
}

func (r *cborReader) peekMajor() byte { return r.data[r.pos] >> 5 }

// head reads an item head; the input is well-formed and definite-length.
func (r *cborReader) head() (major byte, arg uint64) {
	b := r.data[r.pos]
	r.pos++
	major, info := b>>5, b&0x1f
	switch {
	case info < 24:
		return major, uint64(info)
	case info == 24:
		arg = uint64(r.data[r.pos])
		r.pos++
	case info == 25:
		arg = uint64(binary.BigEndian.Uint16(r.data[r.pos:]))
		r.pos += 2
	case info == 26:
		arg = uint64(binary.BigEndian.Uint32(r.data[r.pos:]))
		r.pos += 4
	default:
		arg = binary.BigEndian.Uint64(r.data[r.pos:])
		r.pos += 8
	}
	return major, arg
}

// skip passes over one (well-formed) item.
func (r *cborReader) skip() {
	major, n := r.head()
	switch major {
	case 2, 3:
		r.pos += int(n)
	case 4:
		for range n {
			r.skip()
		}
	case 5:
		for range 2 * n {
			r.skip()
		}
	case 6:
		r.skip()
	}
}

// room checks that dst may grow by n more bytes within MaxDecoded.
func (r *cborReader) room(dst []byte, n int) error {
	if n > r.lim.MaxDecoded-len(dst) {
		return decodeErr(CBOR, r.pos, errDecoded(r.lim))
	}
	return nil
}

// roomQuoted checks that dst may take s as a JSON string within MaxDecoded.
// The exact length is only counted when the worst case (every byte escaped
// as \u00XX) does not fit.
// extra counts what follows (a map key's colon).
func (r *cborReader) roomQuoted(dst, s []byte, extra int) error {
	if 6*len(s)+2+extra <= r.lim.MaxDecoded-len(dst) {
		return nil
	}
	return r.room(dst, quotedLen(s)+extra)
}

// value appends the JSON text of the next item to dst. Every item that may
// expand (strings, byte strings, bignums) is measured before it is written,
// so dst never grows past MaxDecoded by more than a few bytes.
func (r *cborReader) value(dst []byte, depth int) ([]byte, error) {
	start := r.pos
	if err := r.room(dst, 0); err != nil {
		return dst, err
	}
	major, n := r.head()
	switch major {
	case 0:
		return strconv.AppendUint(dst, n, 10), nil
	case 1:
		if n < math.MaxInt64 {
			return strconv.AppendInt(dst, -1-int64(n), 10), nil
		}
		v := new(big.Int).SetUint64(n)
		v.Add(v, big.NewInt(1)).Neg(v)
		return v.Append(dst, 10), nil
	case 2:
		b := r.data[r.pos : r.pos+int(n)]
		if err := r.room(dst, base64.StdEncoding.EncodedLen(len(b))+2); err != nil {
			return dst, err
		}
		r.pos += int(n)
		return appendBase64(dst, base64.StdEncoding, b), nil
	case 3:
		s := r.data[r.pos : r.pos+int(n)]
		if err := r.roomQuoted(dst, s, 0); err != nil {
			return dst, err
		}
		r.pos += int(n)
		if !utf8.Valid(s) {
			return dst, &DecodeError{Encoding: CBOR, Offset: start, Reason: "text string is not valid UTF-8"}
		}
		return appendQuotedUTF8(dst, s), nil
	case 4:
		if err := r.container(start, depth, n); err != nil {
			return dst, err
		}
		dst = append(dst, '[')
		for i := range n {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = r.value(dst, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case 5:
		if err := r.container(start, depth, n); err != nil {
			return dst, err
		}
		dst = append(dst, '{')
		// Duplicate keys make the JSON object ambiguous. Small maps compare
		// keys in place; larger ones use a set.
		var small [32][]byte
		var seen map[string]struct{}
		for i := range n {
			if i > 0 {
				dst = append(dst, ',')
			}
			if r.peekMajor() != 3 {
				return dst, r.fail("map key is not a text string")
			}
			_, kl := r.head()
			k := r.data[r.pos : r.pos+int(kl)]
			r.pos += int(kl)
			if !utf8.Valid(k) {
				return dst, r.fail("map key is not valid UTF-8")
			}
			if err := r.roomQuoted(dst, k, 1); err != nil {
				return dst, err
			}
			if n <= uint64(len(small)) {
				for _, o := range small[:i] {
					if string(o) == string(k) {
						return dst, r.fail("duplicate map key " + strconv.Quote(string(k)))
					}
				}
				small[i] = k
			} else {
				if seen == nil {
					seen = make(map[string]struct{}, n)
				}
				if _, dup := seen[string(k)]; dup {
					return dst, r.fail("duplicate map key " + strconv.Quote(string(k)))
				}
				seen[string(k)] = struct{}{}
			}
			dst = appendQuotedUTF8(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = r.value(dst, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case 6:
		return r.tagged(dst, n, start, depth)
	}
	// major 7
	switch {
	case n == 20:
		return append(dst, "false"...), nil
	case n == 21:
		return append(dst, "true"...), nil
	case n == 22:
		return append(dst, "null"...), nil
	}
	var f float64
	switch r.data[start] & 0x1f {
	case 25:
		f = float64(float16.Frombits(uint16(n)).Float32())
	case 26:
		f = float64(math.Float32frombits(uint32(n)))
	case 27:
		f = math.Float64frombits(n)
	default:
		return dst, &DecodeError{Encoding: CBOR, Offset: start, Reason: "simple value " + strconv.FormatUint(n, 10) + " has no JSON form"}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, &DecodeError{Encoding: CBOR, Offset: start, Reason: "NaN and infinities have no JSON form"}
	}
	return appendFloat(dst, f), nil
}

// container checks a container at nesting level depth with n elements
// against the limits. (The library's well-formedness pass has already
// enforced its own, coarser bounds.)
func (r *cborReader) container(start, depth int, n uint64) error {
	if depth > r.lim.MaxDepth {
		return decodeErr(CBOR, start, errTooDeep(r.lim))
	}
	if n > uint64(r.lim.MaxElements) {
		return decodeErr(CBOR, start, errTooMany(r.lim))
	}
	return nil
}

// smallInt reports whether the integer item at r.pos fits int64 once its sign
// is applied.
func (r *cborReader) smallInt() bool {
	p := r.pos
	_, v := r.head()
	r.pos = p
	return v <= math.MaxInt64
}

func (r *cborReader) tagged(dst []byte, tag uint64, start, depth int) ([]byte, error) {
	inner := r.peekMajor()
	switch tag {
	case 2, 3:
		if inner != 2 {
			return dst, r.fail("bignum tag without a byte string")
		}
		_, n := r.head()
		mag := r.data[r.pos : r.pos+int(n)]
		r.pos += int(n)
		mag, err := r.magnitude(mag, start)
		if err != nil {
			return dst, err
		}
		if len(mag) <= 8 {
			var u uint64
			for _, b := range mag {
				u = u<<8 | uint64(b)
			}
			if tag == 2 {
				return strconv.AppendUint(dst, u, 10), nil
			}
			if u < math.MaxInt64 {
				return strconv.AppendInt(dst, -1-int64(u), 10), nil
			}
		}
		v := new(big.Int).SetBytes(mag)
		if tag == 3 {
			v.Add(v, big.NewInt(1)).Neg(v)
		}
		return r.number(dst, v.Append(dst, 10))
	case 4:
		// [exponent, mantissa]: exponent an integer, mantissa an integer or
		// bignum.
		p := r.pos
		if major, n := r.head(); major != 4 || n != 2 {
			r.pos = p
			return dst, r.fail("decimal fraction is not a 2-element array")
		}
		em, ev := r.head()
		if em > 1 || ev > math.MaxInt64 {
			return dst, r.fail("decimal fraction exponent is not a 64-bit integer")
		}
		exp := int64(ev)
		if em == 1 {
			exp = -1 - exp
		}
		mant := new(big.Int)
		switch mm := r.peekMajor(); {
		case (mm == 0 || mm == 1) && r.smallInt():
			// The common case: a mantissa that fits int64, no big.Int.
			_, mv := r.head()
			m := int64(mv)
			if mm == 1 {
				m = -1 - m
			}
			dst = strconv.AppendInt(dst, m, 10)
			if exp != 0 {
				dst = append(dst, 'e')
				dst = strconv.AppendInt(dst, exp, 10)
			}
			return dst, nil
		case mm == 0 || mm == 1:
			_, mv := r.head()
			mant.SetUint64(mv)
			if mm == 1 {
				mant.Add(mant, big.NewInt(1)).Neg(mant)
			}
		case mm == 6 && (r.data[r.pos] == 0xc2 || r.data[r.pos] == 0xc3):
			neg := r.data[r.pos] == 0xc3
			r.pos++
			if r.peekMajor() != 2 {
				return dst, r.fail("bignum tag without a byte string")
			}
			_, n := r.head()
			mag, err := r.magnitude(r.data[r.pos:r.pos+int(n)], start)
			if err != nil {
				return dst, err
			}
			mant.SetBytes(mag)
			r.pos += int(n)
			if neg {
				mant.Add(mant, big.NewInt(1)).Neg(mant)
			}
		default:
			return dst, r.fail("decimal fraction mantissa is not an integer")
		}
		return r.number(dst, appendDecimal(dst, mant, exp))
	case 21, 22, 23:
		if inner != 2 {
			// The tags are hints for byte strings; on anything else they
			// mean nothing and the item is taken as it is.
			return r.value(dst, depth)
		}
		_, n := r.head()
		b := r.data[r.pos : r.pos+int(n)]
		if err := r.room(dst, 2*len(b)+2); err != nil { // hex, the longest of the three
			return dst, err
		}
		r.pos += int(n)
		switch tag {
		case 21:
			return appendBase64(dst, base64.RawURLEncoding, b), nil
		case 22:
			return appendBase64(dst, base64.StdEncoding, b), nil
		}
		dst = append(dst, '"')
		dst = hex.AppendEncode(dst, b)
		return append(dst, '"'), nil
	case 55799: // self-described CBOR
		return r.value(dst, depth)
	}
	return dst, &DecodeError{Encoding: CBOR, Offset: start, Reason: "tag " + strconv.FormatUint(tag, 10) + " is not supported"}
}

// magnitude strips a bignum magnitude's leading zeros and refuses one whose
// decimal text would exceed MaxNumberDigits, from its length alone: k bytes
// with a non-zero first byte make at least 2.4·(k-1)+1 digits. No
// conversion (superlinear in math/big) starts on a magnitude past the limit.
// at is the offset of the number, for the error.
func (r *cborReader) magnitude(mag []byte, at int) ([]byte, error) {
	for len(mag) > 0 && mag[0] == 0 {
		mag = mag[1:]
	}
	if len(mag) > r.lim.MaxNumberDigits/2 {
		e := decodeErr(CBOR, at, errNumber(r.lim))
		e.Reason = "a bignum of " + strconv.Itoa(len(mag)) + " bytes has more than " + strconv.Itoa(r.lim.MaxNumberDigits) + " digits (limit MaxNumberDigits)"
		return nil, e
	}
	return mag, nil
}

// number checks the number text that was appended to prev to make dst.
func (r *cborReader) number(prev, dst []byte) ([]byte, error) {
	if mantissaDigits(dst[len(prev):]) > r.lim.MaxNumberDigits {
		return prev, decodeErr(CBOR, r.pos, errNumber(r.lim))
	}
	return dst, nil
}
