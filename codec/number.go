package codec

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// How a JSON number travels in the binary encodings, so that JSON → X → JSON
// gives back an equal number (spec §4.4):
//
//   - an integer (no fraction, no exponent) that fits 64 bits: an integer;
//   - a larger integer: a bignum;
//   - any other number whose shortest float64 form has exactly the same
//     decimal value: a float64 (0.1, 1.5e-7, 1.0);
//   - anything else: a decimal fraction (mantissa, exponent), exact.
//
// -0 is a float64 -0. A number whose exponent does not fit 64 bits is refused.
type numKind uint8

const (
	numInt     numKind = iota // i
	numUint                   // u, above MaxInt64
	numBig                    // mant (an integer beyond 64 bits)
	numFloat                  // f
	numDecimal                // mant × 10^exp
)

type number struct {
	kind numKind
	i    int64
	u    uint64
	f    float64
	mant *big.Int
	exp  int64
}

func isIntegerText(s string) bool { return !strings.ContainsAny(s, ".eE") }

// classify maps a JSON number's text (already validated as JSON) to its
// binary form.
func classify(s string) (number, bool) {
	if isIntegerText(s) {
		if s == "-0" {
			return number{kind: numFloat, f: math.Copysign(0, -1)}, true
		}
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return number{kind: numInt, i: i}, true
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return number{kind: numUint, u: u}, true
		}
		b, ok := new(big.Int).SetString(s, 10)
		return number{kind: numBig, mant: b}, ok
	}
	f, err := strconv.ParseFloat(s, 64)
	if err == nil && sameDecimal(s, formatFloat(f)) {
		return number{kind: numFloat, f: f}, true
	}
	neg, digits, exp, ok := normDecimal(s)
	if !ok {
		return number{}, false
	}
	m := new(big.Int)
	if digits != "" {
		m.SetString(digits, 10)
	}
	if neg {
		m.Neg(m)
	}
	return number{kind: numDecimal, mant: m, exp: exp}, true
}

// normDecimal splits a JSON number into sign, significant digits (no leading
// or trailing zeros; "" for zero) and a base-10 exponent. ok is false when
// the exponent does not fit an int64.
func normDecimal(s string) (neg bool, digits string, exp int64, ok bool) {
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	mant, e, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		var err error
		if exp, err = strconv.ParseInt(e, 10, 64); err != nil {
			return false, "", 0, false
		}
	}
	ip, fp, _ := strings.Cut(mant, ".")
	d := strings.TrimLeft(ip+fp, "0")
	if int64(len(fp)) > math.MaxInt64/2 || exp < math.MinInt64/2 {
		return false, "", 0, false
	}
	exp -= int64(len(fp))
	t := strings.TrimRight(d, "0")
	exp += int64(len(d) - len(t))
	if t == "" {
		exp = 0
	}
	return neg, t, exp, true
}

// sameDecimal reports whether two JSON numbers have the same decimal value
// (and sign, so that -0 and 0 differ).
func sameDecimal(a, b string) bool {
	an, ad, ae, aok := normDecimal(a)
	bn, bd, be, bok := normDecimal(b)
	return aok && bok && an == bn && ad == bd && ae == be
}

// formatFloat writes f the way encoding/json does (ES6 number formatting).
func formatFloat(f float64) string { return string(appendFloat(nil, f)) }

func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	b = strconv.AppendFloat(b, f, fmt, -1, 64)
	if fmt == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendDecimal writes mant × 10^exp as a JSON number.
func appendDecimal(b []byte, mant *big.Int, exp int64) []byte {
	b = mant.Append(b, 10)
	if exp != 0 {
		b = append(b, 'e')
		b = strconv.AppendInt(b, exp, 10)
	}
	return b
}
