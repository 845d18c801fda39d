package share

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

const timeout = time.Minute

func newEx(dir, id string) *Exchanger {
	return New(Config{Dir: dir, ReplicaID: id, Keep: 4, PeerTimeout: timeout})
}

// sink collects what an exchanger merges, by replica.
type sink map[string][]string

func (s sink) merge(replica string, rows []sdk.Sample) {
	for _, r := range rows {
		s[replica] = append(s[replica], r.Request.ID)
	}
}

func exchange(t *testing.T, e *Exchanger, now time.Time, out []sdk.Sample, into sink) Report {
	t.Helper()
	rep, err := e.Exchange(now, Outgoing{Rows: out}, into.merge)
	if err != nil {
		t.Fatalf("exchange of %s: %v", e.cfg.ReplicaID, err)
	}
	return rep
}

func ids(rows []sdk.Sample) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Request.ID
	}
	return out
}

func sampleFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, SamplesDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestPeersMergeEachOthersRowsOnce: each replica gets every row of the others exactly once, in
// their order, never its own.
func TestPeersMergeEachOthersRowsOnce(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 1))
	a, b := newEx(dir, "a"), newEx(dir, "b")
	gotA, gotB := sink{}, sink{}
	var sentA, sentB []string
	for round := range 3 {
		now := t0.Add(time.Duration(round) * time.Second)
		ra, rb := rows(rng, 10, fmt.Sprint("a", round)), rows(rng, 7, fmt.Sprint("b", round))
		sentA, sentB = append(sentA, ids(ra)...), append(sentB, ids(rb)...)
		if rep := exchange(t, a, now, ra, gotA); rep.Published != 10 {
			t.Fatalf("round %d: a published %d", round, rep.Published)
		}
		exchange(t, b, now, rb, gotB)
	}
	exchange(t, a, t0.Add(3*time.Second), nil, gotA) // b's last file
	if rep := exchange(t, a, t0.Add(4*time.Second), nil, gotA); rep.Merged != 0 || rep.Published != 0 {
		t.Errorf("nothing new, yet %+v", rep)
	}
	if !slices.Equal(gotA["b"], sentB) || !slices.Equal(gotB["a"], sentA) {
		t.Errorf("a merged %d of b's %d rows, b %d of a's %d", len(gotA["b"]), len(sentB), len(gotB["a"]), len(sentA))
	}
	if len(gotA["a"]) != 0 || len(gotB["b"]) != 0 {
		t.Error("a replica merged its own rows")
	}
}

// TestKeepsItsNewestFiles: a replica keeps Keep files; a reader that fell further behind
// merges what is left.
func TestKeepsItsNewestFiles(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(2, 2))
	a := newEx(dir, "a")
	for round := range 10 {
		exchange(t, a, t0.Add(time.Duration(round)*time.Second), rows(rng, 3, fmt.Sprint(round)), sink{})
	}
	if got := sampleFiles(t, dir); !slices.Equal(got, []string{"a.10", "a.7", "a.8", "a.9"}) {
		t.Errorf("files %v, want a.7 to a.10", got)
	}
	late := sink{}
	exchange(t, newEx(dir, "late"), t0.Add(10*time.Second), nil, late)
	if len(late["a"]) != 4*3 {
		t.Errorf("a reader arriving late merged %d rows, want the 12 of the 4 files kept", len(late["a"]))
	}
}

// TestRestartContinuesTheSequence: a replica restarted under the same ID writes after its
// newest file, takes back the rows of its previous run and removes the file it was writing when
// it died; readers take the new files as they come.
func TestRestartContinuesTheSequence(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 3))
	first := newEx(dir, "a")
	var sent []string
	for round := range 3 {
		r := rows(rng, 5, fmt.Sprint(round))
		sent = append(sent, ids(r)...)
		exchange(t, first, t0.Add(time.Duration(round)*time.Second), r, sink{})
	}
	reader := sink{}
	b := newEx(dir, "b")
	exchange(t, b, t0.Add(3*time.Second), nil, reader)
	died := filepath.Join(dir, SamplesDir, tempName(first.nonce, "a", 4))
	if err := os.WriteFile(died, []byte("half a fi"), 0o644); err != nil {
		t.Fatal(err)
	}

	again := newEx(dir, "a")
	back := sink{}
	more := rows(rng, 5, "after")
	exchange(t, again, t0.Add(4*time.Second), more, back)
	if again.NextSeq() != 5 {
		t.Errorf("the restarted replica's next file is %d, want 5 (after 1–3 and its own 4)", again.NextSeq())
	}
	if !slices.Equal(back["a"], sent) {
		t.Errorf("took back %d rows of its previous run, want %d", len(back["a"]), len(sent))
	}
	if _, err := os.Stat(died); !os.IsNotExist(err) {
		t.Errorf("the file its previous run was writing is still there: %v", err)
	}
	exchange(t, b, t0.Add(5*time.Second), nil, reader)
	if !slices.Equal(reader["a"], append(slices.Clone(sent), ids(more)...)) {
		t.Errorf("the reader has %d rows of a, want %d", len(reader["a"]), len(sent)+len(more))
	}
}

// TestInvalidFilesAreSkipped: torn, corrupt, foreign and other-version files under a peer's
// names are skipped (counted, never merged) while the peer's good files are merged; a file that
// becomes whole later (a cache that showed it early) is merged then.
func TestInvalidFilesAreSkipped(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(4, 4))
	p := newEx(dir, "p")
	exchange(t, p, t0, rows(rng, 4, "good1"), sink{})
	good := filepath.Join(dir, SamplesDir, "p.1")
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, SamplesDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	torn := encode(t, &File{ReplicaID: "p", Seq: 2, Samples: rows(rng, 4, "torn")})
	write("p.2", torn[:len(torn)/2])
	corrupt := encode(t, &File{ReplicaID: "p", Seq: 3, Samples: rows(rng, 4, "corrupt")})
	corrupt[40] ^= 1
	write("p.3", corrupt)
	write("p.4", encode(t, &File{ReplicaID: "q", Seq: 9, Samples: rows(rng, 4, "misnamed")}))
	write("p.5", reseal(encode(t, &File{ReplicaID: "p", Seq: 5, Samples: rows(rng, 4, "v2")}),
		func(b []byte) { b[len(headMagic)] = 2 }))
	write("p.6", []byte("lost+found"))
	write("notes.txt", []byte("an operator's file"))
	write("p.7", encode(t, &File{ReplicaID: "p", Seq: 7, Samples: rows(rng, 4, "good7")}))

	got := sink{}
	r := newEx(dir, "r")
	rep := exchange(t, r, t0, nil, got)
	if rep.Invalid != 5 || rep.Files != 2 || len(got["p"]) != 8 {
		t.Fatalf("%+v, merged %v; want 5 invalid files skipped and p.1 and p.7 merged", rep, got["p"])
	}
	write("p.2", torn) // whole now
	rep = exchange(t, r, t0.Add(time.Second), nil, got)
	if rep.Files != 1 || rep.Invalid != 4 || len(got["p"]) != 12 {
		t.Errorf("after p.2 became whole: %+v, %d rows", rep, len(got["p"]))
	}
	if len(got["q"]) != 0 {
		t.Error("merged a file under another replica's name")
	}
	if err := os.WriteFile(good, whole, 0o644); err != nil { // unchanged: not merged twice
		t.Fatal(err)
	}
	if rep := exchange(t, r, t0.Add(2*time.Second), nil, got); rep.Files != 0 {
		t.Errorf("merged again: %+v", rep)
	}
}

// TestClockSkew: files whose modification times are far in the future or the past (another
// machine's clock) are ordered and kept by their sequence numbers: a peer that advances is never
// taken as gone, however old its files look.
func TestClockSkew(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 5))
	p, r := newEx(dir, "p"), newEx(dir, "r")
	got := sink{}
	var sent []string
	for round := range 6 {
		now := t0.Add(time.Duration(round) * time.Hour) // an hour a round: far past PeerTimeout
		out := rows(rng, 3, fmt.Sprint(round))
		sent = append(sent, ids(out)...)
		exchange(t, p, now, out, sink{})
		// The writer's clock is a day ahead on odd rounds, a year behind on even ones, and its
		// files' times say so.
		skew := 24 * time.Hour
		if round%2 == 0 {
			skew = -365 * 24 * time.Hour
		}
		name := filepath.Join(dir, SamplesDir, fmt.Sprint("p.", round+1))
		if err := os.Chtimes(name, now.Add(skew), now.Add(skew)); err != nil {
			t.Fatal(err)
		}
		if rep := exchange(t, r, now, nil, got); rep.Removed != 0 {
			t.Fatalf("round %d: removed %d files of a live peer", round, rep.Removed)
		}
	}
	if !slices.Equal(got["p"], sent) {
		t.Errorf("merged %v, want %v (in sequence order)", got["p"], sent)
	}
}

// TestGonePeersAreRemoved: a peer whose sequence stands still is removed (its files, the file it
// was writing, its models) once PeerTimeout has passed by the reader's clock, not before; the
// rows merged stay merged; while the reader's clock is unknown nothing is removed.
func TestGonePeersAreRemoved(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(6, 6))
	dead, live, r := newEx(dir, "dead"), newEx(dir, "live"), newEx(dir, "r")
	exchange(t, dead, t0, rows(rng, 3, "d"), sink{})
	if err := os.WriteFile(filepath.Join(dir, SamplesDir, tempName(1, "dead", 2)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ModelsDir, "dead", "v000001-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := sink{}
	if rep := exchange(t, r, time.Time{}, nil, got); rep.Removed != 0 || len(got["dead"]) != 3 {
		t.Fatalf("clock unknown: %+v", rep)
	}
	for _, at := range []time.Duration{0, timeout / 2, timeout} {
		exchange(t, live, t0.Add(at), rows(rng, 1, fmt.Sprint(at)), sink{})
		if rep := exchange(t, r, t0.Add(at), nil, got); rep.Removed != 0 {
			t.Fatalf("at %v, within the timeout: removed %d", at, rep.Removed)
		}
	}
	// Whichever replica notices first removes the files: here live, whose clock agrees.
	removed := exchange(t, live, t0.Add(timeout+time.Second), rows(rng, 1, "last"), sink{}).Removed
	removed += exchange(t, r, t0.Add(timeout+time.Second), nil, got).Removed
	if removed != 3 {
		t.Fatalf("past the timeout: removed %d, want the file, the temporary file and the models", removed)
	}
	files := sampleFiles(t, dir)
	for _, f := range files {
		if id, _, _ := parseName(f); id == "dead" {
			t.Errorf("%s is left", f)
		}
		if id, _ := parseTemp(f); id == "dead" {
			t.Errorf("%s is left", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ModelsDir, "dead")); !os.IsNotExist(err) {
		t.Errorf("the gone replica's models are left: %v", err)
	}
	if !slices.Contains(files, "live.4") || len(got["dead"]) != 3 || len(got["live"]) != 4 {
		t.Errorf("files %v; merged %d of dead and %d of live", files, len(got["dead"]), len(got["live"]))
	}
}

// TestAPeerStartingAgain: a peer whose files were all removed (taken as gone, or a wiped
// volume) starts again at 1; its new files are merged although their numbers were merged before.
func TestAPeerStartingAgain(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	p, r := newEx(dir, "p"), newEx(dir, "r")
	got := sink{}
	for round := range 3 {
		exchange(t, p, t0, rows(rng, 2, fmt.Sprint("old", round)), sink{})
	}
	exchange(t, r, t0, nil, got)
	if err := os.RemoveAll(filepath.Join(dir, SamplesDir)); err != nil {
		t.Fatal(err)
	}
	exchange(t, r, t0, nil, got) // lists nothing of p
	again := newEx(dir, "p")
	fresh := rows(rng, 2, "new")
	exchange(t, again, t0, fresh, sink{})
	exchange(t, r, t0, nil, got)
	if n := len(got["p"]); n != 8 || !slices.Equal(got["p"][6:], ids(fresh)) {
		t.Errorf("merged %v", got["p"])
	}
}

// TestUnavailableDirectory: a missing directory (an unmounted volume) or a file in its place
// fails the exchange, which the next one retries; nothing is created in its place.
func TestUnavailableDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "share")
	e := newEx(dir, "a")
	for i := range 2 {
		if _, err := e.Exchange(t0, Outgoing{Rows: rows(rand.New(rand.NewPCG(8, 8)), 2, "x")}, sink{}.merge); err == nil {
			t.Fatal("an exchange with a missing directory succeeded")
		}
		if e.Failures() != i+1 {
			t.Errorf("failures %d, want %d", e.Failures(), i+1)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the missing directory was created: %v", err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Exchange(t0, Outgoing{}, sink{}.merge); err == nil {
		t.Error("an exchange through a file succeeded")
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if rep := exchange(t, e, t0, rows(rand.New(rand.NewPCG(8, 8)), 2, "x"), sink{}); rep.Published != 2 || e.Failures() != 0 {
		t.Errorf("once mounted: %+v, failures %d", rep, e.Failures())
	}
}

// TestWritersAtOnce: replicas publishing and reading the same directory at the same time never
// read a partial file, and in the end each has merged every row of the others exactly once.
func TestWritersAtOnce(t *testing.T) {
	dir := t.TempDir()
	const replicas, rounds, per = 4, 30, 20
	got := make([]sink, replicas)
	sent := make([][]string, replicas)
	exs := make([]*Exchanger, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		got[i] = sink{}
		// Keep every file: a replica racing ahead must not prune files a slower one has yet to read.
		exs[i] = New(Config{Dir: dir, ReplicaID: fmt.Sprint("r", i), Keep: rounds, PeerTimeout: time.Hour})
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(9, uint64(i)))
			for round := range rounds {
				out := rows(rng, per, fmt.Sprint(i, "-", round))
				sent[i] = append(sent[i], ids(out)...)
				rep, err := exs[i].Exchange(t0, Outgoing{Rows: out}, got[i].merge)
				if err != nil || rep.Invalid != 0 {
					t.Errorf("replica %d round %d: %+v, %v", i, round, rep, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range replicas {
		exchange(t, exs[i], t0, nil, got[i])
		for j := range replicas {
			if want := sent[j]; i != j && !slices.Equal(got[i][fmt.Sprint("r", j)], want) {
				t.Errorf("replica %d merged %d rows of replica %d, want its %d in order", i, len(got[i][fmt.Sprint("r", j)]), j, len(want))
			}
		}
	}
}

// TestSameIDTwice: a second producer given the same replica ID is noticed, and the sequence
// moves past the other's files instead of overwriting them at once.
func TestSameIDTwice(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(10, 10))
	a1, a2 := newEx(dir, "a"), newEx(dir, "a")
	exchange(t, a1, t0, nil, sink{})
	exchange(t, a2, t0, nil, sink{})
	exchange(t, a1, t0, rows(rng, 1, "one"), sink{}) // a.1
	exchange(t, a2, t0, rows(rng, 1, "two"), sink{}) // sees a.1, which it did not write
	if !a2.conflict || a2.NextSeq() != 3 {
		t.Errorf("conflict %v, next %d; want the conflict seen and a.2 written after a.1", a2.conflict, a2.NextSeq())
	}
	if got := sampleFiles(t, dir); !slices.Equal(got, []string{"a.1", "a.2"}) {
		t.Errorf("files %v", got)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   string
		seq  uint64
	}{
		{"router-0.12", "router-0", 12},
		{"a.5.7", "a.5", 7},
		{"x.1", "x", 1},
		{"x.0", "", 0},
		{"x.-1", "", 0},
		{".hidden.3", "", 0},
		{"x", "", 0},
		{"x.", "", 0},
		{"x.18446744073709551616", "", 0},
	} {
		id, seq, ok := parseName(tc.name)
		if id != tc.id || seq != tc.seq || ok != (tc.id != "") {
			t.Errorf("parseName(%q) = %q, %d, %v", tc.name, id, seq, ok)
		}
	}
	if id, ok := parseTemp(tempName(0xabc, "a.5", 7)); !ok || id != "a.5" {
		t.Errorf("parseTemp: %q %v", id, ok)
	}
	for _, bad := range []string{"", "-a", "a/b", "a b", ".a", "a.", string(make([]byte, 300))} {
		if CheckID(bad) == nil {
			t.Errorf("CheckID(%q) accepted it", bad)
		}
	}
}
