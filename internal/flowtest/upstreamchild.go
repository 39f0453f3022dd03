//go:build unix

package flowtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// UpstreamChildEnv names the mode of UpstreamChild in a test binary's
// environment.
const UpstreamChildEnv = "MCP_FLOW_TEST_UPSTREAM_CHILD"

// UpstreamChild runs a stdio MCP server on stdin and stdout, for tests of
// upstream bridges (a test binary becomes one when UpstreamChildEnv names a
// mode): "polite" ends at end of input; "stubborn" ignores end of input and
// SIGTERM, and starts a grandchild that does too. Its serverInfo.version is
// "pid=P,grandchild=G". Tools: "echo" answers its text; "stall" stops
// reading its input (after telling the client with a log notification)
// until the process gets SIGUSR1 (or 60 s passed, a hang's guard), then
// answers.
func UpstreamChild(mode string) {
	grandchild := 0
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM) // inherited by the grandchild
		gc := exec.Command("sleep", "3600")
		gc.Stderr = os.Stderr // holds stderr (and stdout) open, like a helper would
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "child: grandchild:", err)
			os.Exit(1)
		}
		grandchild = gc.Process.Pid
	}
	out := bufio.NewWriter(os.Stdout)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		out.Flush()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 64<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "child: bad line:", err)
			continue
		}
		switch {
		case m.Method == "initialize":
			reply(m.ID, fmt.Sprintf(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"child-%s","version":"pid=%d,grandchild=%d"}}`, mode, os.Getpid(), grandchild))
		case m.Method == "tools/call" && m.Params.Name == "stall":
			resume := make(chan os.Signal, 1)
			signal.Notify(resume, syscall.SIGUSR1)
			fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"stalling"}}`)
			out.Flush()
			select { // the slow upstream under test: its input is not read meanwhile
			case <-resume:
			case <-time.After(time.Minute):
			}
			signal.Stop(resume)
			reply(m.ID, `{"content":[{"type":"text","text":"stalled"}]}`)
		case m.Method == "tools/call":
			b, _ := json.Marshal(m.Params.Arguments.Text)
			reply(m.ID, `{"content":[{"type":"text","text":`+string(b)+`}]}`)
		}
	}
	fmt.Fprintf(os.Stderr, "child %d: end of input (%s)\n", os.Getpid(), mode)
	if mode == "stubborn" {
		time.Sleep(time.Hour) // ignores end of input: only SIGKILL ends it
	}
}
