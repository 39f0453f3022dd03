package demotools

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/tools"
)

// The tone and log tools: audio and log datagrams (spec §6).

// Tone's formats and bounds.
const (
	// ToneFormat is the sample format of tone's audio: signed 16-bit
	// little-endian PCM, one channel.
	ToneFormat = "pcm_s16le"
	// ToneChunk is the audio one datagram carries: 20 ms.
	ToneChunk = 20 * time.Millisecond
	// ToneMaxChunkBytes bounds the PCM bytes of one datagram (320 samples),
	// so that a chunk fits a datagram in every encoding: as base64 in JSON
	// it is 856 characters, under the ~1,200 bytes of a QUIC datagram.
	// Above 16 kHz a chunk is therefore shorter than ToneChunk.
	ToneMaxChunkBytes = 640
	// ToneAmplitude is the tone's peak, half of full scale.
	ToneAmplitude = 0.5
)

// LogLogger is the logger name of the log tool's notifications/message.
const LogLogger = "mcp-flow-server"

// LogLevels are MCP's log levels (RFC 5424 severities), lowest first.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// AudioChunk is the payload of one of tone's audio datagrams. Data is a
// []byte, so that the codecs carry it as base64 text in JSON and as a byte
// string in CBOR and protobuf (a member named "data": spec §4.4).
type AudioChunk struct {
	Seq  int    `json:"seq"`
	Data []byte `json:"data"`
}

// ToneInfo is tone's structuredContent: the format of the audio it sent.
type ToneInfo struct {
	Format     string `json:"format"`
	Channels   int    `json:"channels"`
	SampleRate int    `json:"sampleRate"`
	Chunks     int    `json:"chunks"`
	Bytes      int    `json:"bytes"`
	Ms         int    `json:"ms"`
}

// TonePCM returns ms milliseconds of a sine wave of hz at sampleRate as
// ToneFormat: the bytes tone sends, chunk after chunk.
func TonePCM(ms int, hz float64, sampleRate int) []byte {
	n := sampleRate * ms / 1000
	b := make([]byte, 2*n)
	for i := range n {
		v := ToneAmplitude * math.MaxInt16 * math.Sin(2*math.Pi*hz*float64(i)/float64(sampleRate))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(math.Round(v))))
	}
	return b
}

// ToneChunkBytes returns the PCM bytes of one of tone's chunks at
// sampleRate: ToneChunk of audio, at most ToneMaxChunkBytes.
func ToneChunkBytes(sampleRate int) int {
	return min(2*sampleRate*int(ToneChunk/time.Millisecond)/1000, ToneMaxChunkBytes)
}

// errNeedsDatagrams is tone's tool error on a session without datagrams.
var errNeedsDatagrams = errors.New("tone: audio needs datagrams, and this session has none (audio has no control-stream fallback: spec §6)")

// tone sends a sine wave as audio datagrams, paced in real time: chunk i
// leaves ToneChunk × i after the first (shorter chunks above 16 kHz, at
// their own duration), so a 1 s tone takes about 1 s. Datagrams may be
// lost; the result says how many chunks and bytes were sent, so a client
// can tell.
func tone(ctx context.Context, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
	a := struct {
		Ms         int     `json:"ms"`
		Hz         float64 `json:"hz"`
		SampleRate int     `json:"sampleRate"`
	}{Ms: 1000, Hz: 440, SampleRate: 16000}
	if len(args) > 0 && json.Unmarshal(args, &a) != nil {
		return nil, bad("tone needs {ms: integer 1..10000, hz: number, sampleRate: integer 8000..48000}")
	}
	switch {
	case a.Ms < 1 || a.Ms > 10000:
		return nil, bad("tone: ms is 1..10000")
	case a.SampleRate < 8000 || a.SampleRate > 48000:
		return nil, bad("tone: sampleRate is 8000..48000")
	case !(a.Hz > 0) || a.Hz > float64(a.SampleRate)/2:
		return nil, bad(fmt.Sprintf("tone: hz is above 0 and at most sampleRate/2 (%d)", a.SampleRate/2))
	}
	pcm := TonePCM(a.Ms, a.Hz, a.SampleRate)
	size := ToneChunkBytes(a.SampleRate)
	every := time.Duration(size/2) * time.Second / time.Duration(a.SampleRate)
	start := time.Now()
	pace := time.NewTimer(0)
	defer pace.Stop()
	chunks := 0
	for off := 0; off < len(pcm); off += size {
		if wait := time.Until(start.Add(time.Duration(chunks) * every)); wait > 0 {
			pace.Reset(wait)
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-pace.C:
			}
		}
		err := req.Audio(AudioChunk{Seq: chunks, Data: pcm[off:min(off+size, len(pcm))]})
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeDatagramsNotSupported {
			return nil, errNeedsDatagrams // a tool error: the request itself was fine
		}
		if err != nil {
			return nil, fmt.Errorf("tone: audio datagram %d: %w", chunks, err)
		}
		chunks++
	}
	info := ToneInfo{Format: ToneFormat, Channels: 1, SampleRate: a.SampleRate, Chunks: chunks, Bytes: len(pcm), Ms: a.Ms}
	text, _ := json.Marshal(info)
	return &tools.Result{Content: []any{tools.NewText(string(text))}, StructuredContent: info}, nil
}

// logTool sends count MCP log messages (notifications/message) about the
// request: log datagrams when the session has them, else on the control
// stream (flow.Request.Log).
func logTool(_ context.Context, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
	a := struct {
		Level   string `json:"level"`
		Message string `json:"message"`
		Count   int    `json:"count"`
	}{Level: "info", Message: "hello", Count: 1}
	if len(args) > 0 && json.Unmarshal(args, &a) != nil {
		return nil, bad("log needs {level: an MCP log level, message: string, count: integer 1..1000}")
	}
	switch {
	case !slices.Contains(LogLevels, a.Level):
		return nil, bad(fmt.Sprintf("log: level %q is none of %v", a.Level, LogLevels))
	case a.Count < 1 || a.Count > 1000:
		return nil, bad("log: count is 1..1000")
	}
	for i := range a.Count {
		if err := req.Log(a.Level, LogLogger, a.Message); err != nil {
			return nil, fmt.Errorf("log: message %d: %w", i+1, err)
		}
	}
	return &tools.Result{
		Content:           []any{tools.NewText(fmt.Sprintf("sent %d log messages at %s", a.Count, a.Level))},
		StructuredContent: map[string]any{"level": a.Level, "count": a.Count},
	}, nil
}
