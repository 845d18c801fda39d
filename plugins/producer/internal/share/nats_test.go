package share

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/producer/internal/share/natstest"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// newNATS returns an exchanger of replica id on url under prefix "test", closed at the test's end.
func newNATS(t testing.TB, url, id string) *NATSExchanger {
	return newNATSPrefix(t, url, "test", id)
}

func newNATSPrefix(t testing.TB, url, prefix, id string) *NATSExchanger {
	e := NewNATS(NATSConfig{URL: url, Prefix: prefix, ReplicaID: id, Timeout: 2 * time.Second,
		Limits: Limits{Keep: 4, Period: time.Second, PeerTimeout: timeout}})
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func natsExchange(t testing.TB, e *NATSExchanger, now time.Time, out []sdk.Sample, into sink) Report {
	t.Helper()
	rep, err := e.Exchange(now, Outgoing{Rows: out}, into.merge)
	if err != nil {
		t.Fatalf("exchange of %s: %v", e.cfg.ReplicaID, err)
	}
	return rep
}

// TestNATSPeersMergeEachOthersRowsOnce: with two and three replicas, each gets every row of the
// others exactly once, in their order, never its own.
func TestNATSPeersMergeEachOthersRowsOnce(t *testing.T) {
	srv := natstest.Start(t)
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n, " replicas"), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			exs, got, sent := make([]*NATSExchanger, n), make([]sink, n), make([][]string, n)
			for i := range n {
				exs[i], got[i] = newNATSPrefix(t, srv.URL, fmt.Sprint("merge", n), fmt.Sprint("r", i)), sink{}
			}
			for round := range 4 {
				now := t0.Add(time.Duration(round) * time.Second)
				for i, e := range exs {
					out := rows(rng, 5+rng.IntN(20), fmt.Sprint(i, "-", round))
					sent[i] = append(sent[i], ids(out)...)
					if rep := natsExchange(t, e, now, out, got[i]); rep.Published != len(out) || rep.Invalid != 0 {
						t.Fatalf("round %d, replica %d: %+v, want %d published", round, i, rep, len(out))
					}
				}
			}
			for i, e := range exs { // the rows published after each one's last exchange
				natsExchange(t, e, t0.Add(time.Hour), nil, got[i])
				if rep := natsExchange(t, e, t0.Add(time.Hour), nil, got[i]); rep.Merged != 0 || rep.Published != 0 {
					t.Errorf("replica %d: nothing new, yet %+v", i, rep)
				}
			}
			for i := range n {
				for j := range n {
					peer := fmt.Sprint("r", j)
					switch {
					case i == j && len(got[i][peer]) != 0:
						t.Errorf("replica %d merged %d of its own rows", i, len(got[i][peer]))
					case i != j && !slices.Equal(got[i][peer], sent[j]):
						t.Errorf("replica %d merged %d rows of replica %d, want its %d once each, in order", i, len(got[i][peer]), j, len(sent[j]))
					}
				}
			}
		})
	}
}

// TestNATSLargeBatchesAreChunked: more rows than a message holds go in several messages, each
// acknowledged, all merged once.
func TestNATSLargeBatchesAreChunked(t *testing.T) {
	srv := natstest.Start(t, func(o *server.Options) { o.MaxPayload = 64 << 10 })
	rng := rand.New(rand.NewPCG(2, 2))
	a, b := newNATS(t, srv.URL, "a"), newNATS(t, srv.URL, "b")
	out := rows(rng, 3000, "big") // about 400 KB: seven messages of 60 KB
	if rep := natsExchange(t, a, t0, out, sink{}); rep.Published != len(out) {
		t.Fatalf("published %d of %d", rep.Published, len(out))
	}
	got := sink{}
	rep := natsExchange(t, b, t0, nil, got)
	if !slices.Equal(got["a"], ids(out)) || rep.Files < 6 {
		t.Errorf("merged %d rows in %d messages, want all %d in at least 6", len(got["a"]), rep.Files, len(out))
	}
}

// TestNATSRestartTakesBackItsRows: a replica restarted under its ID (another nonce) takes back
// the rows its previous run published, and a reader merges the new run's rows once.
func TestNATSRestartTakesBackItsRows(t *testing.T) {
	srv := natstest.Start(t)
	rng := rand.New(rand.NewPCG(3, 3))
	first, reader := newNATS(t, srv.URL, "a"), newNATS(t, srv.URL, "b")
	var sent []string
	for round := range 3 {
		out := rows(rng, 5, fmt.Sprint(round))
		sent = append(sent, ids(out)...)
		natsExchange(t, first, t0.Add(time.Duration(round)*time.Second), out, sink{})
	}
	got := sink{}
	natsExchange(t, reader, t0.Add(3*time.Second), nil, got)
	_ = first.Close()

	again, back := newNATS(t, srv.URL, "a"), sink{}
	more := rows(rng, 5, "after")
	natsExchange(t, again, t0.Add(4*time.Second), more, back)
	if !slices.Equal(back["a"], sent) || !again.tookBack || again.conflict {
		t.Errorf("took back %d rows of its previous run, want %d (tookBack %v, conflict %v)", len(back["a"]), len(sent), again.tookBack, again.conflict)
	}
	natsExchange(t, reader, t0.Add(5*time.Second), nil, got)
	if want := append(slices.Clone(sent), ids(more)...); !slices.Equal(got["a"], want) {
		t.Errorf("the reader has %d rows of a, want %d", len(got["a"]), len(want))
	}
}

// TestNATSSameIDTwice: two producers given one replica ID (a mistake) merge each other's rows
// (their nonces tell them apart) and the conflict is noticed.
func TestNATSSameIDTwice(t *testing.T) {
	srv := natstest.Start(t)
	rng := rand.New(rand.NewPCG(4, 4))
	a1, a2 := newNATS(t, srv.URL, "a"), newNATS(t, srv.URL, "a")
	got1, got2 := sink{}, sink{}
	natsExchange(t, a1, t0, nil, got1)
	natsExchange(t, a2, t0, nil, got2)
	one, two := rows(rng, 3, "one"), rows(rng, 3, "two")
	natsExchange(t, a1, t0, one, got1)
	natsExchange(t, a2, t0, two, got2)
	natsExchange(t, a1, t0, nil, got1)
	if !slices.Equal(got1["a"], ids(two)) || !slices.Equal(got2["a"], ids(one)) || !a1.conflict || !a2.conflict {
		t.Errorf("a1 merged %v, a2 %v; conflict %v, %v", got1["a"], got2["a"], a1.conflict, a2.conflict)
	}
}

// TestNATSServerRestart: with the server down, exchanges fail at once and the rows wait (as the
// producer keeps them); once it is back on its port with its store, the replicas reconnect by
// themselves and every row arrives exactly once, none lost, none twice.
func TestNATSServerRestart(t *testing.T) {
	srv := natstest.Start(t)
	rng := rand.New(rand.NewPCG(5, 5))
	a, b := newNATS(t, srv.URL, "a"), newNATS(t, srv.URL, "b")
	got := sink{}
	var sent, pending []string
	var queue []sdk.Sample
	step := func(round int) error {
		out := rows(rng, 10, fmt.Sprint(round))
		sent = append(sent, ids(out)...)
		queue = append(queue, out...)
		rep, err := a.Exchange(t0.Add(time.Duration(round)*time.Second), Outgoing{Rows: queue}, sink{}.merge)
		queue = queue[rep.Published:] // what the producer requeues
		pending = ids(queue)
		return err
	}
	for round := range 3 {
		if err := step(round); err != nil {
			t.Fatal(err)
		}
		natsExchange(t, b, t0, nil, got)
	}
	srv.Stop()
	start := time.Now()
	for round := 3; round < 6; round++ {
		if err := step(round); err == nil {
			t.Fatal("an exchange with the server down succeeded")
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("three exchanges with the server down took %v; they must fail fast", d)
	}
	if a.Failures() != 3 || len(pending) != 30 {
		t.Errorf("%d failures, %d rows waiting; want 3 and 30", a.Failures(), len(pending))
	}
	srv.Restart()
	round := 6
	for deadline := time.Now().Add(15 * time.Second); step(round) != nil; round++ {
		if time.Now().After(deadline) {
			t.Fatalf("no exchange succeeded after the restart: %d failures", a.Failures())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := b.Exchange(t0, Outgoing{}, got.merge); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader did not reconnect")
		}
	}
	if len(queue) != 0 || !slices.Equal(got["a"], sent) {
		t.Errorf("the reader has %d rows of a, want its %d once each (%d still waiting)", len(got["a"]), len(sent), len(queue))
	}
}

// TestNATSPublishInDoubt: a message stored but whose acknowledgement was lost is published
// again under its ID with the rows the producer hands back: the stream stores it once.
func TestNATSPublishInDoubt(t *testing.T) {
	srv := natstest.Start(t)
	rng := rand.New(rand.NewPCG(6, 6))
	a, b := newNATS(t, srv.URL, "a"), newNATS(t, srv.URL, "b")
	natsExchange(t, a, t0, nil, sink{})
	lost := rows(rng, 7, "lost")
	m, err := a.chunk(lost, a.chunkBytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.send(m); err != nil { // stored...
		t.Fatal(err)
	}
	a.doubt = m // ...and its acknowledgement lost: the producer hands the rows back
	more := rows(rng, 4, "more")
	if rep := natsExchange(t, a, t0, append(slices.Clone(lost), more...), sink{}); rep.Published != 11 {
		t.Fatalf("published %d rows, want 11", rep.Published)
	}
	got := sink{}
	natsExchange(t, b, t0, nil, got)
	if want := append(ids(lost), ids(more)...); !slices.Equal(got["a"], want) {
		t.Errorf("merged %v, want %v", got["a"], want)
	}
}

// TestNATSUnreachable: with no server at the URL, the exchanger neither blocks nor panics: each
// exchange fails at once and BestModel finds nothing; once a server listens there it connects.
func TestNATSUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	e := newNATS(t, fmt.Sprintf("nats://127.0.0.1:%d", port), "a")
	start := time.Now()
	for range 3 {
		if _, err := e.Exchange(t0, Outgoing{Rows: rows(rand.New(rand.NewPCG(7, 7)), 2, "x")}, sink{}.merge); err == nil {
			t.Fatal("an exchange without a server succeeded")
		}
	}
	if s, _ := e.BestModel(names, names, func(*model.Meta) bool { return true }); s != nil {
		t.Error("a model without a server")
	}
	if d := time.Since(start); d > 3*time.Second || e.Failures() != 3 {
		t.Errorf("three failed exchanges took %v, %d failures", d, e.Failures())
	}
	natstest.Start(t, func(o *server.Options) { o.Port = port })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		rep, err := e.Exchange(t0, Outgoing{Rows: rows(rand.New(rand.NewPCG(7, 7)), 2, "x")}, sink{}.merge)
		if err == nil && rep.Published == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exchange succeeded once the server was up: %v", err)
		}
	}
}

func TestNATSNamesAndChecks(t *testing.T) {
	for prefix, want := range map[string]string{
		"foresight":     "foresight_producer_samples",
		"a-b_c":         "a-b_c_producer_samples",
		"team.prod":     "team_prod_",
		"team_prod":     "team_prod_producer_samples",
		"team.prod.eu1": "team_prod_eu1_",
	} {
		stream, bucket := NATSNames(prefix)
		if !strings.HasPrefix(stream, want) || strings.ContainsAny(stream+bucket, ".*> ") || !strings.HasSuffix(bucket, "_producer_models") {
			t.Errorf("NATSNames(%q) = %q, %q", prefix, stream, bucket)
		}
	}
	if a, _ := NATSNames("team.prod"); a == "team_prod_producer_samples" {
		t.Error("team.prod and team_prod share a stream")
	}
	for _, bad := range []string{"", "a..b", ".a", "a.", "a b", "a.*", "a.>", strings.Repeat("a", 201)} {
		if CheckPrefix(bad) == nil {
			t.Errorf("CheckPrefix(%q) accepted it", bad)
		}
	}
	for _, good := range []string{"nats://127.0.0.1:4222", "nats://a:4222, nats://b:4222", "tls://user:pw@nats.example:4222", "wss://x"} {
		if err := CheckNATSURL(good); err != nil {
			t.Errorf("CheckNATSURL(%q): %v", good, err)
		}
	}
	for _, bad := range []string{"", "localhost:4222", "http://x:4222", "nats://", "nats://a:1,", "nats://user:secret@:4222"} {
		err := CheckNATSURL(bad)
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckNATSURL(%q): %v", bad, err)
		}
	}
	if got := RedactURL("nats://u:secret@a:1,nats://b:2"); strings.Contains(got, "secret") || !strings.Contains(got, "b:2") {
		t.Errorf("RedactURL: %q", got)
	}
}

// TestNATSSmallServer: servers without room for the default limits (JetStream reserves a
// stream's max_bytes) get a smaller stream and bucket rather than no exchange.
func TestNATSSmallServer(t *testing.T) {
	srv := natstest.Start(t, func(o *server.Options) { o.JetStreamMaxStore = 100 << 20 })
	a, b := newNATS(t, srv.URL, "a"), newNATS(t, srv.URL, "b")
	out := rows(rand.New(rand.NewPCG(10, 10)), 5, "x")
	if rep, err := a.Exchange(t0, Outgoing{Rows: out, Model: set(t, 10, 0.1, "mean")}, sink{}.merge); err != nil || !rep.ModelPublished {
		t.Fatalf("%+v, %v", rep, err)
	}
	got := sink{}
	natsExchange(t, b, t0, nil, got)
	if n := a.st.CachedInfo().Config.MaxBytes; n >= DefaultStreamBytes || n < minCreateBytes || !slices.Equal(got["a"], ids(out)) {
		t.Errorf("stream of %d bytes; merged %v", n, got["a"])
	}
}
