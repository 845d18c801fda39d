package stateplane

import (
	"strconv"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/prefix"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/internal/freeport"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

// replica is one router's account over a live plane.
type replica struct {
	plane *Plane
	acct  *Account
}

func embed(t *testing.T, listen string) *Embedded {
	t.Helper()
	e, err := Embed(EmbedConfig{Listen: listen, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

func start(t *testing.T, url, id string, snapshot time.Duration) *replica {
	t.Helper()
	p, err := New(Config{Replica: id, SnapshotInterval: snapshot, PeerTimeout: 10 * snapshot, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	acct := NewAccount(inflight.New(), prefix.New(1024), p)
	if err := p.Start(url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &replica{plane: p, acct: acct}
}

// inflightOn is what r's ledger counts on endpoint.
func (r *replica) inflightOn(endpoint string) sdk.EndpointState {
	return fill(r.acct, endpoint, time.Now())
}

func TestAPeersDispatchesCountInTheLedgerAndTheIndex(t *testing.T) {
	e := embed(t, "127.0.0.1:0")
	a, b := start(t, e.URL(), "a", time.Hour), start(t, e.URL(), "b", time.Hour)
	blocks := []uint64{11, 12, 13}
	f := a.acct.Dispatch("ep1", inflight.Request{ID: "r1", PrefillTokens: 48, OutputTokens: 100, TPOTSLOMs: 30,
		DispatchedAt: time.Now()}, blocks)
	eventually.Wait(t, 5*time.Second, "b counts a's dispatch", func() bool { return b.inflightOn("ep1").InflightRequests == 1 })
	s := b.inflightOn("ep1")
	if s.PrefillTokensInFlight != 48 || s.MinRunningTPOTSLOMs != 30 {
		t.Errorf("b's view: prefill %d, TPOT objective %v; want 48, 30", s.PrefillTokensInFlight, s.MinRunningTPOTSLOMs)
	}
	if got := b.acct.Prefix.Match("ep1", blocks); got != 3 {
		t.Errorf("b's prefix match on ep1: %d blocks, want 3", got)
	}
	f.FirstToken(time.Now())
	eventually.Wait(t, 5*time.Second, "b sees the first token", func() bool { return b.inflightOn("ep1").DecodeTokensInFlight == 99 })
	f.Answer([]uint64{14})
	f.Finish()
	eventually.Wait(t, 5*time.Second, "b sees the end", func() bool { return b.inflightOn("ep1").InflightRequests == 0 })
	if got := b.acct.Prefix.Match("ep1", []uint64{11, 12, 13, 14}); got != 4 {
		t.Errorf("b's prefix match of prompt and answer: %d blocks, want 4", got)
	}
	if got := a.inflightOn("ep1").InflightRequests; got != 0 {
		t.Errorf("a's own view: %d in flight, want 0", got)
	}
	f.Finish() // twice: nothing more is published
	st := a.plane.Stats()
	if st.PublishedEvents != 3 {
		t.Errorf("a published %d events, want 3 (dispatch, first token, finish)", st.PublishedEvents)
	}
}

func TestTwoHopsOfOneRequestAreTwoFlights(t *testing.T) {
	e := embed(t, "127.0.0.1:0")
	a, b := start(t, e.URL(), "a", time.Hour), start(t, e.URL(), "b", time.Hour)
	r := inflight.Request{ID: "same", PrefillTokens: 10, OutputTokens: 5, DispatchedAt: time.Now()}
	pre := a.acct.Dispatch("prefill", r, nil)
	dec := a.acct.Dispatch("decode", r, nil)
	eventually.Wait(t, 5*time.Second, "b counts both hops", func() bool {
		return b.inflightOn("prefill").InflightRequests == 1 && b.inflightOn("decode").InflightRequests == 1
	})
	pre.Finish()
	eventually.Wait(t, 5*time.Second, "b ends the prefill hop only", func() bool { return b.inflightOn("prefill").InflightRequests == 0 })
	if got := b.inflightOn("decode").InflightRequests; got != 1 {
		t.Errorf("decode hop on b: %d, want 1", got)
	}
	dec.Finish()
}

func TestSnapshotsRepairAndAPartitionDegradesToTheOwnView(t *testing.T) {
	listen := freeport.Addr(t)
	dir := t.TempDir()
	srv, err := Embed(EmbedConfig{Listen: listen, StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL()
	a, b := start(t, url, "a", 50*time.Millisecond), start(t, url, "b", 50*time.Millisecond)
	var flights []*Flight
	for i := range 5 {
		flights = append(flights, a.acct.Dispatch("ep", inflight.Request{ID: strconv.Itoa(i), PrefillTokens: 1, OutputTokens: 1,
			DispatchedAt: time.Now()}, nil))
	}
	eventually.Wait(t, 5*time.Second, "b counts 5", func() bool { return b.inflightOn("ep").InflightRequests == 5 })

	srv.Shutdown()
	eventually.Wait(t, 5*time.Second, "b forgets a's requests when cut off", func() bool { return b.inflightOn("ep").InflightRequests == 0 })
	if got := a.inflightOn("ep").InflightRequests; got != 5 {
		t.Errorf("a's own view during the partition: %d, want 5", got)
	}
	// During the partition two requests end and one starts: their events are lost.
	flights[0].Finish()
	flights[1].Finish()
	a.acct.Dispatch("ep", inflight.Request{ID: "new", PrefillTokens: 1, OutputTokens: 1, DispatchedAt: time.Now()}, nil)
	if st := b.plane.Stats(); st.Partitions == 0 || st.Connected {
		t.Errorf("b's stats during the partition: %+v", st)
	}

	srv2, err := Embed(EmbedConfig{Listen: listen, StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Shutdown()
	back := time.Now()
	eventually.Wait(t, 5*time.Second, "b converges to a's 4", func() bool { return b.inflightOn("ep").InflightRequests == 4 })
	t.Logf("converged %s after the server returned", time.Since(back).Round(time.Millisecond))
}

func TestASilentPeerIsForgotten(t *testing.T) {
	e := embed(t, "127.0.0.1:0")
	a, b := start(t, e.URL(), "a", 20*time.Millisecond), start(t, e.URL(), "b", 20*time.Millisecond)
	a.acct.Dispatch("ep", inflight.Request{ID: "x", OutputTokens: 1, DispatchedAt: time.Now()}, nil)
	eventually.Wait(t, 5*time.Second, "b counts a's request", func() bool { return b.inflightOn("ep").InflightRequests == 1 })
	a.plane.Close() // a stops publishing, its request still "in flight"
	eventually.Wait(t, 5*time.Second, "b forgets a after its timeout", func() bool { return b.inflightOn("ep").InflightRequests == 0 })
	if st := b.plane.Stats(); st.Expired != 1 || st.Peers != 0 {
		t.Errorf("b's stats: %+v; want 1 expired, 0 peers", st)
	}
}

// fill is what a's ledger counts on endpoint at now.
func fill(a *Account, endpoint string, now time.Time) sdk.EndpointState {
	var s sdk.EndpointState
	a.Ledger.Fill(endpoint, now, time.Time{}, &s)
	return s
}
