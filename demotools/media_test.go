package demotools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
)

// heard is what a client session of mediaSession receives besides results:
// audio and log datagrams, and notifications/message.
type heard struct {
	channel wire.Channel // 0 for a notification
	id      uint32
	payload json.RawMessage
}

// mediaSession dials the test tools over a real session on 127.0.0.1, with
// or without datagrams (the server offers them; the client may decline),
// in encoding enc; everything it hears goes to the returned channel.
func mediaSession(t *testing.T, datagrams bool, enc codec.Name) (*flow.Session, <-chan heard) {
	t.Helper()
	mux, caps := flowtest.ToolsMux(t, demotools.Config{})
	srv := flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps})
	got := make(chan heard, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{
		TLSConfig: flowtest.ClientTLS(t), Encodings: []codec.Name{enc}, DisableDatagrams: !datagrams,
		Info: flow.Implementation{Name: "media", Version: "1"}, Logger: flowtest.Logger(),
		Hooks: flow.Hooks{
			Datagram: func(_ *flow.Session, h wire.DatagramHeader, p json.RawMessage) {
				got <- heard{h.Channel, h.RequestID, p}
			},
			Notification: func(_ *flow.Session, n *jsonrpc.Request) {
				if n.Method == protocol.MethodLogMessage {
					got <- heard{0, 0, n.Params}
				}
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.Encoding() != enc {
		t.Fatalf("encoding %s, want %s", s.Encoding(), enc)
	}
	return s, got
}

// callTool calls a test tool and returns its result.
func callTool(t *testing.T, s *flow.Session, name string, args any) (*flow.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
}

type toolResult struct {
	IsError bool
	Content []struct {
		Type, Text string
	}
	StructuredContent json.RawMessage
}

func decodeResult(t *testing.T, r *flow.Response) toolResult {
	t.Helper()
	var res toolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// awaitHeard receives n messages from got, failing after 10 s.
func awaitHeard(t *testing.T, got <-chan heard, n int) []heard {
	t.Helper()
	var hs []heard
	timeout := time.After(10 * time.Second)
	for len(hs) < n {
		select {
		case h := <-got:
			hs = append(hs, h)
		case <-timeout:
			t.Fatalf("heard %d of %d messages in 10 s", len(hs), n)
		}
	}
	return hs
}

// TestToneSendsAudioDatagrams: tone sends its PCM as audio datagrams
// {seq, data} about its request, seq 0, 1, 2 …, the chunks together exactly
// demotools.TonePCM; the result names the format; the pacing is real time;
// in every encoding (CBOR and protobuf carry data as a byte string).
func TestToneSendsAudioDatagrams(t *testing.T) {
	for _, c := range []struct {
		enc            codec.Name
		ms, sampleRate int
		hz             float64
	}{
		{codec.JSON, 200, 16000, 440},
		{codec.CBOR, 100, 48000, 1000},
		{codec.Protobuf, 60, 8000, 300},
	} {
		t.Run(fmt.Sprintf("%s %d ms %d Hz", c.enc, c.ms, c.sampleRate), func(t *testing.T) {
			s, got := mediaSession(t, true, c.enc)
			t0 := time.Now()
			r, err := callTool(t, s, "tone", map[string]any{"ms": c.ms, "hz": c.hz, "sampleRate": c.sampleRate})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(t0)
			want := demotools.TonePCM(c.ms, c.hz, c.sampleRate)
			if len(want) != 2*c.sampleRate*c.ms/1000 {
				t.Fatalf("TonePCM: %d bytes", len(want))
			}
			size := demotools.ToneChunkBytes(c.sampleRate)
			chunks := (len(want) + size - 1) / size
			res := decodeResult(t, r)
			var info demotools.ToneInfo
			if err := json.Unmarshal(res.StructuredContent, &info); err != nil || res.IsError {
				t.Fatalf("result %s: %v", r.Result, err)
			}
			wantInfo := demotools.ToneInfo{Format: "pcm_s16le", Channels: 1, SampleRate: c.sampleRate, Chunks: chunks, Bytes: len(want), Ms: c.ms}
			if info != wantInfo {
				t.Fatalf("structuredContent %+v, want %+v", info, wantInfo)
			}
			var text demotools.ToneInfo
			if len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].Text), &text) != nil || text != wantInfo {
				t.Fatalf("text %q does not name the format %+v", res.Content, wantInfo)
			}
			// Real time: the last chunk leaves (chunks-1) × its duration after
			// the first.
			if min := time.Duration(chunks-1) * time.Duration(size/2) * time.Second / time.Duration(c.sampleRate); took < min {
				t.Fatalf("the call took %v, under the %v of real time", took, min)
			}
			// Loopback loses nothing at this rate; datagrams may trail the result.
			var pcm []byte
			for i, h := range awaitHeard(t, got, chunks) {
				id, _ := r.ID.Uint32()
				if h.channel != wire.ChannelAudio || h.id != id {
					t.Fatalf("datagram %d on channel %v about request %d, want audio about %d", i, h.channel, h.id, id)
				}
				var chunk demotools.AudioChunk
				if err := json.Unmarshal(h.payload, &chunk); err != nil {
					t.Fatalf("datagram %d: %s: %v", i, h.payload, err)
				}
				if chunk.Seq != i {
					t.Fatalf("datagram %d has seq %d", i, chunk.Seq)
				}
				if wantLen := min(size, len(want)-len(pcm)); len(chunk.Data) != wantLen {
					t.Fatalf("chunk %d: %d bytes, want %d", i, len(chunk.Data), wantLen)
				}
				pcm = append(pcm, chunk.Data...)
			}
			if !bytes.Equal(pcm, want) {
				t.Fatalf("the chunks' PCM (%d bytes) differs from TonePCM (%d bytes)", len(pcm), len(want))
			}
		})
	}
}

// TestTonePCM: the samples are the sine wave at half scale, little-endian.
func TestTonePCM(t *testing.T) {
	// 4000 Hz at 16 kHz: a quarter period per sample, 0, +peak, 0, -peak.
	pcm := demotools.TonePCM(1, 4000, 16000)
	const peak = 16384 // round(0.5 × 32767)
	want := []int16{0, peak, 0, -peak}
	if len(pcm) != 32 {
		t.Fatalf("%d bytes, want 32 (16 samples)", len(pcm))
	}
	for i := range 16 {
		got := int16(uint16(pcm[2*i]) | uint16(pcm[2*i+1])<<8)
		if got != want[i%4] {
			t.Fatalf("sample %d is %d, want %d", i, got, want[i%4])
		}
	}
	if n := demotools.ToneChunkBytes(16000); n != 640 {
		t.Fatalf("16 kHz chunk: %d bytes, want 640 (20 ms)", n)
	}
	if n := demotools.ToneChunkBytes(8000); n != 320 {
		t.Fatalf("8 kHz chunk: %d bytes, want 320 (20 ms)", n)
	}
}

// TestAudioChunkIsBinaryInCBOR: a chunk's data is a byte string in CBOR
// (tag 22 around it: spec §4.4), not base64 text, and comes back as the
// same base64 in JSON.
func TestAudioChunkIsBinaryInCBOR(t *testing.T) {
	pcm := demotools.TonePCM(20, 440, 16000)
	v, err := json.Marshal(demotools.AudioChunk{Seq: 7, Data: pcm})
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.New(codec.CBOR, codec.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.AppendValue(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	// 0xd6: tag 22; 0x59 0x02 0x80: a byte string of 640 bytes.
	if !bytes.Contains(b, append([]byte{0xd6, 0x59, 0x02, 0x80}, pcm[:16]...)) || len(b) > len(pcm)+32 {
		t.Fatalf("CBOR of a chunk: %d bytes for %d of PCM, no byte string: % x…", len(b), len(pcm), b[:min(len(b), 24)])
	}
	back, err := c.DecodeValue(b)
	if err != nil || !bytes.Equal(back, v) {
		t.Fatalf("round trip: %s, %v", back[:min(len(back), 40)], err)
	}
}

// TestToneWithoutDatagrams: on a session without datagrams, tone is a tool
// error (isError) saying that audio needs datagrams, and sends nothing.
func TestToneWithoutDatagrams(t *testing.T) {
	s, got := mediaSession(t, false, codec.JSON)
	r, err := callTool(t, s, "tone", map[string]any{"ms": 100})
	if err != nil {
		t.Fatal(err)
	}
	res := decodeResult(t, r)
	if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "audio needs datagrams") {
		t.Fatalf("result %s, want a tool error saying audio needs datagrams", r.Result)
	}
	// A ping round trip: nothing was sent before the result either.
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		t.Fatalf("heard %v %s", h.channel, h.payload)
	default:
	}
}

// TestLogTool: log sends count notifications/message {level, logger, data}
// as log datagrams when the session has datagrams and on the control stream
// when not; the result says how many and at which level.
func TestLogTool(t *testing.T) {
	for _, dg := range []bool{true, false} {
		t.Run(fmt.Sprintf("datagrams=%v", dg), func(t *testing.T) {
			s, got := mediaSession(t, dg, codec.CBOR)
			r, err := callTool(t, s, "log", map[string]any{"level": "warning", "message": "disk 91% full", "count": 5})
			if err != nil {
				t.Fatal(err)
			}
			res := decodeResult(t, r)
			if res.IsError || len(res.Content) != 1 || res.Content[0].Text != "sent 5 log messages at warning" {
				t.Fatalf("result %s", r.Result)
			}
			wantCh, wantID := wire.Channel(0), uint32(0)
			if dg {
				wantCh = wire.ChannelLog
				wantID, _ = r.ID.Uint32()
			}
			for i, h := range awaitHeard(t, got, 5) {
				var p struct{ Level, Logger, Data string }
				if err := json.Unmarshal(h.payload, &p); err != nil {
					t.Fatal(err)
				}
				if h.channel != wantCh || h.id != wantID || p != (struct{ Level, Logger, Data string }{"warning", "mcp-flow-server", "disk 91% full"}) {
					t.Fatalf("message %d: channel %v, request %d, %s; want channel %v, request %d", i, h.channel, h.id, h.payload, wantCh, wantID)
				}
			}
			// Defaults: one "hello" at info.
			r, err = callTool(t, s, "log", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if res := decodeResult(t, r); res.Content[0].Text != "sent 1 log messages at info" {
				t.Fatalf("defaults: %s", r.Result)
			}
			if h := awaitHeard(t, got, 1)[0]; !strings.Contains(string(h.payload), `"data":"hello"`) || !strings.Contains(string(h.payload), `"level":"info"`) {
				t.Fatalf("defaults: %s", h.payload)
			}
		})
	}
}

// TestMediaToolsValidate: bad arguments are invalid params (-32602), as
// with the other tools.
func TestMediaToolsValidate(t *testing.T) {
	s, _ := mediaSession(t, true, codec.JSON)
	for _, c := range []struct {
		tool string
		args any
	}{
		{"tone", map[string]any{"ms": 0}},
		{"tone", map[string]any{"ms": 10001}},
		{"tone", map[string]any{"ms": "long"}},
		{"tone", map[string]any{"sampleRate": 7999}},
		{"tone", map[string]any{"sampleRate": 48001}},
		{"tone", map[string]any{"hz": 0}},
		{"tone", map[string]any{"hz": 8001}}, // above 16 kHz / 2
		{"log", map[string]any{"level": "verbose"}},
		{"log", map[string]any{"count": 0}},
		{"log", map[string]any{"count": 1001}},
		{"log", map[string]any{"message": 3}},
	} {
		_, err := callTool(t, s, c.tool, c.args)
		if !errors.Is(err, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "")) {
			t.Errorf("%s %v: %v, want -32602", c.tool, c.args, err)
		}
	}
}
