package workload

import "time"

// PrefixHitRatio is the share of prompt blocks that an infinite prefix cache would already hold
// when each request arrives: for every request in order, its leading blocks already seen count
// as hits (up to the first miss), then its prompt and output blocks are remembered.
func PrefixHitRatio(reqs []Request) float64 {
	seen := make(map[uint64]struct{})
	var hit, total int
	for _, r := range reqs {
		total += len(r.Blocks)
		k := 0
		for k < len(r.Blocks) {
			if _, ok := seen[r.Blocks[k]]; !ok {
				break
			}
			k++
		}
		hit += k
		for _, b := range r.Blocks[k:] {
			seen[b] = struct{}{}
		}
		for _, b := range r.OutputBlocks {
			seen[b] = struct{}{}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(hit) / float64(total)
}

// Summary holds a workload's basic statistics.
type Summary struct {
	Requests              int
	InputMean, OutputMean float64
	InputMin, InputMax    int
	OutputMin, OutputMax  int
	Span                  time.Duration // first to last arrival
	Rate                  float64       // (requests-1) / span, requests/s
	Sessions              int           // distinct non-empty session ids
}

// Summarize computes reqs' summary.
func Summarize(reqs []Request) Summary {
	s := Summary{Requests: len(reqs)}
	if len(reqs) == 0 {
		return s
	}
	sessions := map[string]struct{}{}
	s.InputMin, s.OutputMin = reqs[0].InputTokens, reqs[0].OutputTokens
	var in, out float64
	for _, r := range reqs {
		in += float64(r.InputTokens)
		out += float64(r.OutputTokens)
		s.InputMin, s.InputMax = min(s.InputMin, r.InputTokens), max(s.InputMax, r.InputTokens)
		s.OutputMin, s.OutputMax = min(s.OutputMin, r.OutputTokens), max(s.OutputMax, r.OutputTokens)
		if r.SessionID != "" {
			sessions[r.SessionID] = struct{}{}
		}
	}
	s.InputMean, s.OutputMean = in/float64(len(reqs)), out/float64(len(reqs))
	s.Sessions = len(sessions)
	s.Span = reqs[len(reqs)-1].Arrival - reqs[0].Arrival
	if s.Span > 0 {
		s.Rate = float64(len(reqs)-1) / s.Span.Seconds()
	}
	return s
}
