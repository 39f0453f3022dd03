//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/demotools"
)

// TestAudioOut: `call -audio-out FILE tone …` against the real server writes
// the PCM of tone's audio datagrams to FILE, byte for byte what tone sent,
// and says on stderr how much; stdout has the result naming the format.
// Without datagrams on the session, tone's tool error exits 1.
func TestAudioOut(t *testing.T) {
	t.Parallel()
	url, hash, _, _, serverErr := liveServer(t, server(t))
	file := filepath.Join(t.TempDir(), "tone.pcm")
	out, errOut, code := runCLI(t, cli(t), "-url", url, "-cert-hash", hash, "call", "-audio-out", file, "tone", "ms=300", "hz=440")
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s\nserver:\n%s", code, errOut, serverErr())
	}
	want := demotools.TonePCM(300, 440, 16000)
	var info demotools.ToneInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || info != (demotools.ToneInfo{Format: "pcm_s16le", Channels: 1, SampleRate: 16000, Chunks: 15, Bytes: len(want), Ms: 300}) {
		t.Fatalf("stdout %q (%v), want the format of 15 chunks of 16 kHz PCM", out, err)
	}
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes (%v), want tone's %d bytes of PCM; stderr:\n%s", file, len(got), err, len(want), errOut)
	}
	if s := fmt.Sprintf("-audio-out %s: %d bytes of PCM from 15 audio datagrams\n", file, len(want)); !strings.Contains(errOut, s) {
		t.Fatalf("stderr does not say %q:\n%s", s, errOut)
	}

	url, hash, _, _, _ = liveServer(t, server(t), "-no-datagrams")
	out, errOut, code = runCLI(t, cli(t), "-url", url, "-cert-hash", hash, "call", "-audio-out", file, "tone", "ms=100")
	if code != exitRemote || !strings.Contains(out, "audio needs datagrams") {
		t.Fatalf("without datagrams: exit %d, want %d, stdout %q; stderr:\n%s", code, exitRemote, out, errOut)
	}
	if _, errOut, code = runCLI(t, cli(t), "-url", url, "-cert-hash", hash, "-audio-out", file, "ping"); code != exitUsage {
		t.Fatalf("-audio-out with ping: exit %d, want %d; stderr:\n%s", code, exitUsage, errOut)
	}
}

// TestLogLines: the server's log messages print as lines on stderr, "log
// LEVEL LOGGER: DATA", whether they came as log datagrams or (on a session
// without datagrams) as notifications/message on the control stream; stdout
// has the result alone.
func TestLogLines(t *testing.T) {
	t.Parallel()
	for _, flags := range [][]string{nil, {"-no-datagrams"}} {
		t.Run(fmt.Sprint("server ", flags), func(t *testing.T) {
			url, hash, _, _, serverErr := liveServer(t, server(t), flags...)
			out, errOut, code := runCLI(t, cli(t), "-url", url, "-cert-hash", hash, "call", "log", "level=warning", "message=disk 91% full", "count=3")
			if code != exitOK || out != "sent 3 log messages at warning\n" {
				t.Fatalf("exit %d, stdout %q; stderr:\n%s\nserver:\n%s", code, out, errOut, serverErr())
			}
			if n := strings.Count(errOut, "log warning mcp-flow-server: disk 91% full\n"); n != 3 {
				t.Fatalf("%d log lines on stderr, want 3:\n%s", n, errOut)
			}
			// Data that could drive a terminal is quoted.
			_, errOut, _ = runCLI(t, cli(t), "-url", url, "-cert-hash", hash, "call", "log", "message=\x1b[2Jgone")
			if !strings.Contains(errOut, `log info mcp-flow-server: "\x1b[2Jgone"`) {
				t.Fatalf("a message with an escape sequence is not quoted:\n%q", errOut)
			}
		})
	}
}
