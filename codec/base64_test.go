package codec

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// FuzzStdBase64 holds appendStdBase64 to encoding/base64, at every length
// and behind any prefix.
func FuzzStdBase64(f *testing.F) {
	for n := range 40 {
		f.Add(bytes.Repeat([]byte{0xfb, 0xff, 0x00, 0x3e}, n)[:n], []byte("x"))
	}
	f.Fuzz(func(t *testing.T, src, prefix []byte) {
		want := base64.StdEncoding.AppendEncode(bytes.Clone(prefix), src)
		if got := appendStdBase64(bytes.Clone(prefix), src); !bytes.Equal(got, want) {
			t.Fatalf("appendStdBase64(%x) = %q, want %q", src, got, want)
		}
	})
}

// BenchmarkStdBase64 compares appendStdBase64 with encoding/base64 on
// 1 MiB.
//
//	go test -run='^$' -bench=StdBase64 ./codec/
func BenchmarkStdBase64(b *testing.B) {
	src := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a}, 1<<20/7)
	dst := make([]byte, 0, 2<<20)
	b.Run("table", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			dst = appendStdBase64(dst[:0], src)
		}
	})
	b.Run("encoding-base64", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			dst = base64.StdEncoding.AppendEncode(dst[:0], src)
		}
	})
}
