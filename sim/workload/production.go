package workload

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// ProductionConfig describes the production ladder: the blog's production request profile
// served under a load ladder alternating low and high rates (README: "production").
//
// Requests belong to conversations. Each request opens a new conversation with probability
// 1/TurnsPerConversation (or when none is open) and otherwise continues one of the open ones,
// picked uniformly; at most ActiveConversations are open, a new one closing the oldest. A
// conversation draws its prompt length L once from Input; every turn sends the conversation's
// context — its first ⌊PrefixFraction·L⌋ tokens, the same on every turn — followed by a question
// of its own, and draws its output length from Output. The first turn misses the cache, later
// turns can hit PrefixFraction of their prompt, so the infinite-cache hit ratio settles near
// PrefixFraction·(1 − 1/TurnsPerConversation), whatever the length distribution.
type ProductionConfig struct {
	Input, Output        Dist
	PrefixFraction       float64
	TurnsPerConversation float64
	ActiveConversations  int
	// Stages alternate low and high, low first, each StageDuration long.
	Stages            int
	StageDuration     time.Duration
	LowRatePerServer  float64
	HighRatePerServer float64
}

// DefaultProduction is the profile of the blog's "Production Workload" section: input tokens
// mean 729, std 13550, max 131072; output tokens mean 300, std 2213, max 8192 (log-normals
// clamped at those maxima, see Dist); prefix-cache hit ~94%; an 8-stage ladder alternating 1.0
// and 5.0 RPS on 13 servers, i.e. 1/13 and 5/13 req/s per server. The blog gives neither the
// stage length nor how the reuse arises: 60 s stages, and PrefixFraction 0.99 with 20 turns per
// conversation so that 0.99·(1 − 1/20) ≈ 0.94; 256 open conversations.
var DefaultProduction = ProductionConfig{
	Input:                Dist{Shape: LogNormal, Mean: 729, StdDev: 13550, Min: 1, Max: 131072},
	Output:               Dist{Shape: LogNormal, Mean: 300, StdDev: 2213, Min: 1, Max: 8192},
	PrefixFraction:       0.99,
	TurnsPerConversation: 20,
	ActiveConversations:  256,
	Stages:               8,
	StageDuration:        60 * time.Second,
	LowRatePerServer:     1.0 / 13,
	HighRatePerServer:    5.0 / 13,
}

// Validate reports a configuration that cannot generate requests.
func (c ProductionConfig) Validate() error {
	switch {
	case c.PrefixFraction < 0 || c.PrefixFraction > 1:
		return fmt.Errorf("prefix fraction must be in [0, 1], got %v", c.PrefixFraction)
	case c.TurnsPerConversation < 1:
		return fmt.Errorf("turns per conversation must be >= 1, got %v", c.TurnsPerConversation)
	case c.ActiveConversations < 1:
		return fmt.Errorf("active conversations must be >= 1, got %d", c.ActiveConversations)
	case c.Stages < 1 || c.StageDuration <= 0:
		return fmt.Errorf("the ladder needs >= 1 stage of positive duration, got %d of %v", c.Stages, c.StageDuration)
	case c.LowRatePerServer < 0 || c.HighRatePerServer <= 0:
		return fmt.Errorf("rates must be low >= 0 and high > 0, got %v and %v", c.LowRatePerServer, c.HighRatePerServer)
	}
	if err := c.Input.Validate(); err != nil {
		return fmt.Errorf("input length: %w", err)
	}
	if err := c.Output.Validate(); err != nil {
		return fmt.Errorf("output length: %w", err)
	}
	return nil
}

// Ladder returns the stages of the configuration's load ladder for a fleet of servers.
func (c ProductionConfig) Ladder(servers int) []Stage {
	stages := make([]Stage, c.Stages)
	for i := range stages {
		rate := c.LowRatePerServer
		if i%2 == 1 {
			rate = c.HighRatePerServer
		}
		stages[i] = Stage{Start: time.Duration(i) * c.StageDuration, Duration: c.StageDuration, Rate: rate * float64(max(servers, 1))}
	}
	return stages
}

// Production generates the production ladder. Params.RatePerServer sets the high rate (and,
// unless Params.LowRatePerServer is set, the low rate to a fifth of it, the blog's ratio);
// Params.Stages and Params.StageDuration reshape the ladder. With Params.Requests zero the
// workload is one pass over the ladder; otherwise the ladder repeats until that many requests.
func Production(c ProductionConfig, p Params) (*Workload, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.RatePerServer > 0 {
		c.HighRatePerServer = p.RatePerServer
		c.LowRatePerServer = p.RatePerServer / 5
	}
	if p.LowRatePerServer > 0 {
		c.LowRatePerServer = p.LowRatePerServer
	}
	if p.Stages > 0 {
		c.Stages = p.Stages
	}
	if p.StageDuration > 0 {
		c.StageDuration = p.StageDuration
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	is, err := newSampler(c.Input)
	if err != nil {
		return nil, err
	}
	os, err := newSampler(c.Output)
	if err != nil {
		return nil, err
	}
	stages := c.Ladder(p.servers())
	arr := stagedArrivals(newRand(p.Seed, streamArrivals), p.Requests, stages)
	if len(arr) == 0 {
		return nil, fmt.Errorf("the ladder produced no requests")
	}
	n := len(arr)

	lr := newRand(p.Seed, streamLengths)
	cr := newRand(p.Seed, streamContexts)
	sl := salt(p.Seed)
	root := combine(sl, 0)
	type conversation struct {
		id, turns, length, shared int
		ctx                       *stream // the context's full blocks and its partial block
	}
	var open []*conversation // oldest first
	conversations := 0
	reqs := make([]Request, n)
	for i := range reqs {
		var c0 *conversation
		if len(open) == 0 || cr.Float64()*c.TurnsPerConversation < 1 {
			length := min(is.draw(lr), maxModelLen-1) // leave room for at least one output token
			shared := min(int(c.PrefixFraction*float64(length)), length-1)
			ctx := newStream(root, shared/BlockSize)
			ctx.appendSegment(segment(sl, tagContext, uint64(conversations), 0), shared)
			c0 = &conversation{id: conversations, length: length, shared: shared, ctx: ctx}
			conversations++
			if len(open) == c.ActiveConversations {
				open = append(open[:0], open[1:]...)
			}
			open = append(open, c0)
		} else {
			c0 = open[cr.IntN(len(open))]
		}
		c0.turns++
		// Prompt plus output must fit the model's context (Llama-3.1's 131,072 tokens, which is
		// also the profile's input maximum): a prompt at the limit leaves room for less output.
		out := max(min(os.draw(lr), maxModelLen-c0.length), 1)
		r := &reqs[i]
		r.Arrival, r.InputTokens, r.OutputTokens = arr[i], c0.length, out
		r.SessionID, r.Turn = "s"+strconv.Itoa(c0.id), c0.turns
		// The prompt's blocks: the context's, then those the question completes; the stream s
		// continues the context without copying it, and its blocks start at the context's end.
		s := c0.ctx.tail((c0.length+out)/BlockSize - len(c0.ctx.blocks) + 1)
		s.appendSegment(segment(sl, tagQuestion, uint64(c0.id), uint64(c0.turns)), c0.length-c0.shared)
		np := len(s.blocks)
		r.Blocks = c0.ctx.view(0, len(c0.ctx.blocks))
		if np > 0 {
			r.Blocks = slices.Concat(r.Blocks, s.blocks[:np])
		}
		s.appendSegment(segment(sl, tagAnswer, uint64(c0.id), uint64(c0.turns)), out)
		r.OutputBlocks = s.view(np, len(s.blocks))
	}
	var total time.Duration
	var reqsPerCycle float64
	for _, s := range stages {
		total += s.Duration
		reqsPerCycle += s.Rate * s.Duration.Seconds()
	}
	return finish("production", reqs, reqsPerCycle/total.Seconds(), stages, p), nil
}

// maxModelLen is the context length requests must fit in (Llama-3.1-8B's 131,072 tokens).
const maxModelLen = 131072
