package stateplane

import (
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/inflight"
	"github.com/foresight-router/foresight/host/prefix"
	"github.com/rs/zerolog"
)

// receiver is a plane with a ledger and an index that applies messages handed to it.
func receiver(t testing.TB) (*Plane, *Account) {
	t.Helper()
	p, err := New(Config{Replica: "me", Manual: true, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return p, NewAccount(inflight.New(), prefix.New(64), p)
}

func message(h header, body []byte) []byte { return append(appendHeader(nil, h), body...) }

func TestMessagesApplyAndMalformedOnesAreRefused(t *testing.T) {
	p, acct := receiver(t)
	now := time.Unix(100, 0)
	h := header{replica: "peer", incarnation: 7, seq: 1, sentAt: now.UnixNano()}
	body := appendDispatch(nil, &flightFields{key: 1, endpoint: "ep", prefill: 32, output: 10, tpotSLOMs: 20}, []uint64{1, 2})
	body = appendFirst(body, 1)
	if err := p.peers.apply(message(h, body), now); err != nil {
		t.Fatal(err)
	}
	if n := acct.Ledger.Requests("ep"); n != 1 {
		t.Fatalf("%d in flight, want 1", n)
	}
	// A duplicate is ignored; a gap is reported (and the message applied).
	if err := p.peers.apply(message(h, appendFinish(nil, 1, nil)), now); err != nil || acct.Ledger.Requests("ep") != 1 {
		t.Fatalf("a duplicate: err %v, %d in flight", err, acct.Ledger.Requests("ep"))
	}
	h.seq = 3
	if err := p.peers.apply(message(h, appendFinish(nil, 1, []uint64{3})), now); err != errGap {
		t.Fatalf("after a gap: %v, want errGap", err)
	}
	if acct.Ledger.Requests("ep") != 0 || acct.Prefix.Match("ep", []uint64{1, 2, 3}) != 3 {
		t.Errorf("after the finish: %d in flight, match %d", acct.Ledger.Requests("ep"), acct.Prefix.Match("ep", []uint64{1, 2, 3}))
	}
	// Another version, a truncated event, an unknown kind: errors, nothing applied.
	bad := message(header{replica: "peer", incarnation: 7, seq: 4}, nil)
	bad[0] = messageVersion + 1
	good := appendDispatch(nil, &flightFields{key: 2, endpoint: "ep"}, []uint64{9})
	truncated, unknown := h, h
	truncated.seq, unknown.seq = 4, 5
	for _, tc := range []struct {
		name string
		msg  []byte
	}{{"version", bad}, {"truncated", message(truncated, good[:len(good)-3])}, {"kind", message(unknown, []byte{99})}} {
		if err := p.peers.apply(tc.msg, now); err == nil {
			t.Errorf("%s: applied", tc.name)
		}
	}
	if st := p.Stats(); st.Invalid != 3 || st.Gaps != 1 {
		t.Errorf("stats %+v: want 3 invalid, 1 gap", st)
	}
	h.seq = 5
	// A new incarnation of the peer: what it had in flight is gone.
	p.peers.apply(message(header{replica: "peer", incarnation: 7, seq: 6}, appendDispatch(nil, &flightFields{key: 3, endpoint: "ep"}, nil)), now)
	p.peers.apply(message(header{replica: "peer", incarnation: 8, seq: 1}, nil), now)
	if n := acct.Ledger.Requests("ep"); n != 0 {
		t.Errorf("after the peer restarted: %d in flight, want 0", n)
	}
}

func TestASnapshotReplacesThePeersRequests(t *testing.T) {
	p, acct := receiver(t)
	now := time.Unix(100, 0)
	h := header{replica: "peer", incarnation: 1, seq: 1}
	var body []byte
	for k := range uint64(3) {
		body = appendDispatch(body, &flightFields{key: k + 1, endpoint: "ep", prefill: 10, output: 100}, nil)
	}
	p.peers.apply(message(h, body), now)
	// The snapshot: key 1 ended, key 2 decoding at 40 tokens, key 3 as it was, key 4 new.
	snap := appendSnapshotHead(nil, 1, true)
	snap = appendEntry(snap, &entry{flightFields: flightFields{key: 2, endpoint: "ep", prefill: 10, output: 100}, decoding: true, generated: 40})
	snap = appendEntry(snap, &entry{flightFields: flightFields{key: 3, endpoint: "ep", prefill: 10, output: 100}})
	snap = appendEntry(snap, &entry{flightFields: flightFields{key: 4, endpoint: "ep2", prefill: 5, output: 50}})
	h.seq = 2
	if err := p.peers.apply(message(h, snap), now); err != nil {
		t.Fatal(err)
	}
	ep, ep2 := fill(acct, "ep", now), fill(acct, "ep2", now)
	if ep.InflightRequests != 2 || ep.PrefillTokensInFlight != 10 || ep.DecodeTokensInFlight != 60 || ep2.InflightRequests != 1 {
		t.Errorf("after the snapshot: ep %+v, ep2 %+v", ep, ep2)
	}
}

func FuzzApply(f *testing.F) {
	h := header{replica: "peer", incarnation: 1, seq: 1}
	f.Add(message(h, appendDispatch(nil, &flightFields{key: 1, endpoint: "ep", prefill: 1, output: 2}, []uint64{1})))
	f.Add(message(h, appendEntry(appendSnapshotHead(nil, 1, true), &entry{flightFields: flightFields{key: 1, endpoint: "e"}})))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, _ := receiver(t)
		_ = p.peers.apply(data, time.Unix(1, 0)) // must not panic
	})
}
