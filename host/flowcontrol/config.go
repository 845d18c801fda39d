package flowcontrol

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The ordering policies within a flow, by the names a configuration gives them.
const (
	// PolicyFCFS serves a flow's items in arrival order (push order among equal arrivals).
	PolicyFCFS = "fcfs"
	// PolicyEDF serves the earliest deadline first; items without a deadline come after every item
	// with one, in arrival order.
	PolicyEDF = "edf"
	// PolicySLOFeasible is EDF over the items that can still meet their deadline given the
	// estimated wait, then the hopeless ones (earliest deadline first), then those without a
	// deadline (arrival order). It never sheds: a late answer still beats a 429 for a request the
	// admitter chose not to shed, and the band's TTL bounds how long a hopeless item waits.
	PolicySLOFeasible = "slo-feasible"
)

// Policies lists the accepted ordering policy names.
var Policies = []string{PolicyFCFS, PolicyEDF, PolicySLOFeasible}

// Limits bound one band. The package has no defaults: the configuration that builds a Queue
// chooses them and documents where they come from.
type Limits struct {
	// MaxRequests is how many items the band holds at most; a push beyond is ReasonBandFull.
	MaxRequests int
	// MaxBytes is the sum of Item.Bytes the band holds at most; a push beyond is ReasonBandBytes.
	MaxBytes int64
	// TTL is how long an item may wait, from its arrival; Expire sheds it after with ReasonTTL.
	TTL time.Duration
}

// Config builds a Queue.
type Config struct {
	// Policy is the ordering within each flow: one of Policies.
	Policy string
	// Default bounds every band not named in Bands; bands are created on their first push.
	Default Limits
	// Bands overrides Default for the bands it names.
	Bands map[int]Limits
	// Estimate is, for PolicySLOFeasible (which requires it), how long a request dispatched at now
	// would take to its first token: an item is feasible while now + Estimate(now) is not after its
	// deadline. Peek calls it at most once. Other policies ignore it.
	Estimate func(now time.Time) time.Duration
}

// Validate reports every problem of the configuration, each naming its field.
func (c Config) Validate() error {
	var errs []error
	if !slices.Contains(Policies, c.Policy) {
		errs = append(errs, fmt.Errorf("policy must be one of %q, got %q", Policies, c.Policy))
	}
	if c.Policy == PolicySLOFeasible && c.Estimate == nil {
		errs = append(errs, fmt.Errorf("estimate is required by policy %q", PolicySLOFeasible))
	}
	errs = append(errs, c.Default.validate("default"))
	for _, b := range slices.Sorted(maps.Keys(c.Bands)) {
		errs = append(errs, c.Bands[b].validate(fmt.Sprintf("bands[%d]", b)))
	}
	return errors.Join(errs...)
}

func (l Limits) validate(field string) error {
	var errs []error
	if l.MaxRequests <= 0 {
		errs = append(errs, fmt.Errorf("%s.maxRequests must be > 0, got %d", field, l.MaxRequests))
	}
	if l.MaxBytes <= 0 {
		errs = append(errs, fmt.Errorf("%s.maxBytes must be > 0, got %d", field, l.MaxBytes))
	}
	if l.TTL <= 0 {
		errs = append(errs, fmt.Errorf("%s.ttl must be > 0, got %s", field, l.TTL))
	}
	return errors.Join(errs...)
}
