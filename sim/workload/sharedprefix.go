package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// SharedPrefixConfig describes a workload built like inference-perf's shared_prefix data
// generator (README: "Scenarios A–D"): NumGroups system prompts, PromptsPerGroup users per
// group, each user with one question length and one output length drawn once; users are visited
// round-robin in a shuffled order; with MultiTurn each visit is the user's next turn, whose
// prompt is the system prompt, the whole conversation so far and the new question.
type SharedPrefixConfig struct {
	NumGroups       int
	PromptsPerGroup int
	SystemPromptLen int
	Question        Dist
	Output          Dist
	MultiTurn       bool
	// MaxTurns ends a conversation after that many turns (0: never, as inference-perf does).
	MaxTurns int
	// MaxContext starts a new conversation when prompt+output would exceed it (0: no limit).
	MaxContext int
	// RatePerServer is the default arrival rate per server (requests/s).
	RatePerServer float64
	// OneOffShare is the share of requests, in [0, 1), that share nothing with any other: a
	// system prompt and a question of their own (lengths drawn as the others'), no user, no
	// group (Request.Group 0). Single-turn only. The others visit the groups' users as before,
	// in the same order.
	OneOffShare float64
}

// Validate reports a configuration that cannot generate requests.
func (c SharedPrefixConfig) Validate() error {
	switch {
	case c.NumGroups < 1 || c.PromptsPerGroup < 1:
		return fmt.Errorf("num_groups and num_prompts_per_group must be >= 1, got %d and %d", c.NumGroups, c.PromptsPerGroup)
	case c.SystemPromptLen < 0:
		return fmt.Errorf("system_prompt_len must be >= 0, got %d", c.SystemPromptLen)
	case c.MaxTurns < 0 || c.MaxContext < 0:
		return fmt.Errorf("max turns and max context must be >= 0, got %d and %d", c.MaxTurns, c.MaxContext)
	case c.RatePerServer < 0:
		return fmt.Errorf("rate per server must be >= 0, got %v", c.RatePerServer)
	case !(c.OneOffShare >= 0 && c.OneOffShare < 1):
		return fmt.Errorf("one-off share must be in [0, 1), got %v", c.OneOffShare)
	case c.OneOffShare > 0 && c.MultiTurn:
		return fmt.Errorf("one-off requests need a single-turn workload")
	}
	if err := c.Question.Validate(); err != nil {
		return fmt.Errorf("question_len: %w", err)
	}
	if err := c.Output.Validate(); err != nil {
		return fmt.Errorf("output_len: %w", err)
	}
	return nil
}

// Defaults shared by the presets: the blog's appendix sizes the cache for 5-turn sessions, and
// 131072 tokens is Llama-3.1's context window (max_model_len).
const (
	defaultMaxTurns   = 5
	defaultMaxContext = 131072
)

// SharedPrefixPresets are the llm-d blog's scenarios A–D (its "Benchmark configuration" table:
// num_groups, num_prompts_per_group, system_prompt_len, question_len ±,
// output_len ±, enable_multi_turn_chat=true). Default rates are the per-server QPS at which the
// blog saw prefix-cache evictions begin (appendix summary; A from the text's experimental 1.4).
var SharedPrefixPresets = map[string]SharedPrefixConfig{
	"A": {NumGroups: 6, PromptsPerGroup: 1000, SystemPromptLen: 1000,
		Question: Spread(30, 9), Output: Spread(1000, 300), MultiTurn: true,
		MaxTurns: defaultMaxTurns, MaxContext: defaultMaxContext, RatePerServer: 1.4},
	"B": {NumGroups: 6, PromptsPerGroup: 1000, SystemPromptLen: 1000,
		Question: Spread(3000, 900), Output: Spread(1000, 300), MultiTurn: true,
		MaxTurns: defaultMaxTurns, MaxContext: defaultMaxContext, RatePerServer: 0.6},
	"C": {NumGroups: 150, PromptsPerGroup: 5, SystemPromptLen: 6000,
		Question: Spread(1200, 360), Output: Spread(1000, 300), MultiTurn: true,
		MaxTurns: defaultMaxTurns, MaxContext: defaultMaxContext, RatePerServer: 0.4},
	"D": {NumGroups: 150, PromptsPerGroup: 5, SystemPromptLen: 1000,
		Question: Spread(6200, 1860), Output: Spread(1000, 300), MultiTurn: true,
		MaxTurns: defaultMaxTurns, MaxContext: defaultMaxContext, RatePerServer: 0.4},
}

// turnPlan is pass one's decision for one request; user −1 is a one-off request (q and o its
// lengths).
type turnPlan struct {
	user, sess, turn int
	q, o             int
}

// SharedPrefix generates a shared-prefix workload named name. Params.MaxTurns and
// Params.MaxContext override the configuration's (negative: no limit).
func SharedPrefix(name string, c SharedPrefixConfig, p Params) (*Workload, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.MaxTurns != 0 {
		c.MaxTurns = max(p.MaxTurns, 0)
	}
	if p.MaxContext != 0 {
		c.MaxContext = max(p.MaxContext, 0)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	qs, err := newSampler(c.Question)
	if err != nil {
		return nil, err
	}
	os, err := newSampler(c.Output)
	if err != nil {
		return nil, err
	}
	rate := p.fleetRate(c.RatePerServer)
	if rate <= 0 {
		return nil, fmt.Errorf("rate must be > 0: set Params.RatePerServer")
	}
	n := p.requests()
	users := c.NumGroups * c.PromptsPerGroup
	groups := c.NumGroups
	if p.NewGroup != nil {
		groups++ // the new group's users follow the others'
	}

	// Lengths, drawn in inference-perf's order: per group, its users' question lengths, then
	// their output lengths. A user keeps both for every turn. The new group draws from a stream
	// of its own, so the other groups' lengths do not depend on it.
	lr := newRand(p.Seed, streamLengths)
	qLen := make([]int, groups*c.PromptsPerGroup)
	oLen := make([]int, groups*c.PromptsPerGroup)
	for g := range groups {
		if g == c.NumGroups {
			lr = newRand(p.Seed, streamNewGroupLengths)
		}
		base := g * c.PromptsPerGroup
		for k := range c.PromptsPerGroup {
			qLen[base+k] = qs.draw(lr)
		}
		for k := range c.PromptsPerGroup {
			oLen[base+k] = os.draw(lr)
		}
	}
	// Visiting order: request i goes to user order[i % users] (inference-perf shuffles its
	// user sessions once and cycles through them). The new group's requests visit its users in
	// an order of their own, and the others continue where they left off.
	order := newRand(p.Seed, streamOrder).Perm(users)
	visit := newVisitor(p, users, c.PromptsPerGroup, n, order)

	// Pass one: which conversation and turn each request is, and how long each conversation
	// gets, so its blocks can live in one exactly sized array.
	type userState struct{ sess, turns, tokens int }
	st := make([]userState, len(qLen))
	for u := range st {
		st[u].sess = -1
	}
	plan := make([]turnPlan, n)
	var sessTokens []int
	var oneOff, oneOffLengths *rand.Rand
	if c.OneOffShare > 0 {
		oneOff, oneOffLengths = newRand(p.Seed, streamOneOff), newRand(p.Seed, streamOneOffLengths)
	}
	for i := range n {
		if oneOff != nil && oneOff.Float64() < c.OneOffShare {
			plan[i] = turnPlan{user: -1, turn: 1, q: qs.draw(oneOffLengths), o: os.draw(oneOffLengths)}
			continue
		}
		u := visit.next(i)
		s := &st[u]
		q, o := qLen[u], oLen[u]
		switch {
		case !c.MultiTurn:
			// Without multi-turn every visit sends the same prompt afresh.
			if s.sess < 0 {
				s.sess = len(sessTokens)
				sessTokens = append(sessTokens, c.SystemPromptLen+q)
			}
			plan[i] = turnPlan{user: u, sess: s.sess, turn: 1}
			continue
		case s.sess < 0,
			c.MaxTurns > 0 && s.turns >= c.MaxTurns,
			c.MaxContext > 0 && s.tokens+q+o > c.MaxContext:
			s.sess = len(sessTokens)
			sessTokens = append(sessTokens, 0)
			s.turns, s.tokens = 0, c.SystemPromptLen
		}
		s.turns++
		s.tokens += q + o
		sessTokens[s.sess] = s.tokens
		plan[i] = turnPlan{user: u, sess: s.sess, turn: s.turns}
	}

	// Pass two: the blocks.
	sl := salt(p.Seed)
	root := combine(sl, 0)
	sys := make([]*stream, groups)
	sess := make([]*stream, len(sessTokens))
	reqs := make([]Request, n)
	for i, pl := range plan {
		r := &reqs[i]
		if pl.user < 0 {
			r.Turn, r.OutputTokens = 1, pl.o
			s := newStream(root, (c.SystemPromptLen+pl.q)/BlockSize+1)
			s.appendSegment(segment(sl, tagSystem, oneOffKey(i), 0), c.SystemPromptLen)
			s.appendSegment(segment(sl, tagQuestion, oneOffKey(i), 1), pl.q)
			r.InputTokens = s.tokens
			r.Blocks = s.view(0, len(s.blocks))
			t := s.tail(pl.o/BlockSize + 1)
			t.appendSegment(segment(sl, tagAnswer, oneOffKey(i), 1), pl.o)
			r.OutputBlocks = t.view(0, len(t.blocks))
			continue
		}
		g := pl.user / c.PromptsPerGroup
		q, o := qLen[pl.user], oLen[pl.user]
		r.Group = g + 1
		r.Turn = pl.turn
		r.OutputTokens = o
		s := sess[pl.sess]
		if s == nil {
			if sys[g] == nil {
				sys[g] = newStream(root, c.SystemPromptLen/BlockSize)
				sys[g].appendSegment(segment(sl, tagSystem, uint64(g), 0), c.SystemPromptLen)
			}
			s = sys[g].fork(sessTokens[pl.sess]/BlockSize + 1)
			sess[pl.sess] = s
			if !c.MultiTurn {
				s.appendSegment(segment(sl, tagQuestion, uint64(pl.sess), 1), q)
			}
		}
		if c.MultiTurn {
			r.SessionID = "s" + strconv.Itoa(pl.sess)
			s.appendSegment(segment(sl, tagQuestion, uint64(pl.sess), uint64(pl.turn)), q)
			r.InputTokens = s.tokens
			np := len(s.blocks)
			r.Blocks = s.view(0, np)
			s.appendSegment(segment(sl, tagAnswer, uint64(pl.sess), uint64(pl.turn)), o)
			r.OutputBlocks = s.view(np, len(s.blocks))
			continue
		}
		// Single-turn: the prompt is the same on every visit; each visit's answer is its own.
		r.InputTokens = s.tokens
		r.Blocks = s.view(0, len(s.blocks))
		t := s.tail(o/BlockSize + 1)
		t.appendSegment(segment(sl, tagAnswer, uint64(pl.sess), uint64(i)), o)
		r.OutputBlocks = t.view(0, len(t.blocks))
	}
	for i, t := range poissonArrivals(newRand(p.Seed, streamArrivals), n, rate) {
		reqs[i].Arrival = t
	}
	stages := []Stage{{Duration: reqs[n-1].Arrival, Rate: rate}}
	return finish(name, reqs, rate, stages, p), nil
}

// oneOffKey keys request i's one-off segments apart from every group's and session's (whose keys
// are small indices).
func oneOffKey(i int) uint64 { return 1<<63 | uint64(i) }

// visitor says which user each request visits: the scenario's users in their shuffled order,
// round-robin, except that from request ⌈From·n⌉ on a share of the requests visit the new group's
// users (Params.NewGroup), in an order of their own.
type visitor struct {
	order, newOrder []int
	users, from     int
	share           float64
	pick            *rand.Rand // nil without a new group
	old, fresh      int        // visits so far to the old users and to the new group's
}

func newVisitor(p Params, users, perGroup, n int, order []int) *visitor {
	v := &visitor{order: order, users: users}
	if g := p.NewGroup; g != nil {
		v.pick = newRand(p.Seed, streamNewGroup)
		v.from, v.share = int(math.Ceil(g.From*float64(n))), g.Share
		v.newOrder = v.pick.Perm(perGroup)
	}
	return v
}

// next returns the user request i visits; call it for i = 0, 1, … in turn.
func (v *visitor) next(i int) int {
	if v.pick != nil && i >= v.from && v.pick.Float64() < v.share {
		u := v.users + v.newOrder[v.fresh%len(v.newOrder)]
		v.fresh++
		return u
	}
	u := v.order[v.old%v.users]
	v.old++
	return u
}
