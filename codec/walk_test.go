package codec

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// textSink rebuilds JSON text from a walk, so that a walk can be compared
// with what jsontext reads.
type textSink struct {
	b    []byte
	next []bool // per open container: a comma before the next element
}

func (s *textSink) sep() {
	if k := len(s.next); k > 0 {
		if s.next[k-1] {
			s.b = append(s.b, ',')
		}
		s.next[k-1] = true
	}
}
func (s *textSink) null()          { s.sep(); s.b = append(s.b, "null"...) }
func (s *textSink) boolean(v bool) { s.sep(); s.b = strconv.AppendBool(s.b, v) }
func (s *textSink) str(v []byte)   { s.sep(); s.b = appendQuotedUTF8(s.b, v) }
func (s *textSink) binary([]byte) bool {
	return false
}
func (s *textSink) key(k []byte) {
	s.sep()
	s.b = append(appendQuotedUTF8(s.b, k), ':')
	s.next[len(s.next)-1] = false
}
func (s *textSink) number(n number) {
	s.sep()
	switch n.kind {
	case numInt:
		s.b = strconv.AppendInt(s.b, n.i, 10)
	case numUint:
		s.b = strconv.AppendUint(s.b, n.u, 10)
	case numFloat:
		s.b = appendFloat(s.b, n.f)
	case numBig:
		s.b = n.mant.Append(s.b, 10)
	case numDecimal:
		s.b = appendDecimal(s.b, n.mant, n.exp)
	}
}
func (s *textSink) beginArray()  { s.sep(); s.b = append(s.b, '['); s.next = append(s.next, false) }
func (s *textSink) beginObject() { s.sep(); s.b = append(s.b, '{'); s.next = append(s.next, false) }
func (s *textSink) endArray(int) { s.b = append(s.b, ']'); s.next = s.next[:len(s.next)-1] }
func (s *textSink) endObject(int) {
	s.b = append(s.b, '}')
	s.next = s.next[:len(s.next)-1]
}

// FuzzWalkMatchesJSONText: walkJSON accepts exactly the JSON values that
// jsontext accepts by default (RFC 8259 with RFC 7493's rules), refusing
// only numbers the encodings cannot carry beside, and replays each as the
// same value.
func FuzzWalkMatchesJSONText(f *testing.F) {
	for _, e := range loadCorpus(f) {
		if len(e.json) <= 1<<16 {
			f.Add(e.json)
		}
	}
	for _, s := range []string{` {"a" : [1, -0, 0.5e-3, 1E+2, true, false, null, "x\u00e9\ud83d\ude00\n"]} `, `"\ud800"`, `"\udc00x"`,
		`{"a":1,"\u0061":2}`, `[1,]`, `{"a":1,}`, `01`, `1.`, `-`, `"\x"`, "\"\x01\"", "\"\xff\"", `[1e400, 123456789012345678901234567890]`,
		`{"data":"AAEC","blob":"YQ=="}`, `"` + strings.Repeat("é", 9) + `"`, `1 2`, ``, `nul`, `[` + strings.Repeat(`{"k":`, 20) + `0` + strings.Repeat(`}`, 20) + `]`} {
		f.Add([]byte(s))
	}
	lim := DefaultLimits()
	lim.MaxNumberDigits = math.MaxInt
	f.Fuzz(func(t *testing.T, data []byte) {
		var s textSink
		err := walkJSON(data, lim, &s)
		valid := jsontext.Value(data).IsValid()
		var ee *EncodeError
		var le *LimitError
		switch {
		case err != nil && (errors.As(err, &ee) || errors.As(err, &le)):
			// A number or limit refused: the walk stops there, whatever
			// follows.
		case (err == nil) != valid:
			t.Fatalf("walk of %q: err %v, jsontext valid %v", data, err, valid)
		case err == nil:
			if ok, why := valueEqualText(data, s.b); !ok {
				t.Fatalf("walk of %q replayed %s: %s", data, s.b, why)
			}
		}
	})
}

// FuzzFromJSONMatchesWalk: the fused JSON → CBOR and JSON → protobuf passes
// (cborWriter.fromJSON, pbWriter.fromJSON) write exactly what walkJSON
// writes through the same writer as its sink, and refuse exactly what
// walkJSON refuses, also under small limits.
func FuzzFromJSONMatchesWalk(f *testing.F) {
	for _, e := range loadCorpus(f) {
		if len(e.json) <= 1<<16 {
			f.Add(e.json, uint8(0))
		}
	}
	for _, s := range []string{` {"a" : [1, -0, 0.5e-3, 1E+2, true, false, null, "x\u00e9\ud83d\ude00\n"]} `, `"\ud800"`, `"\udc00x"`,
		`{"a":1,"\u0061":2}`, `[1,]`, `{"a":1,}`, `01`, `-01`, `-0`, `0`, `-123456789012345678`, `1234567890123456789`, `1.`, `-`, `"\x"`, "\"\x01\"", "\"\xff\"",
		`[1e400, 123456789012345678901234567890]`, `truex`, `[tru]`, `{"a" 1}`, `{"a":1 "b":2}`, `{"data":"AAEC","blob":"YQ==","data2":"AAEC"}`,
		`{"data":"AAE\u0043"}`, `{"data":"AAEC","data":"x"}`, `{"b":1,"a":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"a":18}`,
		`"` + strings.Repeat("é", 9) + `"`, `"` + strings.Repeat("a", 300) + `"`, `[1e5,1e5,1e5,1e5,1e5,1e5,1e5,1e5,"` + strings.Repeat("a", 30) + `"]`, `[1.5,-0.0,0.0,-0.25,123456789.012345,1234567890.123456,0.1e1]`, `1 2`, ``, `nul`, `[` + strings.Repeat(`{"k":`, 20) + `0` + strings.Repeat(`}`, 20) + `]`} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(0x23))
	}
	f.Fuzz(func(t *testing.T, data []byte, small uint8) {
		lim := DefaultLimits()
		if small != 0 { // depth 1-8, elements 1-16, digits 32 (the least)
			lim.MaxDepth, lim.MaxElements, lim.MaxNumberDigits = int(small&7)+1, int(small>>4)+1, 32
		}
		ref := &cborWriter{}
		refErr := walkJSON(data, lim, ref)
		fast := &cborWriter{b: []byte{0xff}}
		ok := fast.fromJSON(data, lim)
		switch {
		case ok != (refErr == nil):
			t.Fatalf("fromJSON of %q: %v, walkJSON: %v", data, ok, refErr)
		case !ok && (len(fast.b) != 1 || len(fast.heads) != 0):
			t.Fatalf("fromJSON of %q refused but left % x", data, fast.b)
		case ok && !bytes.Equal(fast.b[1:], ref.b):
			t.Fatalf("fromJSON of %q wrote\n% x\nwalkJSON wrote\n% x", data, fast.b[1:], ref.b)
		}
		pref := &pbWriter{}
		pbErr := walkJSON(data, lim, pref)
		pfast := &pbWriter{b: []byte{0xff}}
		pok := pfast.fromJSON(data, lim)
		switch {
		case pok != (pbErr == nil):
			t.Fatalf("protobuf fromJSON of %q: %v, walkJSON: %v", data, pok, pbErr)
		case !pok && (len(pfast.b) != 1 || len(pfast.lens)+len(pfast.open)+len(pfast.ctx) != 0):
			t.Fatalf("protobuf fromJSON of %q refused but left % x", data, pfast.b)
		case pok:
			if got, want := pfast.finish()[1:], pref.finish(); !bytes.Equal(got, want) {
				t.Fatalf("protobuf fromJSON of %q wrote\n% x\nwalkJSON wrote\n% x", data, got, want)
			}
		}
	})
}
