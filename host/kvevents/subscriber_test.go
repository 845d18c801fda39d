package kvevents

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/freeport"
	"github.com/google/go-cmp/cmp"
)

// deadline is how long a test waits for what loopback does in milliseconds.
const deadline = 5 * time.Second

// collector keeps copies of the messages a subscriber handles.
type collector struct {
	mu   sync.Mutex
	msgs []Message
}

func (c *collector) handle(m *Message) {
	cp := *m
	cp.Batch.Events = nil
	for _, ev := range m.Batch.Events {
		ev.Hashes, ev.Tokens = slices.Clone(ev.Hashes), slices.Clone(ev.Tokens)
		cp.Batch.Events = append(cp.Batch.Events, ev)
	}
	c.mu.Lock()
	c.msgs = append(c.msgs, cp)
	c.mu.Unlock()
}

func (c *collector) all() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}

// has reports whether a message satisfies ok.
func (c *collector) has(ok func(m *Message) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.msgs, func(m Message) bool { return ok(&m) })
}

// startSub runs a subscriber of cfg, collecting its messages, until the returned stop (also a
// cleanup), which fails the test unless Run returns nil within deadline.
func startSub(t *testing.T, cfg SubscriberConfig) (*Subscriber, *collector, func()) {
	t.Helper()
	col := &collector{}
	cfg.Handle = col.handle
	s, err := NewSubscriber(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(deadline):
			t.Errorf("Run did not return within %v of its context ending", deadline)
		}
	})
	t.Cleanup(stop)
	return s, col, stop
}

// testPub is a Publisher that publishes batchFor(seq, ts).
type testPub struct {
	*Publisher
	next uint64
	ts   float64
}

func newTestPub(t *testing.T, listen, replay string, buffer int, ts float64) *testPub {
	t.Helper()
	p, err := NewPublisher(listen, replay, "", buffer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &testPub{Publisher: p, ts: ts}
}

// publish publishes the next batch.
func (p *testPub) publish(t *testing.T) {
	t.Helper()
	b := batchFor(p.next, p.ts)
	if err := p.Publish(b); err != nil {
		t.Fatal(err)
	}
	if b.Seq != p.next {
		t.Fatalf("Publish numbered %d, want %d", b.Seq, p.next)
	}
	p.next++
}

// warmUp publishes until col holds a batch of p's: a subscription takes effect a moment after
// the connection (ZeroMQ's slow joiner), and what is published before is not sent.
func (p *testPub) warmUp(t *testing.T, col *collector) {
	t.Helper()
	eventually.Wait(t, deadline, "a first batch", func() bool {
		if col.has(func(m *Message) bool { return m.Batch.TS == p.ts }) {
			return true
		}
		p.publish(t)
		return false
	})
}

// batchFor is the batch published as seq, by a publisher told apart by ts.
func batchFor(seq uint64, ts float64) *Batch {
	return &Batch{Seq: seq, TS: ts, Events: []Event{
		{Kind: Stored, Hashes: []uint64{2*seq + 1, 2*seq + 2}, Tokens: []uint32{1, 2, 3, 4}, BlockSize: 2, Medium: "GPU"},
		{Kind: Removed, Hashes: []uint64{seq}},
	}}
}

// waitSeq waits until col has handled seq.
func waitSeq(t *testing.T, col *collector, seq uint64) {
	t.Helper()
	eventually.Wait(t, deadline, "the last batch", func() bool {
		return col.has(func(m *Message) bool { return m.Batch.Seq == seq })
	})
}

// checkConsecutive checks that msgs are the batches from msgs[0]'s on, in order, whole.
func checkConsecutive(t *testing.T, msgs []Message, ts float64) {
	t.Helper()
	for i, m := range msgs {
		if i > 0 && m.Batch.Seq != msgs[i-1].Batch.Seq+1 {
			t.Fatalf("message %d has seq %d after %d", i, m.Batch.Seq, msgs[i-1].Batch.Seq)
		}
		if d := cmp.Diff(batchFor(m.Batch.Seq, ts), &m.Batch, equal); d != "" {
			t.Fatalf("message %d (-want +got):\n%s", i, d)
		}
	}
}

func TestSubscriberInOrder(t *testing.T) {
	p := newTestPub(t, "tcp://127.0.0.1:0", "", 0, 1)
	sub, col, _ := startSub(t, SubscriberConfig{Address: p.Addr()})
	p.warmUp(t, col)
	for range 50 {
		p.publish(t)
	}
	waitSeq(t, col, p.next-1)
	msgs := col.all()
	checkConsecutive(t, msgs, 1)
	for i, m := range msgs {
		if m.First != (i == 0) || m.Missed != 0 || m.Restart {
			t.Errorf("message %d (seq %d): First %v, Missed %d, Restart %v", i, m.Batch.Seq, m.First, m.Missed, m.Restart)
		}
	}
	n := uint64(len(msgs))
	want := SubscriberStats{Messages: n, Events: 2 * n, BlockEvents: 3 * n, Connects: 1, Connected: true}
	if got := sub.Stats(); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}

func TestSubscriberReplayFillsGap(t *testing.T) {
	p := newTestPub(t, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 100, 1)
	sub, col, _ := startSub(t, SubscriberConfig{Address: p.Addr(), Replay: p.ReplayAddr()})
	p.warmUp(t, col)
	p.loseNext(3)
	for range 10 {
		p.publish(t)
	}
	waitSeq(t, col, p.next-1)
	msgs := col.all()
	checkConsecutive(t, msgs, 1)
	for i, m := range msgs {
		if m.Missed != 0 || m.Restart || m.First != (i == 0) {
			t.Errorf("message %d (seq %d): First %v, Missed %d, Restart %v", i, m.Batch.Seq, m.First, m.Missed, m.Restart)
		}
	}
	if st := sub.Stats(); st.Gaps != 1 || st.Replayed < 3 || st.Missed != 0 || st.Messages != uint64(len(msgs)) {
		t.Errorf("Stats = %+v, want a gap, 3 or more replayed, none missed", st)
	}
}

// TestSubscriberReplayPartial loses more batches than the publisher keeps: replay recovers what
// it holds, and the first batch it sends carries the rest as missed.
func TestSubscriberReplayPartial(t *testing.T) {
	p := newTestPub(t, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 2, 1)
	sub, col, _ := startSub(t, SubscriberConfig{Address: p.Addr(), Replay: p.ReplayAddr()})
	p.warmUp(t, col)
	p.loseNext(5)
	for range 6 {
		p.publish(t)
	}
	waitSeq(t, col, p.next-1)
	msgs := col.all()
	checkConsecutive(t, msgs[:len(msgs)-2], 1)
	checkConsecutive(t, msgs[len(msgs)-2:], 1)
	if m := msgs[len(msgs)-2]; m.Batch.Seq != p.next-2 || m.Missed != 4 {
		t.Errorf("after the gap: seq %d missing %d, want seq %d missing 4", m.Batch.Seq, m.Missed, p.next-2)
	}
	if st := sub.Stats(); st.Gaps != 1 || st.Replayed != 2 || st.Missed != 4 {
		t.Errorf("Stats = %+v, want 1 gap, 2 replayed, 4 missed", st)
	}
}

func TestSubscriberGapUnfilled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		replay func(t *testing.T) string
	}{
		{"no replay", func(*testing.T) string { return "" }},
		{"replay down", func(t *testing.T) string { return "tcp://" + freeport.Addr(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPub(t, "tcp://127.0.0.1:0", "", 0, 1)
			sub, col, _ := startSub(t, SubscriberConfig{Address: p.Addr(), Replay: tc.replay(t)})
			p.warmUp(t, col)
			p.loseNext(3)
			for range 5 {
				p.publish(t)
			}
			waitSeq(t, col, p.next-1)
			msgs := col.all()
			gap := msgs[len(msgs)-2]
			if gap.Batch.Seq != p.next-2 || gap.Missed != 3 || msgs[len(msgs)-1].Missed != 0 {
				t.Errorf("after the gap: seq %d missing %d, then missing %d; want seq %d missing 3, then 0",
					gap.Batch.Seq, gap.Missed, msgs[len(msgs)-1].Missed, p.next-2)
			}
			if st := sub.Stats(); st.Gaps != 1 || st.Missed != 3 || st.Replayed != 0 {
				t.Errorf("Stats = %+v, want 1 gap, 3 missed", st)
			}
		})
	}
}

// TestSubscriberRestart replaces the publisher by a new one on the same port, numbering from 0
// again: its first batch is a Restart.
func TestSubscriberRestart(t *testing.T) {
	addr := "tcp://" + freeport.Addr(t)
	p1 := newTestPub(t, addr, "", 0, 1)
	sub, col, _ := startSub(t, SubscriberConfig{Address: addr})
	p1.warmUp(t, col)
	for range 20 {
		p1.publish(t)
	}
	waitSeq(t, col, p1.next-1)
	p1.Close()
	p2 := newTestPub(t, addr, "", 0, 2)
	eventually.Wait(t, deadline, "reconnecting", func() bool { return sub.Stats().Connects == 2 })
	p2.warmUp(t, col)
	msgs := col.all()
	i := slices.IndexFunc(msgs, func(m Message) bool { return m.Batch.TS == 2 })
	if m := msgs[i]; !m.Restart || !m.First || m.Missed != 0 || m.Batch.Seq >= 20 {
		t.Errorf("first batch of the new publisher: seq %d, Restart %v, First %v, Missed %d; want a restart, first",
			m.Batch.Seq, m.Restart, m.First, m.Missed)
	}
	checkConsecutive(t, msgs[i:], 2)
	if st := sub.Stats(); st.Restarts != 1 || st.Gaps != 0 || st.Missed != 0 {
		t.Errorf("Stats = %+v, want a restart and no gap", st)
	}
}

func TestSubscriberBeforePublisher(t *testing.T) {
	addr := "tcp://" + freeport.Addr(t)
	sub, col, _ := startSub(t, SubscriberConfig{Address: addr})
	time.Sleep(150 * time.Millisecond) // a few refused dials
	if st := sub.Stats(); st.Connected || st.Connects != 0 {
		t.Fatalf("Stats = %+v before the publisher exists", st)
	}
	p := newTestPub(t, addr, "", 0, 1)
	p.warmUp(t, col)
	if m := col.all()[0]; !m.First || m.Restart || m.Missed != 0 {
		t.Errorf("first message: First %v, Restart %v, Missed %d", m.First, m.Restart, m.Missed)
	}
	if st := sub.Stats(); !st.Connected || st.Connects != 1 {
		t.Errorf("Stats = %+v, want connected once", st)
	}
}

// TestRunStopsOnCancel checks that Run returns promptly when its context ends, leaving no
// goroutine behind, whether connected, redialling or replaying.
func TestRunStopsOnCancel(t *testing.T) {
	for _, tc := range []string{"connected", "no publisher", "replaying"} {
		t.Run(tc, func(t *testing.T) {
			addr, replay := "tcp://"+freeport.Addr(t), ""
			var p *testPub
			if tc != "no publisher" {
				p = newTestPub(t, addr, "", 0, 1)
			}
			if tc == "replaying" {
				replay = stallingReplay(t)
			}
			before := runtime.NumGoroutine()
			_, col, stop := startSub(t, SubscriberConfig{Address: addr, Replay: replay, ReplayTimeout: time.Minute})
			if p != nil {
				p.warmUp(t, col)
			}
			if tc == "replaying" {
				p.loseNext(1)
				p.publish(t)
				p.publish(t)
				time.Sleep(50 * time.Millisecond)
			}
			start := time.Now()
			stop()
			if d := time.Since(start); d > time.Second {
				t.Errorf("Run took %v to return", d)
			}
			eventually.Wait(t, deadline, "the subscriber's goroutines to end", func() bool {
				return runtime.NumGoroutine() <= before
			})
		})
	}
}

// stallingReplay returns the address of a listener that accepts connections and never says a
// word, so that a replay request waits on its handshake.
func stallingReplay(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "tcp://" + ln.Addr().String()
}

func TestNewSubscriberChecks(t *testing.T) {
	handle := func(*Message) {}
	for _, tc := range []struct {
		cfg  SubscriberConfig
		want string
	}{
		{SubscriberConfig{Address: "tcp://127.0.0.1:5557"}, "Handle is nil"},
		{SubscriberConfig{Address: "127.0.0.1:5557", Handle: handle}, "want tcp://host:port or ipc://path"},
		{SubscriberConfig{Address: "udp://127.0.0.1:5557", Handle: handle}, `transport "udp" is not supported`},
		{SubscriberConfig{Address: "tcp://127.0.0.1", Handle: handle}, "missing port"},
		{SubscriberConfig{Address: "tcp://*:5557", Handle: handle}, "needs a host and a port"},
		{SubscriberConfig{Address: "tcp://:5557", Handle: handle}, "needs a host and a port"},
		{SubscriberConfig{Address: "tcp://h:http", Handle: handle}, `bad port "http"`},
		{SubscriberConfig{Address: "ipc://", Handle: handle}, "no path"},
		{SubscriberConfig{Address: "tcp://h:1", Replay: "h:2", Handle: handle}, "replay: kvevents: address"},
	} {
		if _, err := NewSubscriber(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSubscriber(%q, %q) = %v, want an error containing %q", tc.cfg.Address, tc.cfg.Replay, err, tc.want)
		}
	}
	for _, addr := range []string{"tcp://10.0.0.5:5557", "tcp://[::1]:5557", "tcp://vllm-0.vllm:5557", "ipc:///tmp/kv.sock"} {
		if _, err := NewSubscriber(SubscriberConfig{Address: addr, Handle: handle}); err != nil {
			t.Errorf("NewSubscriber(%q) = %v", addr, err)
		}
	}
}

func TestSubscriberIPC(t *testing.T) {
	addr := "ipc://" + t.TempDir() + "/kv.sock"
	p := newTestPub(t, addr, "", 0, 1)
	if p.Addr() != addr {
		t.Errorf("Addr = %q, want %q", p.Addr(), addr)
	}
	_, col, _ := startSub(t, SubscriberConfig{Address: addr})
	p.warmUp(t, col)
}

// TestTopic checks that a subscriber hears only the publishers whose topic its prefix matches.
func TestTopic(t *testing.T) {
	p, err := NewPublisher("tcp://127.0.0.1:0", "", "kv@vllm-0", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, other, _ := startSub(t, SubscriberConfig{Address: p.Addr(), Topic: "kv@vllm-1"})
	_, col, _ := startSub(t, SubscriberConfig{Address: p.Addr(), Topic: "kv@"})
	eventually.Wait(t, deadline, "a batch", func() bool {
		p.Publish(batchFor(0, 1))
		return len(col.all()) > 0
	})
	if n := len(other.all()); n != 0 {
		t.Errorf("a subscriber of another topic got %d messages", n)
	}
}

// be8 is the 8-byte big-endian form of seq.
func be8(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
