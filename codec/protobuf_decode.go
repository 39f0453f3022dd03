package codec

// This file is long because it holds both protobuf readers: the decoder that
// writes JSON from Value messages, and the scan that checks a payload against
// the limits before it is decoded.

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Decoding protobuf (spec §4.4): wire bytes to JSON text.
//
// The decoder reads wire bytes that the scan has checked, with proto3's
// rules for a field that occurs more than once (what proto.Unmarshal does;
// FuzzProtobufMatchesUnmarshal holds it to that): the last scalar wins, the
// occurrences of a message field merge (as if their bytes were one), the
// last member of a oneof replaces the others, and a field of an unknown
// number or of another wire type than its own is skipped. (The scan has
// checked that every string, in every occurrence, is UTF-8.)

// segs holds the bytes of a message field's occurrences, usually one.
type segs struct {
	n     int
	first []byte
	more  [][]byte
}

func (s *segs) add(b []byte) {
	if s.n == 0 {
		s.first = b
	} else {
		s.more = append(s.more, b)
	}
	s.n++
}

func (s *segs) at(i int) []byte {
	if i == 0 {
		return s.first
	}
	return s.more[i-1]
}

// pbField is one field: its number, wire type, and its bytes (BytesType) or
// value (VarintType, Fixed64Type).
type pbField struct {
	num protowire.Number
	typ protowire.Type
	val []byte
	v   uint64
}

// shortBytesField reads the field that starts b when it is the common one:
// a length-delimited field with a one-byte tag (numbers 1-15) and a
// one-byte length (under 128 bytes), which need no varint decoding. ok is
// false for anything else, left to protowire.
func shortBytesField(b []byte) (num protowire.Number, v, rest []byte, ok bool) {
	if len(b) < 2 || b[0]&0x87 != byte(protowire.BytesType) || b[0] < 8 || b[1] >= 0x80 || int(b[1]) > len(b)-2 {
		return 0, nil, nil, false
	}
	end := 2 + int(b[1])
	return protowire.Number(b[0] >> 3), b[2:end:end], b[end:], true
}

// nextField reads the field that starts b, which the scan has checked.
func nextField(b []byte) (pbField, []byte) {
	if num, v, rest, ok := shortBytesField(b); ok {
		return pbField{num: num, typ: protowire.BytesType, val: v}, rest
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return pbField{}, nil
	}
	b = b[n:]
	f := pbField{num: num, typ: typ}
	switch typ {
	case protowire.BytesType:
		f.val, n = protowire.ConsumeBytes(b)
	case protowire.VarintType:
		f.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.v, n = protowire.ConsumeFixed64(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return pbField{}, nil
	}
	return f, b[n:]
}

// errUTF8 refuses a string field that is not UTF-8, as proto.Unmarshal does.
var errUTF8 = errors.New("string field contains invalid UTF-8")

// decodeMessage appends the members of a pb.Message to buf and records
// where they lie.
func (c *protoCodec) decodeMessage(buf []byte, s segs) (envSpans, []byte, error) {
	var e envSpans
	var jv, method []byte
	var hasJ, hasM bool
	var vals [4]segs // id, params, result, error
	for i := range s.n {
		for b := s.at(i); len(b) > 0; {
			f, rest := nextField(b)
			b = rest
			if f.typ != protowire.BytesType {
				continue
			}
			switch f.num {
			case 1, 3:
				if f.num == 1 {
					jv, hasJ = f.val, true
				} else {
					method, hasM = f.val, true
				}
			case 2:
				vals[0].add(f.val)
			case 4, 5, 6:
				vals[f.num-3].add(f.val)
			}
		}
	}
	if hasJ {
		from := len(buf)
		buf = appendQuotedUTF8(buf, jv)
		e.spans[0] = span{from, len(buf)}
	}
	if hasM {
		from := len(buf)
		buf = appendQuotedUTF8(buf, method)
		e.spans[2] = span{from, len(buf)}
	}
	for i, slot := range [4]int{1, 3, 4, 5} {
		if vals[i].n == 0 {
			continue
		}
		from := len(buf)
		var err error
		if buf, err = c.value(buf, vals[i], 2); err != nil { // the message is level 1, as in the json codec
			return e, buf, err
		}
		e.spans[slot] = span{from, len(buf)}
	}
	return e, buf, nil
}

// value appends the JSON text of the pb.Value in s at nesting level depth.
func (c *protoCodec) value(dst []byte, s segs, depth int) ([]byte, error) {
	var kind protowire.Number
	var f pbField // the last scalar member of the oneof
	var sub segs  // the occurrences of the object or array member
	for i := range s.n {
		for b := s.at(i); len(b) > 0; {
			g, rest := nextField(b)
			b = rest
			switch {
			case g.num >= 1 && g.num <= 4 && g.typ == protowire.VarintType,
				g.num == 5 && g.typ == protowire.Fixed64Type:
			case g.num >= 6 && g.num <= 8 && g.typ == protowire.BytesType:
			case (g.num == 9 || g.num == 10) && g.typ == protowire.BytesType:
				if kind != g.num {
					sub = segs{}
				}
				sub.add(g.val)
			default:
				continue
			}
			kind, f = g.num, g
		}
	}
	switch kind {
	case 0, 1:
		return append(dst, "null"...), nil
	case 2:
		return strconv.AppendBool(dst, f.v != 0), nil
	case 3:
		return strconv.AppendInt(dst, protowire.DecodeZigZag(f.v), 10), nil
	case 4:
		return strconv.AppendUint(dst, f.v, 10), nil
	case 5:
		d := math.Float64frombits(f.v)
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return dst, &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "NaN and infinities have no JSON form"}
		}
		return appendFloat(dst, d), nil
	case 6:
		return appendQuotedUTF8(dst, f.val), nil
	case 7:
		return appendBase64(dst, base64.StdEncoding, f.val), nil
	case 8:
		if _, _, _, ok := normDecimal(string(f.val)); !ok || !validNumber(string(f.val)) {
			return dst, &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "number " + strconv.Quote(clip(string(f.val))) + " is not a JSON number"}
		}
		return append(dst, f.val...), nil
	case 9:
		return c.object(dst, sub, depth)
	}
	return c.array(dst, sub, depth)
}

// items calls each with the contents of every occurrence of field 1 (the
// repeated field of Object and Array) in s, failing past MaxElements.
func (c *protoCodec) items(s segs, each func(i int, b []byte) error) error {
	n := 0
	for i := range s.n {
		for b := s.at(i); len(b) > 0; {
			f, rest := nextField(b)
			b = rest
			if f.num != 1 || f.typ != protowire.BytesType {
				continue
			}
			if n == c.lim.MaxElements {
				return decodeErr(Protobuf, -1, errTooMany(c.lim))
			}
			if err := each(n, f.val); err != nil {
				return err
			}
			n++
		}
	}
	return nil
}

func (c *protoCodec) array(dst []byte, s segs, depth int) ([]byte, error) {
	if depth > c.lim.MaxDepth {
		return dst, decodeErr(Protobuf, -1, errTooDeep(c.lim))
	}
	dst = append(dst, '[')
	err := c.items(s, func(i int, b []byte) error {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		dst, err = c.value(dst, segs{n: 1, first: b}, depth+1)
		return err
	})
	return append(dst, ']'), err
}

func (c *protoCodec) object(dst []byte, s segs, depth int) ([]byte, error) {
	if depth > c.lim.MaxDepth {
		return dst, decodeErr(Protobuf, -1, errTooDeep(c.lim))
	}
	var small [16][]byte
	var seen map[string]struct{}
	dst = append(dst, '{')
	err := c.items(s, func(i int, b []byte) error {
		// Member: key (1), value (2).
		var key []byte
		var val segs
		for len(b) > 0 {
			f, rest := nextField(b)
			b = rest
			if f.typ != protowire.BytesType {
				continue
			}
			switch f.num {
			case 1:
				key = f.val
			case 2:
				val.add(f.val)
			}
		}
		if i < len(small) {
			for _, k := range small[:i] {
				if string(k) == string(key) {
					return &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "duplicate member " + strconv.Quote(string(key))}
				}
			}
			small[i] = key
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*len(small))
				for _, k := range small {
					seen[string(k)] = struct{}{}
				}
			}
			if _, dup := seen[string(key)]; dup {
				return &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "duplicate member " + strconv.Quote(string(key))}
			}
			seen[string(key)] = struct{}{}
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendQuotedUTF8(dst, key), ':')
		var err error
		dst, err = c.value(dst, val, depth+1)
		return err
	})
	return append(dst, '}'), err
}

// validNumber reports whether s is a JSON number.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// protoScan checks a protobuf payload's wire bytes against the limits
// before it is unmarshalled (spec §8): the elements of a batch (MaxBatch),
// of each array and object (MaxElements), the nesting (MaxDepth), the text
// of each number (MaxNumberDigits), and what the payload expands to
// (MaxDecoded: ProtobufValueCost per value and member, plus the text of its
// strings and bytes as Go strings and as JSON). It allocates nothing and
// costs one pass over the bytes; malformed wire bytes are refused here too.
type protoScan struct {
	lim  Limits
	cost int
}

// fields calls f with the number and contents of each length-delimited
// field of the message in b, skipping the others.
func (sc *protoScan) fields(b []byte, f func(num protowire.Number, v []byte) error) error {
	for len(b) > 0 {
		if num, v, rest, ok := shortBytesField(b); ok {
			if err := f(num, v); err != nil {
				return err
			}
			b = rest
			continue
		}
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if num > protowire.MaxValidNumber {
			return errors.New("field number " + strconv.Itoa(int(num)) + " is out of range")
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b)
			if err := f(num, v); err != nil {
				return err
			}
		}
		b = b[m:]
	}
	return nil
}

// repeated calls f with each occurrence of field 1 in b (the repeated
// field of Batch, Object and Array), failing with tooMany past max of them.
func (sc *protoScan) repeated(b []byte, max int, tooMany func(Limits) error, f func([]byte) error) error {
	n := 0
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		if num != 1 {
			return nil
		}
		if n++; n > max {
			return tooMany(sc.lim)
		}
		return f(v)
	})
}

func (sc *protoScan) spend(n int) error {
	if sc.cost += n; sc.cost > sc.lim.MaxDecoded {
		return errDecoded(sc.lim)
	}
	return nil
}

func (sc *protoScan) payload(b []byte) error {
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return sc.message(v)
		case 2:
			return sc.repeated(v, sc.lim.MaxBatch, errBatch, sc.message)
		}
		return nil
	})
}

func (sc *protoScan) message(b []byte) error {
	if err := sc.spend(ProtobufValueCost); err != nil {
		return err
	}
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 2, 4, 5, 6: // id, params, result, error
			return sc.value(v, 2) // the message is level 1, as in the json codec
		case 1, 3: // jsonrpc, method
			if !utf8.Valid(v) {
				return errUTF8
			}
		}
		return sc.spend(2*len(v) + 2)
	})
}

func (sc *protoScan) value(b []byte, depth int) error {
	if err := sc.spend(ProtobufValueCost); err != nil {
		return err
	}
	if depth > sc.lim.MaxDepth+1 {
		return errTooDeep(sc.lim)
	}
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 6: // string
			if !utf8.Valid(v) {
				return errUTF8
			}
			return sc.spend(len(v) + quotedLen(v))
		case 7: // bytes
			return sc.spend(len(v) + base64.StdEncoding.EncodedLen(len(v)) + 2)
		case 8: // number text
			if !utf8.Valid(v) {
				return errUTF8
			}
			if mantissaDigits(v) > sc.lim.MaxNumberDigits {
				return errNumber(sc.lim)
			}
			return sc.spend(2 * len(v))
		case 9: // object members
			return sc.repeated(v, sc.lim.MaxElements, errTooMany, func(v []byte) error { return sc.member(v, depth) })
		case 10: // array items
			return sc.repeated(v, sc.lim.MaxElements, errTooMany, func(v []byte) error { return sc.value(v, depth+1) })
		}
		return nil
	})
}

func (sc *protoScan) member(b []byte, depth int) error {
	if err := sc.spend(ProtobufValueCost); err != nil {
		return err
	}
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 2:
			return sc.value(v, depth+1)
		case 1:
			if !utf8.Valid(v) {
				return errUTF8
			}
		}
		return sc.spend(len(v) + quotedLen(v) + 1) // the key
	})
}
