package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// b64Pairs holds, for every 12 bits, their two standard base64 characters
// as a little-endian uint16.
var b64Pairs = func() (t [4096]uint16) {
	const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for v := range t {
		t[v] = uint16(a[v>>6]) | uint16(a[v&63])<<8
	}
	return t
}()

// appendStdBase64 appends the padded standard base64 of src, as
// base64.StdEncoding.AppendEncode does, 6 bytes to 8 characters at a time
// through b64Pairs (about twice as fast on a large byte string, which a
// CBOR or protobuf decode of an image turns into JSON text).
func appendStdBase64(dst, src []byte) []byte {
	n := base64.StdEncoding.EncodedLen(len(src))
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	i, o := 0, 0
	for ; i+8 <= len(src) && o+8 <= len(out); i, o = i+6, o+8 {
		x := binary.BigEndian.Uint64(src[i:]) // the 6 bytes in the top 48 bits
		binary.LittleEndian.PutUint64(out[o:], uint64(b64Pairs[x>>52])|
			uint64(b64Pairs[x>>40&0xfff])<<16|
			uint64(b64Pairs[x>>28&0xfff])<<32|
			uint64(b64Pairs[x>>16&0xfff])<<48)
	}
	// i is a multiple of 3: the rest encodes on its own, padding included.
	base64.StdEncoding.Encode(out[o:], src[i:])
	return dst[:len(dst)+n]
}

// decodedLen returns the length of the bytes that padded standard base64
// text b64 (of a length that is a multiple of 4) holds.
func decodedLen(b64 []byte) int {
	n := base64.StdEncoding.DecodedLen(len(b64))
	if len(b64) > 0 && b64[len(b64)-1] == '=' {
		n--
		if b64[len(b64)-2] == '=' {
			n--
		}
	}
	return n
}

// canonicalShape is the cheap part of the canonical base64 test: a length
// that is a multiple of 4 and no line breaks (which the decoder would skip).
// Decoding with base64.StdEncoding.Strict() then settles it: it rejects
// non-zero padding bits, so text that decodes re-encodes to itself.
func canonicalShape(b []byte) bool {
	return len(b)%4 == 0 && bytes.IndexAny(b, "\r\n") < 0
}

var strictBase64 = base64.StdEncoding.Strict()
