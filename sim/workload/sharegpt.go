package workload

import (
	"fmt"
	"math"
)

// ShareGPTConfig describes a ShareGPT-like chat mix: independent single-turn requests (the first
// human turn and the first answer of a conversation, as vLLM's benchmark_serving and
// inference-perf's ShareGPT completion generator use it), unique prompts, Poisson arrivals.
type ShareGPTConfig struct {
	Input, Output Dist
	RatePerServer float64
}

// logNormalStdDev is the standard deviation of a log-normal with the given mean and σ.
func logNormalStdDev(mean, sigma float64) float64 {
	return mean * math.Sqrt(math.Expm1(sigma*sigma))
}

// DefaultShareGPT uses the ShareGPT means of the vLLM paper (Kwon et al., SOSP'23, Fig. 11:
// input 161.31, output 337.99 tokens, both heavily right-skewed with tails to ~2000 tokens)
// as log-normals with σ = 1 (our choice: the paper gives means and histograms, not σ), clamped
// to [4, 2048] (vLLM's benchmark drops sequences under 4 tokens; 2048 is the OPT context the
// paper's figure spans). The default rate, 2 req/s per server, is the paper's Fig. 13 operating
// point for ShareGPT on one GPU.
var DefaultShareGPT = ShareGPTConfig{
	Input:         Dist{Shape: LogNormal, Mean: 161.31, StdDev: logNormalStdDev(161.31, 1), Min: 4, Max: 2048},
	Output:        Dist{Shape: LogNormal, Mean: 337.99, StdDev: logNormalStdDev(337.99, 1), Min: 4, Max: 2048},
	RatePerServer: 2,
}

// ShareGPT generates a ShareGPT-like chat mix.
func ShareGPT(c ShareGPTConfig, p Params) (*Workload, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	is, err := newSampler(c.Input)
	if err != nil {
		return nil, fmt.Errorf("input length: %w", err)
	}
	os, err := newSampler(c.Output)
	if err != nil {
		return nil, fmt.Errorf("output length: %w", err)
	}
	rate := p.fleetRate(c.RatePerServer)
	if rate <= 0 {
		return nil, fmt.Errorf("rate must be > 0: set Params.RatePerServer")
	}
	n := p.requests()
	lr := newRand(p.Seed, streamLengths)
	sl := salt(p.Seed)
	root := combine(sl, 0)
	reqs := make([]Request, n)
	arr := poissonArrivals(newRand(p.Seed, streamArrivals), n, rate)
	for i := range reqs {
		in, out := is.draw(lr), os.draw(lr)
		r := &reqs[i]
		r.Arrival, r.InputTokens, r.OutputTokens = arr[i], in, out
		r.Blocks, r.OutputBlocks = uniqueBlocks(root, sl, uint64(i), in, out)
	}
	stages := []Stage{{Duration: reqs[n-1].Arrival, Rate: rate}}
	return finish("sharegpt", reqs, rate, stages, p), nil
}

// uniqueBlocks returns the blocks of a prompt and an answer that share nothing with any other
// request (key identifies the request).
func uniqueBlocks(root, sl, key uint64, in, out int) (prompt, output []uint64) {
	s := newStream(root, (in+out)/BlockSize+1)
	s.appendSegment(segment(sl, tagTrace, key, 0), in)
	np := len(s.blocks)
	s.appendSegment(segment(sl, tagAnswer, key, 0), out)
	return s.view(0, np), s.view(np, len(s.blocks))
}
