package workload

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// traceRow is one request read from a trace, before selection and scaling.
type traceRow struct {
	at       time.Duration // since the trace's first row
	in, out  int
	hashIDs  []uint64 // Mooncake only
	fileLine int
}

// azureTimeLayout parses the Azure 2023 TIMESTAMP column (wall clock, 100 ns precision).
const azureTimeLayout = "2006-01-02 15:04:05.999999999"

// readAzure reads an Azure 2023 LLM inference trace (TIMESTAMP,ContextTokens,GeneratedTokens).
// It stops after limit rows when limit > 0.
func readAzure(r io.Reader, limit int) ([]traceRow, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, want := range []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"} {
		if _, ok := col[want]; !ok {
			return nil, fmt.Errorf("missing column %q (header %q, want TIMESTAMP,ContextTokens,GeneratedTokens)", want, strings.Join(header, ","))
		}
	}
	var rows []traceRow
	var first time.Time
	for line := 2; limit <= 0 || len(rows) < limit; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		ts, err := time.Parse(azureTimeLayout, rec[col["TIMESTAMP"]])
		if err != nil {
			return nil, fmt.Errorf("line %d: TIMESTAMP: %w", line, err)
		}
		in, err1 := strconv.Atoi(rec[col["ContextTokens"]])
		out, err2 := strconv.Atoi(rec[col["GeneratedTokens"]])
		if err := errors.Join(err1, err2); err != nil || in < 0 || out < 0 {
			return nil, fmt.Errorf("line %d: token counts must be integers >= 0, got %q and %q", line, rec[col["ContextTokens"]], rec[col["GeneratedTokens"]])
		}
		if len(rows) == 0 {
			first = ts
		}
		rows = append(rows, traceRow{at: ts.Sub(first), in: in, out: out, fileLine: line})
	}
	return rows, nil
}

// mooncakeRow is one line of a Mooncake trace.
type mooncakeRow struct {
	Timestamp    float64  `json:"timestamp"`
	InputLength  int      `json:"input_length"`
	OutputLength int      `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

// MooncakeBlockTokens is the number of tokens a Mooncake hash_id stands for.
const MooncakeBlockTokens = 512

// readMooncake reads a Mooncake JSONL trace (timestamp in ms, input_length, output_length,
// hash_ids of 512-token prefix blocks). It stops after limit rows when limit > 0.
func readMooncake(r io.Reader, limit int) ([]traceRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var rows []traceRow
	var first float64
	for line := 1; sc.Scan() && (limit <= 0 || len(rows) < limit); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var m mooncakeRow
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if m.InputLength < 0 || m.OutputLength < 0 {
			return nil, fmt.Errorf("line %d: lengths must be >= 0, got %d and %d", line, m.InputLength, m.OutputLength)
		}
		if need := (m.InputLength + MooncakeBlockTokens - 1) / MooncakeBlockTokens; len(m.HashIDs) < need {
			return nil, fmt.Errorf("line %d: %d hash_ids cannot cover %d input tokens (need %d)", line, len(m.HashIDs), m.InputLength, need)
		}
		if len(rows) == 0 {
			first = m.Timestamp
		}
		rows = append(rows, traceRow{
			at: time.Duration((m.Timestamp - first) * float64(time.Millisecond)),
			in: m.InputLength, out: m.OutputLength, hashIDs: m.HashIDs, fileLine: line,
		})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

// readTrace opens path and reads it with read, taking only what selection can use.
func readTrace(path string, p Params, read func(io.Reader, int) ([]traceRow, error)) ([]traceRow, error) {
	if path == "" {
		return nil, fmt.Errorf("trace scenarios need a trace file: set Params.TracePath (--trace FILE)")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening trace: %w", err)
	}
	defer f.Close()
	limit := 0
	if p.Window == (Window{}) {
		limit = p.Requests
	}
	rows, err := read(f, limit)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	// Traces are sorted by time; make sure, keeping file order among ties.
	slices.SortStableFunc(rows, func(a, b traceRow) int { return cmp.Compare(a.at, b.at) })
	return selectRows(rows, p)
}

// selectRows applies the window, then the request limit, then rebases and rescales time.
func selectRows(rows []traceRow, p Params) ([]traceRow, error) {
	w := p.Window
	if w != (Window{}) {
		lo, _ := slices.BinarySearchFunc(rows, w.Start, func(r traceRow, t time.Duration) int { return cmp.Compare(r.at, t) })
		hi := len(rows)
		if w.End > 0 {
			hi, _ = slices.BinarySearchFunc(rows, w.End, func(r traceRow, t time.Duration) int { return cmp.Compare(r.at, t) })
		}
		rows = rows[lo:hi]
		for i := range rows {
			rows[i].at -= w.Start
		}
	}
	if p.Requests > 0 && len(rows) > p.Requests {
		rows = rows[:p.Requests]
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no trace rows selected (window [%v, %v), %d requests)", w.Start, w.End, p.Requests)
	}
	return rows, nil
}

// traceRate returns the native rate of rows (requests/s) and, when p asks for a target rate,
// rescales their times to it and returns the target.
func traceRate(rows []traceRow, p Params) float64 {
	span := (rows[len(rows)-1].at - rows[0].at).Seconds()
	if span <= 0 || len(rows) < 2 {
		return 0
	}
	native := float64(len(rows)-1) / span
	if p.RatePerServer <= 0 {
		return native
	}
	target := p.fleetRate(0)
	scale := native / target
	for i := range rows {
		rows[i].at = time.Duration(float64(rows[i].at) * scale)
	}
	return target
}

// Azure replays an Azure 2023 LLM inference trace (azure-conv or azure-code): arrival times
// relative to the first row, the row's token counts, and prompts that share nothing (the trace
// has no prefix identity).
func Azure(name string, p Params) (*Workload, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	rows, err := readTrace(p.TracePath, p, readAzure)
	if err != nil {
		return nil, err
	}
	rate := traceRate(rows, p)
	sl := salt(p.Seed)
	root := combine(sl, 0)
	reqs := make([]Request, len(rows))
	for i, row := range rows {
		r := &reqs[i]
		r.Arrival, r.InputTokens, r.OutputTokens = row.at, row.in, row.out
		r.Blocks, r.OutputBlocks = uniqueBlocks(root, sl, uint64(row.fileLine), row.in, row.out)
	}
	return finish(name, reqs, rate, nil, p), nil
}

// Mooncake replays a Mooncake JSONL trace. Each hash_id stands for 512 tokens and maps to 32
// consecutive 16-token blocks whose content is (hash_id, index within it), chained like any
// other blocks: requests with identical leading hash_ids have identical leading blocks. The
// prompt's last, partial hash_id contributes the full 16-token blocks it contains.
func Mooncake(p Params) (*Workload, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	rows, err := readTrace(p.TracePath, p, readMooncake)
	if err != nil {
		return nil, err
	}
	rate := traceRate(rows, p)
	sl := salt(p.Seed)
	root := combine(sl, 0)
	const per = MooncakeBlockTokens / BlockSize
	// owner[id] is the first request whose prompt has hash_id id: its blocks under id are the
	// blocks every later request with the same leading ids has.
	owner := map[uint64]int{}
	reqs := make([]Request, len(rows))
	for i, row := range rows {
		r := &reqs[i]
		r.Arrival, r.InputTokens, r.OutputTokens = row.at, row.in, row.out
		nb := row.in / BlockSize
		ids := row.hashIDs[:(row.in+MooncakeBlockTokens-1)/MooncakeBlockTokens]

		// The longest run of leading ids some earlier request had, and the blocks it gives.
		known, src := 0, -1
		for known < len(ids) {
			j, ok := owner[ids[known]]
			if !ok {
				break
			}
			known, src = known+1, j
		}
		reuse := 0
		if src >= 0 {
			reuse = min(known*per, len(reqs[src].Blocks), nb)
		}
		if src >= 0 && reuse == nb {
			r.Blocks = reqs[src].Blocks[:nb:nb] // entirely a prefix of an earlier prompt
		} else {
			blocks := make([]uint64, nb)
			h := root
			if reuse > 0 {
				copy(blocks, reqs[src].Blocks[:reuse])
				h = blocks[reuse-1]
			}
			for b := reuse; b < nb; b++ {
				h = combine(h, wholeBlockHash(segment(sl, tagMooncake, ids[b/per], 0), (b%per)*BlockSize))
				blocks[b] = h
			}
			r.Blocks = blocks
		}
		for _, id := range ids[known:] {
			owner[id] = i
		}
		// The answer is the request's own; it completes the prompt's last partial block.
		s := &stream{h: root, tokens: row.in}
		if nb > 0 {
			s.h = r.Blocks[nb-1]
		}
		if rest := row.in - nb*BlockSize; rest > 0 {
			id := ids[nb/per]
			s.pend = []run{{segment(sl, tagMooncake, id, 0), (nb % per) * BlockSize, rest}}
			s.ptok = rest
		}
		s.blocks = make([]uint64, 0, (row.out+s.ptok)/BlockSize)
		s.appendSegment(segment(sl, tagAnswer, uint64(row.fileLine), 0), row.out)
		r.OutputBlocks = s.view(0, len(s.blocks))
	}
	return finish("mooncake", reqs, rate, nil, p), nil
}
