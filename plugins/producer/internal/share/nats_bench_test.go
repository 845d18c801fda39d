package share

import (
	"fmt"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/producer/internal/share/natstest"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// exchanger is what the benchmarks run: either exchange.
type exchanger interface {
	Exchange(now time.Time, out Outgoing, merge func(string, []sdk.Sample)) (Report, error)
}

// benchExchange times a round of exchanges between 4 replicas, each publishing 500 rows and
// merging the 1,500 the other three published since its last: one op is the round's 4
// exchanges, 2,000 rows published and 6,000 merged.
func benchExchange(b *testing.B, exs []exchanger) {
	const per = 500
	out := benchRows(per)
	merged := 0
	merge := func(_ string, rows []sdk.Sample) { merged += len(rows) }
	round := func() {
		for _, e := range exs {
			rep, err := e.Exchange(t0, Outgoing{Rows: out}, merge)
			if err != nil || rep.Published != per {
				b.Fatalf("%+v, %v", rep, err)
			}
		}
	}
	round() // set up, and each replica past the others' first rows
	merged = 0
	for b.Loop() {
		round()
	}
	b.ReportMetric(float64(merged)/float64(b.N), "merged/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(exs)), "ns/exchange")
}

// BenchmarkNATSExchange: through an embedded NATS server on the loopback interface.
func BenchmarkNATSExchange(b *testing.B) {
	srv := natstest.Start(b)
	exs := make([]exchanger, 4)
	for i := range exs {
		exs[i] = newNATS(b, srv.URL, fmt.Sprint("router-7d9f8c6b5-", i))
	}
	benchExchange(b, exs)
}

// BenchmarkFileExchange: through a local directory, for comparison.
func BenchmarkFileExchange(b *testing.B) {
	dir := b.TempDir()
	exs := make([]exchanger, 4)
	for i := range exs {
		exs[i] = newEx(dir, fmt.Sprint("router-7d9f8c6b5-", i))
	}
	benchExchange(b, exs)
}

// BenchmarkNATSPublishModel times putting a model set in the bucket and reading it back as a
// replica that starts does (the tests' small stump set: the cost of the round trips).
func BenchmarkNATSPublishModel(b *testing.B) {
	srv := natstest.Start(b)
	e := newNATS(b, srv.URL, "a")
	s := set(b, 100, 0.1, "mean")
	all := func(*model.Meta) bool { return true }
	for b.Loop() {
		if rep, err := e.Exchange(t0, Outgoing{Model: s}, sink{}.merge); err != nil || !rep.ModelPublished {
			b.Fatal(rep, err)
		}
		if got, _ := e.BestModel(names, names, all); got == nil {
			b.Fatal("no model")
		}
	}
}
