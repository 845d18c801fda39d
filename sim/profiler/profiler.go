// Package profiler measures Llumnix's latency profiles on a simulated engine, as Llumnix's own
// profiling runs do on a real one: the TTFT of a lone request of N prompt tokens on an idle
// engine, and the time between output tokens of a batch of B requests of T prompt tokens each
// decoding together. The results are written by internal/profile in the format Llumnix reads, so
// `foresight profile` gives the profile-producer what an operator would measure on the hardware.
package profiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/foresight-router/foresight/internal/profile"
	"github.com/foresight-router/foresight/sim/engine"
)

// Options size a profiling run.
type Options struct {
	// Runs is how many times each point is measured, each on a fresh engine with its own noise
	// seed (at least 1).
	Runs int
	// Noise is the relative standard deviation of the batch family's step times (the slot family
	// has its own jitter).
	Noise float64
	// Seed seeds the runs' noise.
	Seed uint64
	// Raw keeps every sample in its point (Llumnix's raw_data).
	Raw bool
}

// Profiles are the two profiles of one engine configuration.
type Profiles struct {
	// Metadata is both files'; WriteDir sets each file's description. Set its Timestamp before.
	Metadata profile.Metadata
	TTFT     []profile.TTFTPoint
	TPOT     []profile.TPOTPoint
	runs     int
}

// WriteDir writes the profiles as dir/ttft.json and dir/tpot.json, each with its description,
// and returns the two paths.
func (p *Profiles) WriteDir(dir string) (ttft, tpot string, err error) {
	ttft, tpot = filepath.Join(dir, "ttft.json"), filepath.Join(dir, "tpot.json")
	md := p.Metadata
	md.Description = fmt.Sprintf("TTFT of a lone request on an idle %s, %d runs a point (foresight profile)", md.Engine, p.runs)
	if err := write(ttft, md, p.TTFT); err != nil {
		return "", "", err
	}
	md.Description = fmt.Sprintf("time between output tokens of a batch decoding together on %s, %d runs a point (foresight profile)", md.Engine, p.runs)
	if err := write(tpot, md, p.TPOT); err != nil {
		return "", "", err
	}
	return ttft, tpot, nil
}

// write writes one profile file.
func write[P profile.TTFTPoint | profile.TPOTPoint](file string, md profile.Metadata, points []P) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := profile.Write(f, md, points); err != nil {
		_ = f.Close()
		return fmt.Errorf("%s: %w", file, err)
	}
	return f.Close()
}

// decodeTokens is how many output tokens a TPOT point measures after its whole batch has its
// first token, and before its first request finishes.
const decodeTokens = 16

// maxProfiledBatch caps the TPOT grid's batch sizes. The grid must be whole (every batch size
// with every context), and the largest batch must fit the KV cache at the longest context: vLLM's
// 1,024 sequences would hold the contexts to 512 tokens on an H100; 128 keeps them to 2,048–4,096.
// Beyond the grid the profile is extrapolated along its last segment.
const maxProfiledBatch = 128

// kvHeadroom is the share of the KV cache a TPOT point may fill: a point that needs more would
// measure preemptions, not decode steps.
const kvHeadroom = 0.9

// Run profiles cfg. The TTFT grid is powers of two from 16 prompt tokens up to the step budget
// (a chunked engine never prefills more in one step; Llumnix reads its profile only up there)
// or, for an engine that prefills a prompt whole, up to 32,768; the TPOT grid is batch sizes 1,
// 2, 4, … up to max_num_seqs or 128 (and that bound itself) × prompts of 16, 32, … tokens for which
// the largest batch fits the KV cache.
func Run(cfg engine.Config, name string, o Options) (*Profiles, error) {
	if o.Runs < 1 {
		return nil, fmt.Errorf("profiling: runs must be at least 1, got %d", o.Runs)
	}
	cfg.Noise = o.Noise
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("profiling %s: %w", name, err)
	}
	chunked := cfg.Family != engine.FamilySlot
	kv := cfg.NumGPUBlocks * cfg.BlockSize
	p := &Profiles{Metadata: profile.Metadata{Model: name, Engine: name, KVCacheTokens: kv,
		MaxNumBatchedTokens: cfg.MaxNumBatchedTokens, ChunkedPrefill: &chunked}, runs: o.Runs}
	top := 32768
	if chunked {
		top = cfg.MaxNumBatchedTokens
	}
	for n := 16; n <= top; n *= 2 {
		samples := make([]float64, o.Runs)
		for r := range samples {
			ttft, err := lone(cfg, o.Seed+uint64(r), n)
			if err != nil {
				return nil, fmt.Errorf("profiling %s: TTFT at %d tokens: %w", name, n, err)
			}
			samples[r] = ms(ttft)
		}
		p.TTFT = append(p.TTFT, profile.TTFTPoint{TokensNum: n, Stats: profile.StatsOf(samples, o.Raw)})
	}
	maxBatch := min(cfg.MaxNumSeqs, maxProfiledBatch)
	batches := grid(1, maxBatch)
	if last := batches[len(batches)-1]; last != maxBatch {
		batches = append(batches, maxBatch)
	}
	largest := batches[len(batches)-1]
	var contexts []int
	for t := 16; float64(largest*(t+4*decodeTokens)) <= kvHeadroom*float64(kv) && t <= top; t *= 2 {
		contexts = append(contexts, t)
	}
	if len(contexts) == 0 {
		return nil, fmt.Errorf("profiling %s: a batch of %d requests of 16 tokens does not fit its KV cache of %d tokens", name, largest, kv)
	}
	for _, b := range batches {
		for _, t := range contexts {
			var samples []float64
			for r := range o.Runs {
				gaps, err := batch(cfg, o.Seed+uint64(r), b, t)
				if err != nil {
					return nil, fmt.Errorf("profiling %s: TPOT at batch %d × %d tokens: %w", name, b, t, err)
				}
				samples = append(samples, gaps...)
			}
			p.TPOT = append(p.TPOT, profile.TPOTPoint{BatchSize: b, TokensPerRequest: t, Stats: profile.StatsOf(samples, o.Raw)})
		}
	}
	return p, nil
}

// grid is lo, 2·lo, 4·lo, … up to hi.
func grid(lo, hi int) []int {
	var out []int
	for v := lo; v <= hi; v *= 2 {
		out = append(out, v)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fresh returns an idle engine of cfg with its own seed.
func fresh(cfg engine.Config, seed uint64) (engine.Engine, error) {
	cfg.Seed = seed
	return engine.New(cfg)
}

// lone is the TTFT of one request of n unique prompt tokens on an idle engine.
func lone(cfg engine.Config, seed uint64, n int) (time.Duration, error) {
	e, err := fresh(cfg, seed)
	if err != nil {
		return 0, err
	}
	if err := e.Add(engine.Request{ID: 1, InputTokens: n, OutputTokens: 1}, 0); err != nil {
		return 0, err
	}
	for e.Busy() {
		for _, ev := range e.Step(e.NextStep()).Events {
			if ev.Kind == engine.FirstToken {
				return ev.Time, nil
			}
		}
	}
	return 0, errors.New("the engine finished without a first token")
}

// batch is the time between consecutive output tokens of b requests of t unique prompt tokens
// each, arriving together, counted from the moment every one of them has its first token (the
// batch decodes alone from then on) to the first one's finish. Each request generates enough
// tokens for decodeTokens of them to fall there: the prefill of the last request of a large
// batch takes several steps, during which the first ones decode.
func batch(cfg engine.Config, seed uint64, b, t int) ([]float64, error) {
	out := decodeTokens
	for range 12 {
		gaps, ok, err := decodeGaps(cfg, seed, b, t, out)
		if err != nil || ok {
			return gaps, err
		}
		out *= 2
	}
	return nil, fmt.Errorf("no stretch of %d tokens where the whole batch decodes", decodeTokens)
}

// decodeGaps runs b requests of t prompt and out output tokens and returns the gaps between
// consecutive tokens of each request once all have their first token, up to the first finish;
// ok is false when fewer than decodeTokens such gaps per request fall there.
func decodeGaps(cfg engine.Config, seed uint64, b, t, out int) (_ []float64, ok bool, _ error) {
	e, err := fresh(cfg, seed)
	if err != nil {
		return nil, false, err
	}
	for i := range b {
		if err := e.Add(engine.Request{ID: uint64(i + 1), InputTokens: t, OutputTokens: out}, 0); err != nil {
			return nil, false, err
		}
	}
	times := make([][]time.Duration, b) // by request, IDs from 1
	for e.Busy() {
		for _, ev := range e.Step(e.NextStep()).Events {
			switch ev.Kind {
			case engine.FirstToken, engine.Token:
				times[ev.ID-1] = append(times[ev.ID-1], ev.Time)
			case engine.Preempted:
				return nil, false, fmt.Errorf("request %d was preempted: the batch does not fit the KV cache", ev.ID)
			}
		}
	}
	var ready, end time.Duration = 0, -1
	for _, ts := range times {
		ready = max(ready, ts[0])
		if last := ts[len(ts)-1]; end < 0 || last < end {
			end = last
		}
	}
	var gaps []float64
	for _, ts := range times {
		from := slices.IndexFunc(ts, func(v time.Duration) bool { return v >= ready })
		n := 0
		for k := from; k >= 0 && k+1 < len(ts) && ts[k+1] <= end; k++ {
			gaps = append(gaps, ms(ts[k+1]-ts[k]))
			n++
		}
		if n < decodeTokens {
			return nil, false, nil
		}
	}
	return gaps, true, nil
}
