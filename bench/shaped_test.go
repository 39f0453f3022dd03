package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The shaped link: a 100 Mbit/s bottleneck, 20 ms of round trip (10 ms
// each way), a drop-tail queue of one bandwidth-delay product (250 KB), in
// each direction.
const (
	linkRate  = 100e6 / 8 // bytes/s
	linkRTT   = 20 * time.Millisecond
	shapedLen = 64 << 20
)

// linkProfile is a shaped link: its rate (bytes/s), round trip, random loss
// in each direction, the result's size, and the suffix of its rows' names.
type linkProfile struct {
	suffix string
	rate   float64
	rtt    time.Duration
	loss   float64
	n      int64
}

// shapedProfiles: the 100 Mbit/s, 20 ms link without loss (rows without a
// suffix), and a slower, longer, lossy one (50 ms, 20 Mbit/s, 1 % loss
// each way, one-BDP queue) with a 16 MiB result (6.7 s at the link rate).
var shapedProfiles = []linkProfile{
	{"", linkRate, linkRTT, 0, shapedLen},
	{"-50ms-20mbit-loss1", 20e6 / 8, 50 * time.Millisecond, 0.01, 16 << 20},
}

func (l linkProfile) path() lossrelay.Path {
	return lossrelay.Path{Rate: l.rate, Delay: l.rtt / 2, Queue: lossrelay.BDP(l.rate, l.rtt), Loss: l.loss}
}

// relayStats is what a relay counts in each direction.
type relayStats interface {
	Stats() (up, down lossrelay.Counters)
}

// BenchmarkShapedLink: ping latency (open loop) during a 64 MiB result (16
// MiB for the go-sdk in short mode), and the result's throughput against
// the link rate, through a bottleneck (linkProfile.path): MCP-Flow through
// the UDP relay, the go-sdk's Streamable HTTP through the TCP relay (all
// its connections). MCP-Flow runs with its defaults (flow-cbor: quic-go's
// autotuned windows, the execution stream paced by its sender to a small
// queueing delay, Limits.StreamQueueDelay), without that pacing
// (flow-cbor-unpaced: what the defaults were before it), and with the
// stream receive window set to 2 BDP (flow.Limits.StreamReceiveWindow, a
// client setting, unpaced): what the path holds, one BDP on the link and
// one in the full queue, so that the sender cannot overflow the queue and
// still fills the link at the round trip a full queue makes (1.25 BDP,
// tried before, carried 70-82 % of the link rate: less than one BDP of the
// loaded round trip). The second profile (rows ending
// -50ms-20mbit-loss1: 50 ms, 20 Mbit/s, 1 % loss each way, a 16 MiB result
// for both) has MCP-Flow's defaults and the go-sdk. The relay's
// counters give the packet-level account: datagrams the full queue dropped,
// the time data waited in it (mean and max), the bytes the result's
// direction carried beyond the result (framing, retransmissions, base64),
// and how late the relay sent data after it was due (lateness is CPU the
// relay did not get, not the link). The relay runs in a process of its own
// (relayRole: this test binary again), so that the link model does not
// wait for the Go scheduler that both ends share in this process; it
// still shares the machine's cores with them (relay-cpu is what it used).
func BenchmarkShapedLink(b *testing.B) {
	ctx := context.Background()
	type peer struct {
		name   string
		prof   linkProfile
		window int // the client's stream receive window, 0: quic-go's autotuning
		dial   func(b *testing.B) (mcpTarget, relayStats, int)
	}
	flowPeer := func(prof linkProfile, window int, queueDelay time.Duration) func(b *testing.B) (mcpTarget, relayStats, int) {
		return func(b *testing.B) (mcpTarget, relayStats, int) {
			srv := flowtest.Serve(b, flow.ServerConfig{Logger: quiet, Limits: flow.Limits{StreamQueueDelay: queueDelay}})
			relay := udpRelayProc{startRelay(b, relaySpec{Target: srv.Addr().String(), Up: prof.path(), Down: prof.path(), Seed: 13, Record: true})}
			dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			s, err := flow.Dial(dctx, "https://"+relay.addr+flow.DefaultPath, flow.ClientConfig{TLSConfig: pinnedTLS(),
				Encodings: []codec.Name{codec.CBOR}, Logger: quiet, Limits: flow.Limits{StreamReceiveWindow: window}})
			if err != nil {
				b.Fatal(err)
			}
			return &flowTarget{s}, relay, relay.pid()
		}
	}
	sdkPeer := func(prof linkProfile) func(b *testing.B) (mcpTarget, relayStats, int) {
		return func(b *testing.B) (mcpTarget, relayStats, int) {
			srv := sdkfixture.NewServer()
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
			b.Cleanup(ts.Close)
			relay := startRelay(b, relaySpec{TCP: true, Target: ts.Listener.Addr().String(), Up: prof.path(), Down: prof.path()})
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			url := strings.Replace(ts.URL, ts.Listener.Addr().String(), relay.addr, 1)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: sdkHTTPClient(), DisableStandaloneSSE: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			return &sdkTarget{cs: cs}, relay, relay.pid()
		}
	}
	fast, lossy := shapedProfiles[0], shapedProfiles[1]
	bdp := lossrelay.BDP(fast.rate, fast.rtt)
	peers := []peer{
		{"flow-cbor", fast, 0, flowPeer(fast, 0, 0)},
		{"flow-cbor-unpaced", fast, 0, flowPeer(fast, 0, -1)},
		{fmt.Sprintf("flow-cbor-window-%dk", bdp*2>>10), fast, bdp * 2, flowPeer(fast, bdp*2, -1)},
		{"sdk-http", fast, 0, sdkPeer(fast)},
		{"flow-cbor" + lossy.suffix, lossy, 0, flowPeer(lossy, 0, 0)},
		{"sdk-http" + lossy.suffix, lossy, 0, sdkPeer(lossy)},
	}
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			t, relay, relayPID := p.dial(b)
			defer t.Close()
			for b.Loop() {
				_, d0 := relay.Stats()
				n := p.prof.n
				if strings.HasPrefix(p.name, "sdk") && !full {
					// The go-sdk's base64 over HTTP/1.1 fills a third
					// of the link: 16 MiB in short mode.
					n = min(n, 16<<20)
				}
				t0, cores0, c0, rc0 := time.Now(), coreBusy(), cpuTime(0), procCPU(relayPID)
				rd0, _ := procSched(relayPID)
				ed0, _ := procSched(os.Getpid())
				r, err := runHOL(ctx, t, n)
				if err != nil {
					b.Fatal(err)
				}
				rc := procCPU(relayPID) - rc0
				rd1, _ := procSched(relayPID)
				ed1, _ := procSched(os.Getpid())
				wall := time.Since(t0).Seconds()
				b.ReportMetric(rc.Seconds()/wall, "relay-cpu")
				// Run delay: the time the threads were runnable and waited
				// for a CPU (schedstat, all threads summed).
				b.ReportMetric((rd1-rd0).Seconds()*1e3/wall, "relay-run-delay-ms/s")
				b.ReportMetric((ed1-ed0).Seconds()*1e3/wall, "ends-run-delay-ms/s")
				reportMachineOthers(b, t0, cores0, cpuTime(0)-c0+rc)
				_, d1 := relay.Stats()
				r.report(b)
				tput := float64(r.Bytes) / r.Transfer.Seconds()
				b.ReportMetric(100*tput/p.prof.rate, "link-%")
				fw := d1.Forwarded - d0.Forwarded
				b.ReportMetric(float64(d1.QueueDropped-d0.QueueDropped), "queue-drops")
				if fw > 0 {
					b.ReportMetric(float64((d1.QueueDelaySum-d0.QueueDelaySum).Microseconds())/1e3/float64(fw), "queue-mean-ms")
				}
				b.ReportMetric(float64(d1.QueueDelayMax.Microseconds())/1e3, "queue-max-ms")
				b.ReportMetric(100*(float64(d1.Bytes-d0.Bytes)/float64(r.Bytes)-1), "overhead-%")
				if late := d1.Late - d0.Late; late > 0 {
					b.ReportMetric(float64((d1.LateSum-d0.LateSum).Microseconds())/1e3/float64(late), "relay-late-mean-ms")
				}
				b.ReportMetric(float64(d1.LateMax.Microseconds())/1e3, "relay-late-max-ms")
				b.ReportMetric(float64(d1.ReadLateMax.Microseconds())/1e3, "relay-read-late-max-ms")
				if rec, ok := relay.(recorder); ok {
					up, down := rec.Records()
					_, drops := rec.QueueDrops()
					slowPathAccount(b, r, p.prof, up, down, drops)
				}
			}
			b.ReportMetric(p.prof.rate*8/1e6, "link-Mbit/s")
			if p.window > 0 {
				b.ReportMetric(float64(p.window)/1024, "window-KiB")
			}
			b.ReportMetric(float64(p.prof.rtt.Milliseconds()), "rtt-ms")
			if p.prof.loss > 0 {
				b.ReportMetric(100*p.prof.loss, "loss-%")
			}
		})
	}
}

// recorder is a relay that keeps a lossrelay.Record of each datagram.
type recorder interface {
	Records() (up, down []lossrelay.Record)
	QueueDrops() (up, down []time.Time)
}

// slowPathAccount reports, for the slowest 1 % of r's busy pings, where
// their time went: the mean latency, and the mean of the largest bottleneck
// queue wait, relay lateness (sent after due: the relay's scheduling,
// its input lateness included) and up-direction excess (queue wait and
// lateness) among the datagrams the relay sent during each ping; what is
// left of the latency after the round trip and those three is a lower
// bound of the time the ping spent at the endpoints (client, server,
// QUIC's send queue, congestion and pacing, and recovering a lost
// datagram): slow-endpoint-ms. slow-down-drops is how many of the
// result's direction's datagrams the full queue dropped during each of
// those pings, on average (a ping's answer among them waits for QUIC's
// loss recovery), and slow-with-drops-% how many of those pings saw any.
func slowPathAccount(b *testing.B, r *holRun, prof linkProfile, up, down []lossrelay.Record, drops []time.Time) {
	if len(r.Busy) == 0 {
		return
	}
	excess := func(x lossrelay.Record) (queue, late time.Duration) {
		ser := time.Duration(float64(x.Len) / prof.rate * float64(time.Second))
		return x.Due.Sub(x.Arrived) - prof.rtt/2 - ser, x.Sent.Sub(x.Due)
	}
	worst := func(recs []lossrelay.Record, from, to time.Time) (queue, late time.Duration) {
		k, _ := slices.BinarySearchFunc(recs, from, func(x lossrelay.Record, t time.Time) int { return x.Sent.Compare(t) })
		for ; k < len(recs) && !recs[k].Sent.After(to); k++ {
			q, l := excess(recs[k])
			queue, late = max(queue, q), max(late, l)
		}
		return queue, late
	}
	byLat := slices.Clone(r.Busy)
	slices.SortFunc(byLat, func(a, b sample) int { return int(b.Lat - a.Lat) })
	slow := byLat[:max(1, len(byLat)/100)]
	var lat, dq, dl, ue, outside time.Duration
	var dropped, withDrops int
	for _, s := range slow {
		from := time.Unix(0, r.BusyStart+int64(s.At))
		to := from.Add(s.Lat)
		k, _ := slices.BinarySearchFunc(drops, from, func(x, t time.Time) int { return x.Compare(t) })
		n := 0
		for ; k < len(drops) && !drops[k].After(to); k++ {
			n++
		}
		dropped += n
		if n > 0 {
			withDrops++
		}
		q, l := worst(down, from, to)
		uq, ul := worst(up, from, to)
		lat += s.Lat
		dq += q
		dl += l
		ue += uq + ul
		outside += max(s.Lat-prof.rtt-q-l-uq-ul, 0)
	}
	n := time.Duration(len(slow))
	ms := func(d time.Duration) float64 { return float64((d / n).Microseconds()) / 1e3 }
	b.ReportMetric(ms(lat), "slow-lat-ms")
	b.ReportMetric(ms(dq), "slow-down-queue-ms")
	b.ReportMetric(ms(dl), "slow-down-late-ms")
	b.ReportMetric(ms(ue), "slow-up-excess-ms")
	b.ReportMetric(ms(outside), "slow-endpoint-ms")
	b.ReportMetric(float64(dropped)/float64(len(slow)), "slow-down-drops")
	b.ReportMetric(100*float64(withDrops)/float64(len(slow)), "slow-with-drops-%")
}

// reportMachineOthers reports the CPU that other processes than this one
// and the relay's used, per second, on all the machine's cores together
// since t0 (core times cores0 then; this process and the relay's used self
// since): what the relay and both ends competed with.
func reportMachineOthers(b *testing.B, t0 time.Time, cores0 map[int]time.Duration, self time.Duration) {
	cores1 := coreBusy()
	wall := time.Since(t0).Seconds()
	if cores0 == nil || cores1 == nil || wall <= 0 {
		return
	}
	var busy time.Duration
	for c, d := range cores1 {
		busy += d - cores0[c]
	}
	b.ReportMetric(max(busy-self, 0).Seconds()/wall, "others-cpu")
}
