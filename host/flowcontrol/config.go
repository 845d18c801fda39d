package flowcontrol

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

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
	// Default bounds every band not named in Bands; bands are created on their first push.
	Default Limits
	// Bands overrides Default for the bands it names.
	Bands map[int]Limits
	// Estimate, optional, is how long a request dispatched at now would wait for its first token:
	// an item is hopeless once now + Estimate(now) is after its HopelessAfter. Peek calls it at
	// most once. Nil estimates no wait.
	Estimate func(now time.Time) time.Duration
}

// Validate reports every problem of the configuration, each naming its field.
func (c Config) Validate() error {
	var errs []error
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
