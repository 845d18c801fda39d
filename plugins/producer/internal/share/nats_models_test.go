package share

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/producer/internal/share/natstest"
)

func TestEncodeSet(t *testing.T) {
	s := set(t, 100, 0.2, "mean")
	data, err := EncodeSet(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSet(data, names, names)
	if err != nil {
		t.Fatal(err)
	}
	if back.Meta.TrainingRows != 100 || !bytes.Equal(back.TTFT.Text(), s.TTFT.Text()) || back.TPOT.Predict([]float64{1, 0}) != 3 {
		t.Errorf("round trip: %+v", back.Meta)
	}
	if _, err := DecodeSet(data, []string{"a", "b", "c"}, names); !errors.Is(err, model.ErrOutdated) {
		t.Errorf("a set over other features: %v, want ErrOutdated", err)
	}
	edited := bytes.Clone(data)
	edited[len(edited)-3] ^= 1 // in the TPOT model's text
	for name, bad := range map[string][]byte{
		"empty": nil, "truncated": data[:len(data)-1], "longer": append(bytes.Clone(data), 0),
		"foreign": []byte("FSSAMPLE........"), "edited": edited,
		"version": append(append(bytes.Clone(setMagic[:]), 2, 0), data[10:]...),
	} {
		if _, err := DecodeSet(bad, names, names); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestNATSBestModel: a replica started later serves the set trained on the most rows (then the
// lowest held-out error) among those it can serve; sets that do not load, another objective's
// or not a model set at all are passed over; a newer set replaces a replica's older one.
func TestNATSBestModel(t *testing.T) {
	srv := natstest.Start(t)
	publish := func(id string, s *model.Set) *NATSExchanger {
		t.Helper()
		e := newNATS(t, srv.URL, id)
		if rep, err := e.Exchange(t0, Outgoing{Model: s}, sink{}.merge); err != nil || !rep.ModelPublished {
			t.Fatalf("publishing %s's models: %+v, %v", id, rep, err)
		}
		return e
	}
	mean := func(m *model.Meta) bool { return m.Objective == "mean" }
	newcomer := newNATS(t, srv.URL, "new")
	natsExchange(t, newcomer, t0, nil, sink{})
	if s, _ := newcomer.BestModel(names, names, mean); s != nil {
		t.Fatal("a model in an empty bucket")
	}
	publish("a", set(t, 100, 0.3, "mean"))
	publish("b", set(t, 500, 0.2, "mean"))
	publish("e", set(t, 500, 0.1, "mean"))
	publish("q", set(t, 900, 0.1, "quantile"))
	x := publish("x", set(t, 2000, 0.1, "mean"))
	if _, err := x.Exchange(t0, Outgoing{Model: set(t, 2001, 0.1, "mean")}, sink{}.merge); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data, err := x.obs.GetBytes(ctx, "x")
	if err != nil || !bytes.Contains(data, []byte(`"training_rows":2001`)) {
		t.Fatalf("x's object holds %d bytes (%v), not its newer set", len(data), err)
	}
	data[len(data)-3] ^= 1 // no longer its checksum
	if _, err := x.obs.PutBytes(ctx, "x", data); err != nil {
		t.Fatal(err)
	}
	if _, err := x.obs.PutBytes(ctx, "operator", []byte("ttft.txt")); err != nil {
		t.Fatal(err)
	}
	s, from := newcomer.BestModel(names, names, mean)
	if s == nil || from != "e" || s.Meta.TrainingRows != 500 || s.TTFT.Predict([]float64{0, 0}) != 1 {
		t.Fatalf("best: %v from %q; want e's 500 rows (x's set is corrupt, q's objective differs)", s, from)
	}
	if s, _ := newcomer.BestModel([]string{"a", "b", "c"}, names, mean); s != nil {
		t.Error("a set over other features was served")
	}
}

// TestNATSGonePeersAreRemoved: a replica that published nothing for PeerTimeout is gone: its
// samples leave the stream and its model the bucket, delete marker included, and a replica
// known only by its model goes too; a live replica's stay.
func TestNATSGonePeersAreRemoved(t *testing.T) {
	srv := natstest.Start(t)
	rng := rand.New(rand.NewPCG(8, 8))
	dead, ghost, live, r := newNATS(t, srv.URL, "dead"), newNATS(t, srv.URL, "ghost"), newNATS(t, srv.URL, "live"), newNATS(t, srv.URL, "r")
	for _, e := range []*NATSExchanger{dead, ghost, live} {
		out := Outgoing{Model: set(t, 10, 0.1, "mean")}
		if e != ghost {
			out.Rows = rows(rng, 3, e.cfg.ReplicaID)
		}
		if _, err := e.Exchange(t0, out, sink{}.merge); err != nil {
			t.Fatal(err)
		}
	}
	got := sink{}
	for at := time.Duration(0); at <= timeout; at += 10 * time.Second {
		natsExchange(t, live, t0.Add(at), rows(rng, 1, fmt.Sprint(at)), sink{})
		if rep := natsExchange(t, r, t0.Add(at), nil, got); rep.Removed != 0 {
			t.Fatalf("at %v, before the timeout: %+v", at, rep)
		}
	}
	rep := natsExchange(t, r, t0.Add(timeout+time.Second), nil, got)
	if rep.Removed != 4 || len(got["dead"]) != 3 {
		t.Errorf("removed %d (want dead's samples and model, ghost's model and its empty subject), merged %d of dead's 3 rows", rep.Removed, len(got["dead"]))
	}
	ctx := context.Background()
	for _, id := range []string{"dead", "ghost"} {
		if _, err := r.obs.GetInfo(ctx, id, jetstream.GetObjectInfoShowDeleted()); !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("%s's model or its delete marker is still there: %v", id, err)
		}
	}
	if _, err := r.obs.GetInfo(ctx, "live"); err != nil {
		t.Errorf("live's model: %v", err)
	}
	info, err := r.st.Info(ctx, jetstream.WithSubjectFilter("test.samples.>"))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects["test.samples.dead"]; n != 0 || info.State.Subjects["test.samples.live"] == 0 {
		t.Errorf("subjects after the removal: %v", info.State.Subjects)
	}
	if rep := natsExchange(t, r, t0.Add(timeout+2*time.Second), nil, got); rep.Removed != 0 {
		t.Errorf("removed again: %+v", rep)
	}
}

// TestNATSInlineExchangesAreDeterministic: replicas exchanging one after another in one
// goroutine (the simulator's inline exchanges) merge the same rows in the same order, publish
// and remove the same, and a replica that joins late picks the same model, run after run.
func TestNATSInlineExchangesAreDeterministic(t *testing.T) {
	srv := natstest.Start(t)
	run := func(prefix string) []string {
		rng := rand.New(rand.NewPCG(9, 9))
		var log []string
		exs := map[string]*NATSExchanger{}
		got := map[string]sink{}
		for round := range 8 {
			now := t0.Add(time.Duration(round) * 20 * time.Second)
			if round == 3 {
				exs["late"], got["late"] = newNATSPrefix(t, srv.URL, prefix, "late"), sink{}
			}
			for _, id := range []string{"r0", "r1", "r2", "late"} {
				if round == 0 && id != "late" {
					exs[id], got[id] = newNATSPrefix(t, srv.URL, prefix, id), sink{}
				}
				e := exs[id]
				if e == nil || id == "r2" && round > 2 { // r2 stops: gone after a minute
					continue
				}
				out := Outgoing{Rows: rows(rng, rng.IntN(30), fmt.Sprint(id, round))}
				if rng.IntN(3) == 0 {
					out.Model = set(t, uint64(100+rng.IntN(900)), 0.1, "mean")
				}
				rep, err := e.Exchange(now, out, got[id].merge)
				if err != nil {
					t.Fatal(err)
				}
				log = append(log, fmt.Sprintf("%d %s %+v", round, id, rep))
				if id == "late" && round == 3 {
					var rows uint64
					s, from := e.BestModel(names, names, func(*model.Meta) bool { return true })
					if s != nil {
						rows = s.Meta.TrainingRows
					}
					log = append(log, fmt.Sprintf("late serves %q's %d rows", from, rows))
				}
			}
		}
		var merged []string
		for id, into := range got {
			for peer, rows := range into {
				merged = append(merged, fmt.Sprintf("%s merged %s: %s", id, peer, strings.Join(rows, ",")))
			}
		}
		slices.Sort(merged)
		return append(log, merged...)
	}
	want := run("det0")
	t.Logf("%d lines, e.g. %q", len(want), want[len(want)-1][:min(80, len(want[len(want)-1]))])
	for i := 1; i < 3; i++ {
		if got := run(fmt.Sprint("det", i)); !slices.Equal(got, want) {
			for k := range min(len(got), len(want)) {
				if got[k] != want[k] {
					t.Fatalf("run %d differs at line %d:\n%s\nwant\n%s", i, k, got[k], want[k])
				}
			}
			t.Fatalf("run %d: %d lines, want %d", i, len(got), len(want))
		}
	}
}
