package endpoints

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// gauges are the engine state one scrape read.
type gauges struct {
	waiting, running int64
	kvCacheUsage     float64
	// blockSize and numGPUBlocks come from the cache-config info metric; cacheKnown says it
	// was there with usable labels.
	blockSize, numGPUBlocks int
	cacheKnown              bool
}

// parseMetrics reads the gauges of names from a Prometheus text body. Only the lines naming
// one of those metrics are parsed (a vLLM body is mostly histogram buckets the router does not
// need); kept and p are reused between calls. A metric with several label sets (several models
// or data-parallel engines behind one server) counts its waiting and running requests summed
// and its KV-cache usage as the highest; the cache-config blocks are summed over its series
// (each engine has its own cache) and its block size is the first series'.
func parseMetrics(body []byte, names MetricNames, kept *bytes.Buffer, p *expfmt.TextParser) (gauges, error) {
	kept.Reset()
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte{'\n'})
		if names.wants(line) {
			kept.Write(line)
			kept.WriteByte('\n')
		}
	}
	fams, err := p.TextToMetricFamilies(kept)
	if err != nil {
		return gauges{}, fmt.Errorf("parsing metrics: %w", err)
	}
	var g gauges
	waiting, err := required(fams, names.Waiting, sum)
	if err != nil {
		return g, err
	}
	running, err := required(fams, names.Running, sum)
	if err != nil {
		return g, err
	}
	name := names.KVCacheUsage
	if fb := names.KVCacheUsageFallback; fams[name] == nil && fb != "" {
		if fams[fb] == nil {
			return g, fmt.Errorf("metric %q missing (and so is its fallback %q)", name, fb)
		}
		name = fb
	}
	if g.kvCacheUsage, err = required(fams, name, math.Max); err != nil {
		return g, err
	}
	g.waiting, g.running = int64(math.Round(waiting)), int64(math.Round(running))
	if f := fams[names.CacheConfig]; names.CacheConfig != "" && f != nil {
		for _, m := range f.GetMetric() {
			bs, err1 := strconv.Atoi(label(m, "block_size"))
			nb, err2 := strconv.Atoi(label(m, "num_gpu_blocks"))
			if err1 != nil || err2 != nil || bs <= 0 || nb <= 0 {
				continue // e.g. num_gpu_blocks="None" before the engine profiled its memory
			}
			if !g.cacheKnown {
				g.blockSize = bs
			}
			g.numGPUBlocks += nb
			g.cacheKnown = true
		}
	}
	return g, nil
}

func sum(a, b float64) float64 { return a + b }

// required combines the finite values of every series of the metric called name, or says that
// it is missing.
func required(fams map[string]*dto.MetricFamily, name string, combine func(a, b float64) float64) (float64, error) {
	f := fams[name]
	if f == nil {
		return 0, fmt.Errorf("metric %q missing", name)
	}
	v, found := 0.0, false
	for _, m := range f.GetMetric() {
		x, ok := value(m)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		if !found {
			v, found = x, true
		} else {
			v = combine(v, x)
		}
	}
	if !found {
		return 0, fmt.Errorf("metric %q has no finite value", name)
	}
	return v, nil
}

// value reads a gauge, untyped or counter sample.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	}
	return 0, false
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// wants says whether a line of a text body is a sample, HELP or TYPE line of one of the names.
// A line starting with '{' (a quoted UTF-8 name) is always kept, to be safe.
func (n MetricNames) wants(line []byte) bool {
	if len(line) == 0 {
		return false
	}
	switch line[0] {
	case '{':
		return true
	case '#':
		rest := bytes.TrimLeft(line[1:], " \t")
		kw, rest, ok := bytes.Cut(rest, []byte{' '})
		if !ok || (string(kw) != "HELP" && string(kw) != "TYPE") {
			return false
		}
		line = bytes.TrimLeft(rest, " \t")
		if len(line) > 0 && line[0] == '"' {
			return true
		}
	}
	end := bytes.IndexAny(line, "{ \t")
	if end < 0 {
		end = len(line)
	}
	name := line[:end]
	for _, w := range [...]string{n.Waiting, n.Running, n.KVCacheUsage, n.KVCacheUsageFallback, n.CacheConfig} {
		if w != "" && string(name) == w {
			return true
		}
	}
	return false
}
