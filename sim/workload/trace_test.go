package workload

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// traceDirEnv names the directory holding the public traces these tests replay: the Azure LLM
// inference traces of 2023 (azure2023_conv.csv, azure2023_code.csv) and Mooncake's conversation
// trace (mooncake_conversation_trace.jsonl). The traces are not part of the repository (README.md
// says where they come from); make test finds them in a traces directory in or beside the
// repository. Without the variable, or without a file, the test skips and says why.
const traceDirEnv = "FORESIGHT_TRACE_DIR"

func tracePath(t testing.TB, file string) string {
	t.Helper()
	dir := os.Getenv(traceDirEnv)
	if dir == "" {
		t.Skipf("$%s is not set: it names the directory holding %s (make test finds a traces directory in or beside the repository)", traceDirEnv, file)
	}
	p := filepath.Join(dir, file)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("trace %s not available (%v)", p, err)
	}
	return p
}

func TestAzureReplay(t *testing.T) {
	tests := []struct {
		scenario, file  string
		rows            int
		inMean, outMean float64 // the trace's own summary
		rate            float64 // the trace's own summary, req/s
	}{
		{"azure-conv", "azure2023_conv.csv", 19366, 1155, 211, 5.53},
		{"azure-code", "azure2023_code.csv", 8819, 2048, 28, 2.57},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			path := tracePath(t, tt.file)
			w, err := Scenario(tt.scenario, Params{TracePath: path, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			s := Summarize(w.Requests)
			if s.Requests != tt.rows {
				t.Errorf("%d rows, want %d", s.Requests, tt.rows)
			}
			// The README rounds to integers (and the rate to 0.01).
			if math.Abs(s.InputMean-tt.inMean) > 0.5 || math.Abs(s.OutputMean-tt.outMean) > 0.5 {
				t.Errorf("token means %.1f / %.1f, want %.0f / %.0f", s.InputMean, s.OutputMean, tt.inMean, tt.outMean)
			}
			if math.Abs(s.Rate-tt.rate) > 0.01 || w.Requests[0].Arrival != 0 {
				t.Errorf("native rate %.3f req/s (first arrival %v), want %.2f from 0", s.Rate, w.Requests[0].Arrival, tt.rate)
			}
			checkBlockCounts(t, w.Requests)
			if h := PrefixHitRatio(w.Requests); h != 0 {
				t.Errorf("hit ratio %.4f, want 0: Azure rows have no prefix identity", h)
			}

			// The first N rows, rescaled to 2 req/s on each of 4 servers.
			const n = 1000
			sw, err := Scenario(tt.scenario, Params{TracePath: path, Requests: n, Servers: 4, RatePerServer: 2})
			if err != nil {
				t.Fatal(err)
			}
			ss := Summarize(sw.Requests)
			if ss.Requests != n || math.Abs(ss.Rate-8) > 1e-6 {
				t.Errorf("first %d rows at 8 req/s: got %d rows at %.6f req/s", n, ss.Requests, ss.Rate)
			}
			for i := range n {
				if sw.Requests[i].InputTokens != w.Requests[i].InputTokens {
					t.Fatalf("row %d: the prefix of the file differs from the whole file's", i)
				}
			}

			// A ten-minute window: exactly the rows whose time falls in it, timed from its start.
			win := Window{Start: 10 * time.Minute, End: 20 * time.Minute}
			ww, err := Scenario(tt.scenario, Params{TracePath: path, Window: win})
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, r := range w.Requests {
				if r.Arrival >= win.Start && r.Arrival < win.End {
					want++
				}
			}
			last := ww.Requests[len(ww.Requests)-1].Arrival
			if len(ww.Requests) != want || ww.Requests[0].Arrival < 0 || last >= win.End-win.Start {
				t.Errorf("window: %d rows spanning [%v, %v], want %d within [0, 10m)", len(ww.Requests), ww.Requests[0].Arrival, last, want)
			}
		})
	}
}

// mooncakeIDs reads the hash_ids column independently of the replay code.
func mooncakeIDs(t *testing.T, path string) [][]uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]uint64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var row struct {
			HashIDs []uint64 `json:"hash_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		out = append(out, row.HashIDs)
	}
	return out
}

func TestMooncakeReplay(t *testing.T) {
	path := tracePath(t, "mooncake_conversation_trace.jsonl")
	w, err := Scenario("mooncake", Params{TracePath: path, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(w.Requests)
	// The trace's own summary: 12,031 rows, 3.40 req/s, input mean 12035, output mean 343.
	if s.Requests != 12031 || math.Abs(s.Rate-3.40) > 0.01 || math.Abs(s.InputMean-12035) > 0.5 || math.Abs(s.OutputMean-343) > 0.5 {
		t.Errorf("got %d rows at %.3f req/s, token means %.1f / %.1f; want 12031 at 3.40, 12035 / 343", s.Requests, s.Rate, s.InputMean, s.OutputMean)
	}
	checkBlockCounts(t, w.Requests)

	// Identical leading hash_ids give identical leading 16-token blocks, 32 per hash_id, and the
	// first differing hash_id gives a different block.
	ids := mooncakeIDs(t, path)
	for i := 1; i < 2000; i++ {
		a, b := w.Requests[i-1], w.Requests[i]
		k := 0
		for k < len(ids[i-1]) && k < len(ids[i]) && ids[i-1][k] == ids[i][k] {
			k++
		}
		want := min(32*k, len(a.Blocks), len(b.Blocks))
		if 32*k < min(len(a.Blocks), len(b.Blocks)) {
			want = 32 * k // the blocks of the first differing hash_id differ
		}
		if got := commonPrefix(a.Blocks, b.Blocks); got != want {
			t.Fatalf("rows %d and %d share %d leading hash_ids and %d leading blocks, want %d", i-1, i, k, got, want)
		}
	}

	// Infinite-cache prefix hit ratio over the whole file. Its summary gives 0.366 counting
	// 512-token hash_ids; counted in 16-token blocks the partial last hash_id of each prompt
	// weighs by its full blocks, which gives 0.374.
	h := PrefixHitRatio(w.Requests)
	h512 := firstBlockHitRatio(w.Requests, MooncakeBlockTokens/BlockSize)
	if math.Abs(h512-0.366) > 0.002 || math.Abs(h-0.374) > 0.002 {
		t.Errorf("hit ratio %.4f in 16-token blocks, %.4f in hash_ids; want 0.374 and 0.366", h, h512)
	}
	t.Logf("hit ratio %.4f (16-token blocks), %.4f (512-token hash_ids)", h, h512)

	// The first N rows.
	fw, err := Scenario("mooncake", Params{TracePath: path, Requests: 2000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(fw.Requests) != 2000 || !slices.Equal(fw.Requests[1999].Blocks, w.Requests[1999].Blocks) {
		t.Errorf("first 2000 rows: got %d, or their blocks differ from the whole file's", len(fw.Requests))
	}
	t.Logf("first 2000 rows: hit ratio %.4f", PrefixHitRatio(fw.Requests))
}

// firstBlockHitRatio is PrefixHitRatio counting only every per-th block: for Mooncake, one
// block per 512-token hash_id (the first 16 tokens of each, which chain the whole prefix).
func firstBlockHitRatio(reqs []Request, per int) float64 {
	seen := map[uint64]bool{}
	hit, total := 0, 0
	for _, r := range reqs {
		var firsts []uint64
		for j := 0; j < len(r.Blocks); j += per {
			firsts = append(firsts, r.Blocks[j])
		}
		total += len(firsts)
		k := 0
		for k < len(firsts) && seen[firsts[k]] {
			k++
		}
		hit += k
		for _, b := range firsts {
			seen[b] = true
		}
	}
	return float64(hit) / float64(total)
}
