package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// corpusEntry is one real MCP message (or batch) as JSON text.
type corpusEntry struct {
	name string
	json []byte
}

// imageResult is a tools/call result carrying a 1 MiB PNG-like image,
// generated deterministically rather than checked in.
func imageResult() []byte {
	img := make([]byte, 1<<20)
	copy(img, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	x := uint32(2463534242)
	for i := 16; i < len(img); i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img[i] = byte(x)
	}
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"image","data":"%s","mimeType":"image/png"}]}}`,
		base64.StdEncoding.EncodeToString(img)))
}

// loadCorpus returns testdata/corpus/*.json and the generated image result,
// in a stable order.
func loadCorpus(t testing.TB) []corpusEntry {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	sort.Strings(files)
	var out []corpusEntry
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, corpusEntry{strings.TrimSuffix(filepath.Base(f), ".json"), bytes.TrimSpace(b)})
	}
	return append(out, corpusEntry{"tools_call_result_image_1MiB", imageResult()})
}

// parse decodes JSON text into validated messages.
func parse(t testing.TB, b []byte) (msgs []jsonrpc.Message, batch bool) {
	t.Helper()
	p, err := Default(JSON).Decode(b)
	if err != nil {
		t.Fatalf("corpus JSON does not decode: %v", err)
	}
	msgs, replies := jsonrpc.Validate(p)
	if len(replies) != 0 {
		t.Fatalf("corpus message invalid: %+v", replies[0].Error)
	}
	return msgs, p.Batch
}

func encode(t testing.TB, c Codec, msgs []jsonrpc.Message, batch bool) []byte {
	t.Helper()
	var b []byte
	var err error
	if batch {
		b, err = c.AppendBatch(nil, msgs)
	} else {
		b, err = c.Append(nil, msgs[0])
	}
	if err != nil {
		t.Fatalf("%s encode: %v", c.Name(), err)
	}
	return b
}

func toJSON(msgs []jsonrpc.Message, batch bool) []byte {
	if batch {
		return jsonrpc.AppendBatchJSON(nil, msgs)
	}
	return jsonrpc.AppendJSON(nil, msgs[0])
}

// jsonEqual compares two JSON texts as JSON values: objects as sets of
// members, numbers by exact decimal value (math/big), so that 1.0 equals 1
// and 2^53+1 does not equal 2^53.
func jsonEqual(a, b []byte) (bool, string) {
	va, err := decodeAny(a)
	if err != nil {
		return false, "left: " + err.Error()
	}
	vb, err := decodeAny(b)
	if err != nil {
		return false, "right: " + err.Error()
	}
	return valueEqual(va, vb, "$", sameNumber)
}

func decodeAny(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// sameNumber reports whether two JSON numbers have the same decimal value
// and sign, for any exponent: the exponent is a big.Int, never an int64 or a
// big.Rat (which refuse exponents past 64 bits: the codec carried
// 0e10000000000000000000 unchanged, and the comparison called it a change).
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	an, ad, ae, aok := bigDecimal(a)
	bn, bd, be, bok := bigDecimal(b)
	return aok && bok && an == bn && ad == bd && (ad == "" || ae.Cmp(be) == 0)
}

// bigDecimal splits a JSON number into sign, significant digits (no leading
// or trailing zeros, "" for zero) and exponent.
func bigDecimal(s string) (neg bool, digits string, exp *big.Int, ok bool) {
	neg = strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, e, hasExp := strings.Cut(strings.ToLower(s), "e")
	exp = new(big.Int)
	if hasExp {
		if _, ok := exp.SetString(strings.TrimPrefix(e, "+"), 10); !ok {
			return false, "", nil, false
		}
	}
	ip, fp, _ := strings.Cut(mant, ".")
	exp.Sub(exp, big.NewInt(int64(len(fp))))
	d := strings.TrimLeft(ip+fp, "0")
	t := strings.TrimRight(d, "0")
	exp.Add(exp, big.NewInt(int64(len(d)-len(t))))
	return neg, t, exp, true
}

func valueEqual(a, b any, path string, numEq func(a, b string) bool) (bool, string) {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false, path + ": objects differ"
		}
		for k, v := range a {
			w, ok := bm[k]
			if !ok {
				return false, path + "." + k + ": missing"
			}
			if ok, why := valueEqual(v, w, path+"."+k, numEq); !ok {
				return false, why
			}
		}
		return true, ""
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false, path + ": arrays differ"
		}
		for i := range a {
			if ok, why := valueEqual(a[i], bs[i], fmt.Sprintf("%s[%d]", path, i), numEq); !ok {
				return false, why
			}
		}
		return true, ""
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok || !numEq(string(a), string(bn)) {
			return false, fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
		return true, ""
	default:
		if a != b {
			return false, fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
		return true, ""
	}
}
