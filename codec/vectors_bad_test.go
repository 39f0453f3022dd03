package codec

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// malformedPayloads lists payloads each decoder must refuse with -32700
// (spec §4.3, §4.4, §8): syntax, what an encoding has that JSON has not,
// duplicate names, and the default limits. Each is written out by hand.
func malformedPayloads(t testing.TB) []badPayload {
	const parse = int(jsonrpc.CodeParseError)
	deep := func(open, close string) string { return strings.Repeat(open, 64) + strings.Repeat(close, 64) }
	// CBOR pieces: a text string, and {"jsonrpc":"2.0","method":"ping"}.
	ct := func(s string) string {
		return hex.EncodeToString(appendHead(nil, 3, uint64(len(s)))) + hex.EncodeToString([]byte(s))
	}
	ping := ct("jsonrpc") + ct("2.0") + ct("method") + ct("ping")
	withParams := func(p string) string { return "a3" + ping + ct("params") + p }
	// Protobuf pieces: Payload{message: Message{jsonrpc: "2.0", method: "ping", params: p}}.
	pbMsg := func(inner string) string {
		b, _ := hex.DecodeString(inner)
		return "0a" + hex.EncodeToString(appendVarint(nil, uint64(len(b)))) + inner
	}
	pbPing := "0a03322e30" + "1a0470696e67"
	pbParams := func(v string) string {
		b, _ := hex.DecodeString(v)
		return pbMsg(pbPing + "22" + hex.EncodeToString(appendVarint(nil, uint64(len(b)))) + v)
	}
	j := func(s string) string { return hex.EncodeToString([]byte(s)) }
	out := []badPayload{
		{Name: "json/truncated", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"ping"`), Why: "the object is not closed"},
		{Name: "json/data after the value", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"ping"} {}`), Why: "one value per payload"},
		{Name: "json/duplicate member", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"ping","method":"ping"}`), Why: "duplicate member names are refused (spec §4.4)"},
		{Name: "json/trailing comma", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"ping",}`), Why: "RFC 8259 syntax"},
		{Name: "json/single quotes", Negotiated: JSON, Hex: j(`{'jsonrpc':'2.0','method':'ping'}`), Why: "RFC 8259 syntax"},
		{Name: "json/leading zero", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"ping","params":{"n":01}}`), Why: "RFC 8259 numbers"},
		{Name: "json/NaN", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"ping","params":{"n":NaN}}`), Why: "JSON has no NaN"},
		{Name: "json/invalid UTF-8", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"p`) + "ff" + j(`ng"}`), Why: "text must be UTF-8"},
		{Name: "json/control character in a string", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"p`) + "01" + j(`ng"}`), Why: "RFC 8259 strings"},
		{Name: "json/lone surrogate escape", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"p\ud800ng"}`), Why: "an escape must decode to a Unicode scalar value (RFC 7493)"},
		{Name: "json/depth 65", Negotiated: JSON, Hex: j(`{"jsonrpc":"2.0","method":"ping","params":` + deep("[", "]") + `}`), Why: "nesting past MaxDepth 64; the message is level 1 (spec §8)"},

		{Name: "cbor/indefinite-length map", Negotiated: CBOR, Hex: "bf" + ping + "ff", Why: "indefinite lengths are refused (spec §4.4)"},
		{Name: "cbor/indefinite-length text string", Negotiated: CBOR, Hex: "a2" + ct("jsonrpc") + ct("2.0") + ct("method") + "7f" + ct("pi") + ct("ng") + "ff", Why: "indefinite lengths are refused"},
		{Name: "cbor/indefinite-length array", Negotiated: CBOR, Hex: withParams("9f01ff"), Why: "indefinite lengths are refused"},
		{Name: "cbor/duplicate map key", Negotiated: CBOR, Hex: "a3" + ping + ct("method") + ct("ping"), Why: "duplicate keys are refused (spec §4.4)"},
		{Name: "cbor/integer map key", Negotiated: CBOR, Hex: withParams("a10102"), Why: "map keys must be text"},
		{Name: "cbor/undefined", Negotiated: CBOR, Hex: withParams("f7"), Why: "undefined has no JSON form"},
		{Name: "cbor/NaN", Negotiated: CBOR, Hex: withParams("f97e00"), Why: "NaN has no JSON form"},
		{Name: "cbor/infinity", Negotiated: CBOR, Hex: withParams("f97c00"), Why: "infinities have no JSON form"},
		{Name: "cbor/simple value 16", Negotiated: CBOR, Hex: withParams("f0"), Why: "only false, true and null"},
		{Name: "cbor/tag 1", Negotiated: CBOR, Hex: withParams("c100"), Why: "tags other than 2, 3, 4, 21, 22, 23 and 55799 are refused"},
		{Name: "cbor/invalid UTF-8", Negotiated: CBOR, Hex: "a2" + ct("jsonrpc") + ct("2.0") + ct("method") + "6470ff6e67", Why: "text strings must be UTF-8"},
		{Name: "cbor/truncated", Negotiated: CBOR, Hex: "a2" + ct("jsonrpc") + ct("2.0") + ct("method") + "6470696e", Why: "the string is cut"},
		{Name: "cbor/data after the item", Negotiated: CBOR, Hex: "a2" + ping + "00", Why: "one item per payload"},
		{Name: "cbor/bignum of 129 bytes", Negotiated: CBOR, Hex: withParams("c25881" + strings.Repeat("ff", 129)), Why: "more digits than MaxNumberDigits 256, refused from its length (spec §8)"},
		{Name: "cbor/depth 65", Negotiated: CBOR, Hex: withParams(strings.Repeat("81", 63) + "80"), Why: "nesting past MaxDepth 64; the message is level 1 (spec §8)"},

		{Name: "protobuf/truncated", Negotiated: Protobuf, Hex: "0a0b0a03322e301a0470696e", Why: "a length past the end"},
		{Name: "protobuf/invalid UTF-8", Negotiated: Protobuf, Hex: pbMsg("0a03322e30" + "1a0470ff6e67"), Why: "string fields must be UTF-8"},
		{Name: "protobuf/neither message nor batch", Negotiated: Protobuf, Hex: "7801", Why: "a Payload must hold a message or a batch"},
		{Name: "protobuf/NaN", Negotiated: Protobuf, Hex: pbParams("29" + "000000000000f87f"), Why: "NaN has no JSON form"},
		{Name: "protobuf/number that is no JSON number", Negotiated: Protobuf, Hex: pbParams("4203616263"), Why: "the number field holds JSON number text"},
		{Name: "protobuf/duplicate member", Negotiated: Protobuf, Hex: pbParams("4a0e" + "0a05" + "0a01611200" + "0a05" + "0a01611200"), Why: "duplicate member names are refused (spec §4.4)"},
		{Name: "protobuf/depth 65", Negotiated: Protobuf, Hex: pbParams(pbDeep(64)), Why: "nesting past MaxDepth 64; the message is level 1 (spec §8)"},
	}
	for i := range out {
		out[i].Code = parse
	}
	return out
}

// pbDeep is n arrays, each the only item of the one around it.
func pbDeep(n int) string {
	b := []byte{0x52, 0x00} // Value{array: {}}
	for range n - 1 {
		items := append(appendVarint([]byte{0x0a}, uint64(len(b))), b...) // Array.items
		b = append(appendVarint([]byte{0x52}, uint64(len(items))), items...)
	}
	return hex.EncodeToString(b)
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
