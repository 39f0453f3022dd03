package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/x448/float16"
)

// The other forms of a message that a decoder must take as the same value
// (the "accept" lists of testdata/vectors/messages.json): rewrites of the
// bytes this implementation writes, each one freedom of the encoding that
// the decoders of spec §4.4 accept. TestVectors checks that each decodes to
// the message's value; what the decoders refuse is in malformedPayloads.

// smallForms bounds the messages that get other forms: a larger one
// (tools_list_result_50, 29 KiB) gets none, to keep the file small; the
// smaller ones cover every form.
const smallForms = 4 << 10

// ---- JSON ----

type jnode struct {
	kind byte // 'o', 'a', 's', 'n' (number text), 'l' (literal: true, false, null)
	s    string
	keys []string
	vals []*jnode
}

func parseJNode(t testing.TB, b []byte) *jnode {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var read func() *jnode
	read = func() *jnode {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("re-reading canonical JSON: %v", err)
		}
		switch v := tok.(type) {
		case json.Delim:
			n := &jnode{kind: 'a'}
			if v == '{' {
				n.kind = 'o'
			}
			for d.More() {
				if n.kind == 'o' {
					k, _ := d.Token()
					n.keys = append(n.keys, k.(string))
				}
				n.vals = append(n.vals, read())
			}
			d.Token()
			return n
		case string:
			return &jnode{kind: 's', s: v}
		case json.Number:
			return &jnode{kind: 'n', s: string(v)}
		case bool:
			return &jnode{kind: 'l', s: strconv.FormatBool(v)}
		}
		return &jnode{kind: 'l', s: "null"}
	}
	n := read()
	if _, err := d.Token(); err != io.EOF {
		t.Fatalf("re-reading canonical JSON: data after the value (%v)", err)
	}
	return n
}

type jsonForm struct {
	space, reverse, escape, numbers bool
}

// write writes n; payload is true under a message's params or result, where
// numbers may be respelled (an id or an error code keeps its spelling).
func (f jsonForm) write(b []byte, n *jnode, payload bool, depth int) []byte {
	sp := func(b []byte) []byte {
		if f.space {
			return append(b, " \t\r\n"...)
		}
		return b
	}
	b = sp(b)
	switch n.kind {
	case 'o':
		b = append(b, '{')
		order := make([]int, len(n.keys))
		for i := range order {
			order[i] = i
			if f.reverse {
				order[i] = len(n.keys) - 1 - i
			}
		}
		for j, i := range order {
			if j > 0 {
				b = append(b, ',')
			}
			b = sp(f.quote(sp(b), n.keys[i]))
			b = append(b, ':')
			// Depth 1 is a message (or a batch's array at depth 0 holds them).
			isMsg := depth == 0 || depth == 1
			b = f.write(b, n.vals[i], payload || isMsg && (n.keys[i] == "params" || n.keys[i] == "result"), depth+1)
		}
		b = append(sp(b), '}')
	case 'a':
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = f.write(b, v, payload, depth+1)
		}
		b = append(sp(b), ']')
	case 's':
		b = f.quote(b, n.s)
	case 'n':
		if f.numbers && payload {
			b = append(b, respell(n.s)...)
		} else {
			b = append(b, n.s...)
		}
	default:
		b = append(b, n.s...)
	}
	return sp(b)
}

func (f jsonForm) quote(b []byte, s string) []byte {
	if !f.escape {
		return appendQuotedUTF8(b, []byte(s))
	}
	b = append(b, '"')
	for _, r := range s {
		if r == '/' {
			b = append(b, `\/`...)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			b = append(b, `\u`...)
			b = append(b, strings.ToUpper(strconv.FormatUint(uint64(u)|0x10000, 16)[1:])...)
		}
	}
	return append(b, '"')
}

// respell writes a number as its significant digits and a power of ten:
// 42 → 42E0, 0.1 → 1E-1, 1.0 → 1E0, -0 → -0E0.
func respell(s string) string {
	neg, digits, exp, ok := normDecimal(s)
	if !ok {
		return s
	}
	if digits == "" {
		digits = "0"
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + digits + "E" + strconv.FormatInt(exp, 10)
}

func jsonAlternatives(t testing.TB, canon []byte) []altVector {
	if len(canon) > smallForms {
		return nil
	}
	n := parseJNode(t, canon)
	forms := []struct {
		name string
		f    jsonForm
	}{
		{"whitespace (space, tab, CR, LF) around every token", jsonForm{space: true}},
		{"object members in reverse order", jsonForm{reverse: true}},
		{`every string character escaped as \uXXXX (UTF-16), "/" as \/`, jsonForm{escape: true}},
		{"every number of params and result respelled as digits E exponent (42E0, 1E-1)", jsonForm{numbers: true}},
	}
	all := jsonForm{true, true, true, true}
	forms = append(forms, struct {
		name string
		f    jsonForm
	}{"all of the JSON forms at once", all})
	return collect(JSON, canon, len(forms), func(i int) (string, []byte) { return forms[i].name, forms[i].f.write(nil, n, false, 0) })
}

// collect keeps the forms that differ from the canonical bytes (a message
// with no number has no respelled form).
func collect(n Name, canon []byte, k int, form func(int) (string, []byte)) []altVector {
	var out []altVector
	seen := map[string]bool{string(canon): true}
	for i := range k {
		name, b := form(i)
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, altVector{n, name, hex.EncodeToString(b)})
		}
	}
	return out
}

// ---- CBOR ----

type citem struct {
	major, info byte
	arg         uint64
	content     []byte // a string's bytes
	kids        []*citem
}

func parseCItem(t testing.TB, b []byte) *citem {
	pos := 0
	var read func() *citem
	read = func() *citem {
		c := &citem{major: b[pos] >> 5, info: b[pos] & 0x1f}
		pos++
		switch {
		case c.info < 24:
			c.arg = uint64(c.info)
		case c.info <= 27:
			n := 1 << (c.info - 24)
			var buf [8]byte
			copy(buf[8-n:], b[pos:pos+n])
			c.arg = binary.BigEndian.Uint64(buf[:])
			pos += n
		default:
			t.Fatalf("canonical CBOR has info %d", c.info)
		}
		switch c.major {
		case 2, 3:
			c.content = b[pos : pos+int(c.arg)]
			pos += int(c.arg)
		case 4:
			for range c.arg {
				c.kids = append(c.kids, read())
			}
		case 5:
			for range 2 * c.arg {
				c.kids = append(c.kids, read())
			}
		case 6:
			c.kids = append(c.kids, read())
		}
		return c
	}
	c := read()
	if pos != len(b) {
		t.Fatal("canonical CBOR: data after the item")
	}
	return c
}

type cborForm struct {
	reverse, wide, float64s, untag, bignums, selfDescribed bool
}

func (f cborForm) head(b []byte, major byte, arg uint64) []byte {
	if f.wide {
		return binary.BigEndian.AppendUint64(append(b, major<<5|27), arg)
	}
	return appendHead(b, major, arg)
}

// writeTagged writes the item of a tag; decimal is true for tag 4.
func (f cborForm) writeTagged(b []byte, c *citem, decimal bool) []byte {
	if decimal && c.major == 4 {
		b = f.head(b, 4, c.arg)
		for i, k := range c.kids {
			b = f.write(b, k, i == 0)
		}
		return b
	}
	return f.write(b, c, false)
}

// write writes c; exponent is true for the exponent of a decimal fraction
// (tag 4), which must stay an integer (RFC 8949 §3.4.4).
func (f cborForm) write(b []byte, c *citem, exponent bool) []byte {
	switch c.major {
	case 0, 1:
		if f.bignums && !exponent {
			mag := new(big.Int).SetUint64(c.arg).Bytes()
			b = appendHead(b, 6, uint64(2+c.major)) // tags keep their preferred head
			b = f.head(b, 2, uint64(len(mag)))
			return append(b, mag...)
		}
		return f.head(b, c.major, c.arg)
	case 2, 3:
		return append(f.head(b, c.major, c.arg), c.content...)
	case 4:
		b = f.head(b, 4, c.arg)
		for _, k := range c.kids {
			b = f.write(b, k, false)
		}
		return b
	case 5:
		b = f.head(b, 5, c.arg)
		for i := range c.arg {
			j := i
			if f.reverse {
				j = c.arg - 1 - i
			}
			b = f.write(b, c.kids[2*j], false)
			if f.selfDescribed {
				b = appendHead(b, 6, 55799)
			}
			b = f.write(b, c.kids[2*j+1], false)
		}
		return b
	case 6:
		if f.untag && c.arg == 22 && c.kids[0].major == 2 {
			return f.write(b, c.kids[0], false)
		}
		// A tag keeps its preferred head: the decoder takes a bignum
		// mantissa of a decimal fraction only as 0xc2 or 0xc3.
		return f.writeTagged(appendHead(b, 6, c.arg), c.kids[0], c.arg == 4)
	}
	// Major 7: simple values as they are; floats in any width.
	var v float64
	switch c.info {
	case 25:
		v = float64(float16.Frombits(uint16(c.arg)).Float32())
	case 26:
		v = float64(math.Float32frombits(uint32(c.arg)))
	case 27:
		v = math.Float64frombits(c.arg)
	default:
		return append(b, c.major<<5|c.info)
	}
	if f.float64s {
		return binary.BigEndian.AppendUint64(append(b, 0xfb), math.Float64bits(v))
	}
	return appendFloatCBOR(b, v)
}

func cborAlternatives(t testing.TB, canon []byte) []altVector {
	if len(canon) > smallForms {
		return nil
	}
	c := parseCItem(t, canon)
	forms := []struct {
		name string
		f    cborForm
	}{
		{"map keys in reverse order", cborForm{reverse: true}},
		{"every integer and length head in its 8-byte form", cborForm{wide: true}},
		{"every float as a double (0xfb)", cborForm{float64s: true}},
		{"byte strings without tag 22 (untagged: standard base64)", cborForm{untag: true}},
		{"every integer as a bignum (tag 2 or 3)", cborForm{bignums: true}},
		{"tag 55799 (self-described CBOR) on the value of every map member", cborForm{selfDescribed: true}},
	}
	forms = append(forms, struct {
		name string
		f    cborForm
	}{"all of the CBOR forms at once", cborForm{true, true, true, true, true, true}})
	return collect(CBOR, canon, len(forms), func(i int) (string, []byte) {
		return forms[i].name, forms[i].f.write(nil, c, false)
	})
}

// ---- protobuf ----

// pbSchema gives, per message type of codec/pb/value.proto, the message type
// of each field that holds a message; other fields are scalars or strings.
var pbSchema = map[string]map[uint64]string{
	"Payload": {1: "Message", 2: "Batch"},
	"Batch":   {1: "Message"},
	"Message": {2: "Value", 4: "Value", 5: "Value", 6: "Value"},
	"Value":   {9: "Object", 10: "Array"},
	"Object":  {1: "Member"},
	"Member":  {2: "Value"},
	"Array":   {1: "Value"},
}

type pbf struct {
	num, typ uint64
	v        uint64 // varint or fixed64
	content  []byte // a string's or bytes' contents
	msg      []pbf  // a message's fields
	isMsg    bool
	sub      string // the message's type
}

func parsePB(t testing.TB, b []byte, typ string) []pbf {
	var out []pbf
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		b = b[n:]
		f := pbf{num: tag >> 3, typ: tag & 7}
		switch f.typ {
		case 0:
			f.v, n = binary.Uvarint(b)
			b = b[n:]
		case 1:
			f.v = binary.LittleEndian.Uint64(b)
			b = b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			f.content = b[n : n+int(l)]
			b = b[n+int(l):]
			if sub, ok := pbSchema[typ][f.num]; ok {
				f.isMsg, f.sub, f.msg = true, sub, parsePB(t, f.content, sub)
			}
		default:
			t.Fatalf("canonical protobuf has wire type %d", f.typ)
		}
		out = append(out, f)
	}
	return out
}

type pbForm struct {
	reverse, unknown, overlong bool
}

func (f pbForm) varint(b []byte, v uint64) []byte {
	if f.overlong && v < 1<<56 {
		// One byte more than needed: a continuation bit on a zero group.
		for v >= 0x80 {
			b = append(b, byte(v)|0x80)
			v >>= 7
		}
		return append(b, byte(v)|0x80, 0)
	}
	return binary.AppendUvarint(b, v)
}

// write writes a message's fields. ordered is true for Array and Batch,
// whose field 1 occurrences keep their order (an object's members may come
// in any order: an object is the same value).
func (f pbForm) write(b []byte, fields []pbf, ordered bool) []byte {
	for i := range fields {
		j := i
		if f.reverse && !ordered {
			j = len(fields) - 1 - i
		}
		g := fields[j]
		b = f.varint(b, g.num<<3|g.typ)
		switch g.typ {
		case 0:
			b = f.varint(b, g.v)
		case 1:
			b = binary.LittleEndian.AppendUint64(b, g.v)
		case 2:
			c := g.content
			if g.isMsg {
				c = f.write(nil, g.msg, g.sub == "Array" || g.sub == "Batch")
			}
			b = append(f.varint(b, uint64(len(c))), c...)
		}
	}
	if f.unknown {
		// Field 15 (varint 1) and field 99 (bytes "?"): numbers no message
		// of value.proto uses.
		b = f.varint(f.varint(b, 15<<3|0), 1)
		b = append(f.varint(f.varint(b, 99<<3|2), 1), '?')
	}
	return b
}

func protobufAlternatives(t testing.TB, canon []byte) []altVector {
	if len(canon) > smallForms {
		return nil
	}
	fields := parsePB(t, canon, "Payload")
	forms := []struct {
		name string
		f    pbForm
	}{
		{"the fields of every message in reverse order (an object's members too; an array's items and a batch's messages keep theirs)", pbForm{reverse: true}},
		{"unknown fields (15: varint, 99: bytes) at the end of every message", pbForm{unknown: true}},
		{"every tag, length and varint one byte longer than needed", pbForm{overlong: true}},
	}
	forms = append(forms, struct {
		name string
		f    pbForm
	}{"all of the protobuf forms at once", pbForm{true, true, true}})
	return collect(Protobuf, canon, len(forms), func(i int) (string, []byte) { return forms[i].name, forms[i].f.write(nil, fields, false) })
}
