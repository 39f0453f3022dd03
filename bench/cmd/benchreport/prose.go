package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// bareWrites lists BenchmarkStreamVsBare's bare-stream medians by write
// size, the best one marked.
func (rep *report) bareWrites(m map[string]float64) string {
	var parts []string
	for _, n := range rep.units(streamVsBare) {
		if w, ok := strings.CutPrefix(n, "bare-write="); ok {
			w = strings.TrimSuffix(w, "-MB/s")
			p := w + " writes " + fmtNum(m[n])
			if w == strconv.Itoa(int(m["bare-best-write-KiB"]))+"k" {
				p += " (best)"
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

// streamText states BenchmarkStreamVsBare's figures.
func streamText(m map[string]float64, writes string) string {
	return fmt.Sprintf("A sweep of the bare webtransport-go stream, one fetch at each write size (MB/s): %s; then %s pairs, one fetch on an execution stream and one from the bare stream at %s KiB writes, back to back: medians %s MB/s against %s MB/s, and a median ratio of %s. CPU per GiB moved (both ends, this process): the execution stream %s s, the bare stream %s s.",
		writes, strconv.Itoa(int(m["rounds"])), strconv.Itoa(int(m["bare-best-write-KiB"])), fmtNum(m["flow-MB/s"]), fmtNum(m["bare-best-MB/s"]), fmtNum(m["flow/bare"]), fmtNum(m["flow-cpu-s/GiB"]), fmtNum(m["bare-cpu-s/GiB"]))
}

// sdkTransportText states a BenchmarkGoSDKTransport figure's rates (a
// go-sdk client and server at both ends, issue 38) and how near sdkflow
// came to the go-sdk with no transport, which bounds every transport of
// it.
func sdkTransportText(m map[string]float64) string {
	unit := "MB/s"
	if m["sdkflow-calls/s"] > 0 {
		unit = "calls/s"
	}
	c := "cpu-µs/op"
	text := fmt.Sprintf(" Medians of the interleaved rounds (%s): sdkflow %s, the pipe adapter %s, the go-sdk's Streamable HTTP %s, the go-sdk with no transport at all %s; sdkflow reached %s of the last, which is the go-sdk's own work at both ends (its JSON, its goroutines) and the most any transport of it can reach. CPU per operation, both ends (µs): sdkflow %s, the pipe adapter %s, Streamable HTTP %s, no transport %s.",
		unit, fmtNum(m["sdkflow-"+unit]), fmtNum(m["pipe-"+unit]), fmtNum(m["sdk-http-"+unit]), fmtNum(m["sdk-direct-"+unit]), fmtNum(m["sdkflow/sdk-direct"]),
		fmtNum(m["sdkflow-"+c]), fmtNum(m["pipe-"+c]), fmtNum(m["sdk-http-"+c]), fmtNum(m["sdk-direct-"+c]))
	if unit == "MB/s" {
		text += fmt.Sprintf(" Raw (sdkflow.StreamResult at the server, KeepStreams and OpenStream at the client: the bytes cross on an execution stream as they are, never base64 or a JSON string): %s MB/s, %s µs of CPU, %s times Streamable HTTP and %s times sdkflow's base64 row. Base64 content cannot reach 10 times Streamable HTTP on any go-sdk transport, this one included: with no transport at all the go-sdk reaches %s times its own Streamable HTTP, since the result is base64 in its JSON, encoded by the server and decoded by the client whatever carries it; hence the goal judges the raw row.",
			fmtNum(m["sdkflow-raw-MB/s"]), fmtNum(m["sdkflow-raw-"+c]), fmtNum(m["sdkflow-raw/sdk-http"]), fmtNum(m["sdkflow-raw/sdkflow"]), fmtNum(m["sdk-direct/sdk-http"]))
	}
	return text
}

// units returns the units of a result, sorted.
func (rep *report) units(name string) []string {
	res, ok := rep.results[name]
	if !ok {
		return nil
	}
	var out []string
	for u := range res.metrics {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(out[i], "-MB/s"), "bare-write="), "k"))
		b, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(out[j], "-MB/s"), "bare-write="), "k"))
		if a != b {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}

// slowPath says where the slowest 1 % of a shaped run's busy pings spent
// their time, from the relay's record of each datagram (slowPathAccount in
// the bench package).
func slowPath(m map[string]float64) string {
	if _, ok := m["slow-lat-ms"]; !ok {
		return ""
	}
	return fmt.Sprintf(" The slowest 1 %% of the busy pings took %s ms on average: the %s ms round trip; among the datagrams the relay sent during each of them, the longest wait in the bottleneck queue (%s ms on average over those pings), the relay's largest lateness in the result's direction (%s ms: datagrams sent after their due time, because the relay%s did not run; it read datagrams up to %s ms after the kernel received them) and in the other direction (queue and lateness, %s ms); and at least %s ms at the endpoints (the rest; a stall of the relay's process that delays both directions counts twice above). The full queue dropped %s of the result's direction's datagrams during each of those pings on average, and %s %% of them saw a drop (an answer lost there waits for QUIC's loss recovery, which the rest includes).",
		fmtNum(m["slow-lat-ms"]), fmtNum(m["rtt-ms"]), fmtNum(m["slow-down-queue-ms"]), fmtNum(m["slow-down-late-ms"]), relayWhere(m), fmtNum(m["relay-read-late-max-ms"]), fmtNum(m["slow-up-excess-ms"]), fmtNum(m["slow-endpoint-ms"]),
		fmtNum(m["slow-down-drops"]), fmtNum(m["slow-with-drops-%"]))
}

// relayWhere says where the relay ran, for slowPath: in a process of its
// own when the run reports its CPU (relay-cpu), else in the benchmark's.
func relayWhere(m map[string]float64) string {
	if _, ok := m["relay-cpu"]; ok {
		return " (a process of its own, sharing the machine's cores with the benchmark's)"
	}
	return ", in the benchmark's process,"
}

// holAccount says, from a head-of-line run (in two processes, or both
// ends in one), what the slowest 1 % of its busy pings waited for: the
// client's UDP receive queue and the scheduler (bench/probe_test.go,
// bench/sched_test.go).
func holAccount(m map[string]float64) string {
	if _, ok := m["rxq-slow-KiB"]; !ok {
		return ""
	}
	return holQueues(m) + goRunnable(m)
}

// goRunnable says how long the measuring process's goroutines waited for
// Go's scheduler during the transfer (runtime/metrics).
func goRunnable(m map[string]float64) string {
	if _, ok := m["go-runnable-p99-µs"]; !ok {
		return ""
	}
	return fmt.Sprintf(" Within the measuring process (GOMAXPROCS %d), goroutines made runnable during the transfer waited for a P up to %s (p99 %s; at least %s ms per second in all; runtime/metrics /sched/latencies): a P held by another goroutine, or by a thread the kernel was not running.",
		int(m["gomaxprocs"]), ms(m["go-runnable-max-µs"]), ms(m["go-runnable-p99-µs"]), fmtNum(m["go-runnable-ms/s"]))
}

// gomaxprocsText says what the head-of-line run with GOMAXPROCS=2 in
// both processes (g; each still pinned to one core) measured beside the
// default run m, whose processes run with GOMAXPROCS 1 when pinned.
func gomaxprocsText(m, g map[string]float64) string {
	s := fmt.Sprintf(" In the same run, with GOMAXPROCS=2 in both processes (each still on its one core: the kernel time-slices two threads running Go code, so a runnable goroutine need not wait for the one running to yield), busy p50 %s, p99 %s, max %s against an idle p99 of %s (busy/idle %s), at %s MB/s; the client's goroutines waited for a P p99 %s and max %s (%s ms per second), against p99 %s and max %s (%s ms per second) with GOMAXPROCS %d.",
		ms(g["busy-p50-µs"]), ms(g["busy-p99-µs"]), ms(g["busy-max-µs"]), ms(g["idle-p99-µs"]), fmtNum(g["busy-p99-µs"]/g["idle-p99-µs"]), fmtNum(g["transfer-MB/s"]),
		ms(g["go-runnable-p99-µs"]), ms(g["go-runnable-max-µs"]), fmtNum(g["go-runnable-ms/s"]),
		ms(m["go-runnable-p99-µs"]), ms(m["go-runnable-max-µs"]), fmtNum(m["go-runnable-ms/s"]), int(m["gomaxprocs"]))
	if g["go-runnable-p99-µs"] > 0 && g["go-runnable-p99-µs"] <= m["go-runnable-p99-µs"]/2 && g["busy-p99-µs"] >= 0.8*m["busy-p99-µs"] {
		s += " The wait for a P fell to half or less, the busy p99 by less than 20 %: in this run, the wait for a P is not what makes the busy p99."
	}
	return s
}

// holQueues is holAccount's UDP queue and run delay part.
func holQueues(m map[string]float64) string {
	if _, ok := m["slow-thread-delay-ms"]; ok {
		return fmt.Sprintf(" The slowest 1 %% of the busy pings took %s ms on average. The largest the client's UDP receive queue was during each of them averaged %s KiB (kernel memory, datagram overhead included: %s ms at the transfer's rate; at most %s KiB over the transfer, %s datagrams dropped), and the process's most delayed thread (both ends share it) waited %s ms, runnable but without a CPU, over the 10 ms sampling intervals that cover each of them (schedstat run delay), while other processes used %s CPU-seconds per second of the machine's %d cores (/proc/stat). The queues and threads were sampled every 10 ms from within the process, which took %s ms per second.",
			fmtNum(m["slow-lat-ms"]), fmtNum(m["rxq-slow-KiB"]), fmtNum(m["rxq-slow-wait-ms"]), fmtNum(m["rxq-max-KiB"]), fmtNum(m["udp-drops"]),
			fmtNum(m["slow-thread-delay-ms"]), fmtNum(m["others-cpu"]), runtime.NumCPU(), fmtNum(m["sampler-ms/s"]))
	}
	return fmt.Sprintf(" The slowest 1 %% of the busy pings took %s ms on average. The largest the client's UDP receive queue was during each of them averaged %s KiB (kernel memory, datagram overhead included: %s ms at the transfer's rate; at most %s KiB over the transfer, %s datagrams dropped), and, over the 10 ms sampling intervals that cover each of them, the client's most delayed thread waited %s ms, the server's %s ms, runnable but without a CPU (schedstat run delay; both processes are pinned to one core each of a shared machine); over the transfer the client's threads waited %s ms per second and the server's %s ms per second, while other processes than the client used %s ms per second of the client's core and other processes than the server %s ms per second of the server's (/proc/stat). The queues were sampled every 10 ms by the benchmark's process, which used %s of a core doing so.",
		fmtNum(m["slow-lat-ms"]), fmtNum(m["rxq-slow-KiB"]), fmtNum(m["rxq-slow-wait-ms"]), fmtNum(m["rxq-max-KiB"]), fmtNum(m["udp-drops"]),
		fmtNum(m["slow-client-thread-delay-ms"]), fmtNum(m["slow-server-thread-delay-ms"]), fmtNum(m["client-run-delay-ms/s"]), fmtNum(m["server-run-delay-ms/s"]),
		fmtNum(m["client-core-others-ms/s"]), fmtNum(m["server-core-others-ms/s"]), fmtNum(m["sampler-cpu"]))
}

// shapedCause says, from a shaped-link result's figures, what limited it:
// the relay's own lateness and CPU, and for a window-limited peer the
// rate its window allows at the round trip its pings saw.
func shapedCause(m map[string]float64) string {
	var b strings.Builder
	if _, ok := m["relay-late-max-ms"]; ok {
		if rc, ok := m["relay-cpu"]; ok {
			fmt.Fprintf(&b, " The relay itself sent the result's data %s ms late on average and %s ms at most (it runs in a process of its own, which used %s CPU-seconds per second of the transfer; the benchmark's process, both ends, used %s).",
				fmtNum(m["relay-late-mean-ms"]), fmtNum(m["relay-late-max-ms"]), fmtNum(rc), fmtNum(m["cpu-busy"]))
			if rd, ok := m["relay-run-delay-ms/s"]; ok {
				fmt.Fprintf(&b, " The relay's threads waited for a CPU %s ms per second of the transfer, the benchmark's %s ms (runnable, not running: schedstat run delay, all threads summed).", fmtNum(rd), fmtNum(m["ends-run-delay-ms/s"]))
			}
		} else {
			fmt.Fprintf(&b, " The relay itself sent the result's data %s ms late on average and %s ms at most (it shares the benchmark's process, which used %s CPU-seconds per second of the transfer, with both ends).",
				fmtNum(m["relay-late-mean-ms"]), fmtNum(m["relay-late-max-ms"]), fmtNum(m["cpu-busy"]))
		}
		if o, ok := m["others-cpu"]; ok {
			fmt.Fprintf(&b, " Other processes (than the benchmark's and the relay's) used %s CPU-seconds per second of the machine's %d cores during the run (/proc/stat).", fmtNum(o), runtime.NumCPU())
		}
	}
	if w := m["window-KiB"]; w > 0 && m["busy-p50-µs"] > 0 {
		bound := w * 1024 / (m["busy-p50-µs"] / 1e6)
		fmt.Fprintf(&b, " A stream receive window of %s KiB allows at most that much of the result in flight per round trip: at the busy ping p50, %s, that is %s MB/s, %s %% of the link rate.",
			fmtNum(w), ms(m["busy-p50-µs"]), fmtNum(bound/1e6), fmtNum(100*bound/(m["link-Mbit/s"]*1e6/8)))
	}
	return b.String()
}

// spanRow is one line of BenchmarkSessions.spans: an object size (0 for
// the totals) and, in KiB per session, the free space inside the spans of
// that size, the spans, their live objects and what the process allocated
// of that size (the heap profile's sampled alloc space).
type spanRow struct {
	size                         int
	free, spans, live, allocated float64
}

// spanRows reads BenchmarkSessions.spans: the totals, then the object
// sizes with the most free space in their spans.
func spanRows(seriesDir string) (all spanRow, rows []spanRow, ok bool) {
	b, err := os.ReadFile(filepath.Join(seriesDir, "BenchmarkSessions.spans"))
	if err != nil {
		return all, nil, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		var r spanRow
		v := make([]float64, 4)
		for i := range v {
			v[i], _ = strconv.ParseFloat(f[i+1], 64)
		}
		r.free, r.spans, r.live, r.allocated = v[0], v[1], v[2], v[3]
		if f[0] == "all" {
			all = r
			continue
		}
		r.size, _ = strconv.Atoi(f[0])
		rows = append(rows, r)
	}
	return all, rows, len(rows) > 0
}

// fragments says where the heap's free space inside spans is, from
// BenchmarkSessions.spans, and what debug.FreeOSMemory changed.
func fragments(seriesDir string, m map[string]float64) string {
	all, rows, ok := spanRows(seriesDir)
	if !ok {
		return ""
	}
	var parts []string
	for _, r := range rows[:min(4, len(rows))] {
		parts = append(parts, fmt.Sprintf("%d B (%s KiB free in %s KiB of spans; %s KiB of that size allocated per session since the process started, %s KiB live)",
			r.size, fmtNum(r.free), fmtNum(r.spans), fmtNum(r.allocated), fmtNum(r.live)))
	}
	s := fmt.Sprintf(" The server's heap dump, read span by span (its spans, the whole process's heap in use divided by the sessions held, add up to %s KiB per session), puts %s KiB per session of free space inside spans, most in objects of %s: sizes where the process allocated many times what stays live, so that the short-lived objects of each handshake (by the heap profile: AES key schedules, HKDF and HMAC states, SHA-256 states) leave spans partly empty around the connection's long-lived ones.",
		fmtNum(all.spans), fmtNum(all.free), strings.Join(parts, ", "))
	if v, ok := m["KiB-heap-change-FreeOSMemory/session"]; ok {
		s += fmt.Sprintf(" debug.FreeOSMemory changed HeapInuse by %s KiB per session: it returns whole free spans to the OS, not the free space inside spans in use.", fmtNum(v))
	}
	return s
}

// owners reads the heap profile's owner breakdown the sessions benchmark
// wrote ("KiB owner" a line) as "owner X, …".
func owners(seriesDir string) string {
	b, err := os.ReadFile(filepath.Join(seriesDir, "BenchmarkSessions.owners"))
	if err != nil {
		return "not written in this run"
	}
	var parts []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, o, ok := strings.Cut(line, " "); ok {
			parts = append(parts, o+" "+k)
		}
	}
	return strings.Join(parts, ", ")
}
