package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/foresight-router/foresight/bench/chaos"
	"github.com/foresight-router/foresight/internal/promtext"
)

// Accounting is the router's own count of the soak's requests (foresight_requests_total, which
// it increments once per answered request, by HTTP status), against the load's.
type Accounting struct {
	// Sent is the requests the load sent; Counted their count in the router's metrics (the
	// counter's increase over the load, summed over its codes).
	Sent    int `json:"sent"`
	Counted int `json:"counted"`
	// ClientFailed is the requests the load saw answered otherwise than 200 or not at all
	// (lost, wrong, cut with an error event, or shed by flow control with a reason);
	// CountedFailed those the router counted under a code other than 200.
	ClientFailed  int `json:"client_failed"`
	CountedFailed int `json:"counted_failed"`
	// ByCode is Counted by HTTP status code.
	ByCode map[string]int `json:"by_code"`
	// OK is Counted = Sent and CountedFailed = ClientFailed.
	OK bool `json:"ok"`
}

// account compares the increase of foresight_requests_total between the scrapes before and
// after the load with the sent requests and the failures the load saw.
func account(before, after promtext.Families, sent, clientFailed int) Accounting {
	a := Accounting{Sent: sent, ClientFailed: clientFailed, ByCode: map[string]int{}}
	was := before.ByLabel(metricRequests, "code")
	for code, n := range after.ByLabel(metricRequests, "code") {
		d := int(n - was[code])
		if d == 0 {
			continue
		}
		a.ByCode[code] = d
		a.Counted += d
		if code != "200" {
			a.CountedFailed += d
		}
	}
	a.OK = a.Counted == a.Sent && a.CountedFailed == a.ClientFailed
	return a
}

// counted scrapes the router's metrics until they count sent requests more than before did, or
// countedWithin has passed (the router counts a request once its last byte is written, which
// may come after the client has read it), and returns the last scrape.
func counted(ctx context.Context, adm *chaos.Admin, before promtext.Families, sent int) (promtext.Families, error) {
	deadline := time.Now().Add(countedWithin)
	was := total(before)
	for {
		after, err := scrape(ctx, adm)
		if err != nil {
			return nil, err
		}
		if total(after)-was >= float64(sent) || time.Now().After(deadline) {
			return after, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the router to count the requests: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// total is foresight_requests_total summed over its codes.
func total(f promtext.Families) float64 {
	n, _ := f.Sum(metricRequests)
	return n
}
