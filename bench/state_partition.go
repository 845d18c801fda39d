package bench

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/stateplane"
)

// PartitionResult is what RunStatePartition measured: how the replicas' views followed a NATS
// server that stopped for a while under load.
type PartitionResult struct {
	Options  StateOptions `json:"options"`
	Requests int          `json:"requests"`
	// ForgetMs is the time from the server's stop until every replica counted only its own
	// requests (its peers forgotten); ConvergeMs from the server's return until every replica's
	// count on every endpoint was the fleet's, within the events in transit.
	ForgetMs   float64 `json:"forget_ms"`
	ConvergeMs float64 `json:"converge_ms"`
	// OffDuring is the most requests a replica's count was off the fleet's during the
	// partition, over its endpoints: what it did not see of its peers.
	OffDuring int `json:"off_during"`
	// Partitions counts the disconnections the planes noticed (one each is expected).
	Partitions uint64 `json:"partitions"`
}

// convergeTolerance is how far a replica's count may be from the fleet's, over all endpoints,
// and still be converged: the events in transit at the poll (a few milliseconds of them).
func convergeTolerance(o StateOptions) int { return max(2, int(o.Rate*0.01)) }

// RunStatePartition runs o's load over a state plane on a NATS server embedded in this process,
// stops the server 2 s in for o.Partition and starts it again on the same address, and measures
// how soon the replicas forgot their peers and how soon their views converged once it was back.
func RunStatePartition(o StateOptions) (*PartitionResult, error) {
	if o.Replicas < 2 || o.Rate <= 0 || o.Endpoints < 1 || o.Partition <= 0 {
		return nil, fmt.Errorf("bench state --partition: --replicas ≥ 2, --rate > 0, --endpoints ≥ 1 are needed")
	}
	o.Duration = max(o.Duration, o.Partition+6*time.Second)
	dir, err := os.MkdirTemp("", "foresight-bench-state-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := stateplane.Embed(stateplane.EmbedConfig{Listen: "127.0.0.1:0", StoreDir: dir})
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(srv.URL())
	accts, planes, err := stateAccounts(o, true, srv.URL(), nil)
	defer closePlanes(planes)
	if err != nil {
		srv.Shutdown()
		return nil, err
	}
	truth := make([]atomic.Int64, o.Endpoints)
	res := &PartitionResult{Options: o}
	done := make(chan int)
	go func() { done <- stateLoad(o, accts, truth) }()
	// off is the most a replica's counts are off the fleet's, over its endpoints.
	off := func() int {
		worst := 0
		for _, a := range accts {
			sum := 0
			for e := range o.Endpoints {
				d := a.Ledger.Requests("ep-"+strconv.Itoa(e)) - int(truth[e].Load())
				sum += max(d, -d)
			}
			worst = max(worst, sum)
		}
		return worst
	}
	time.Sleep(2 * time.Second)
	srv.Shutdown()
	cut := time.Now()
	for res.ForgetMs == 0 || time.Since(cut) < o.Partition {
		forgotten := true
		for _, p := range planes {
			forgotten = forgotten && p.Stats().PeerFlights == 0
		}
		if forgotten && res.ForgetMs == 0 {
			res.ForgetMs = ms(time.Since(cut))
		}
		res.OffDuring = max(res.OffDuring, off())
		time.Sleep(5 * time.Millisecond)
	}
	if srv, err = stateplane.Embed(stateplane.EmbedConfig{Listen: u.Host, StoreDir: dir}); err != nil {
		return nil, fmt.Errorf("starting the server again: %w", err)
	}
	defer srv.Shutdown()
	back := time.Now()
	for off() > convergeTolerance(o) {
		if time.Since(back) > 30*time.Second {
			return nil, fmt.Errorf("the replicas had not converged 30 s after the server returned (off by %d)", off())
		}
		time.Sleep(2 * time.Millisecond)
	}
	res.ConvergeMs = ms(time.Since(back))
	res.Requests = <-done
	for _, p := range planes {
		res.Partitions += p.Stats().Partitions
	}
	return res, nil
}

// WriteText writes the result as a few lines.
func (r *PartitionResult) WriteText(w io.Writer) error {
	o := r.Options
	_, err := fmt.Fprintf(w, "state plane partition: %d replicas, %.0f requests/s (%d requests), NATS stopped 2 s in for %s\n"+
		"peers forgotten %.0f ms after the stop (off by at most %d requests during it); converged %.0f ms after the server returned (within %d requests); %d disconnections noticed\n",
		o.Replicas, o.Rate, r.Requests, o.Partition, r.ForgetMs, r.OffDuring, r.ConvergeMs, convergeTolerance(o), r.Partitions)
	return err
}
