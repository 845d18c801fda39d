package pipeline

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errDown is the error of a call to a plugin whose process is not running.
var errDown = errors.New("plugin is not running (crashed and restarting, or stopped)")

// slot is one place in the pipeline served by a plugin: it knows the plugin, the deadline of a
// call (adapted to its round trips, deadline.go), and counts the calls and the fallbacks it
// applied.
type slot struct {
	plugin   *pluginhost.Plugin
	name     string
	typ      string
	stage    sdk.Stage
	weight   float64 // scorers only
	deadline *stageDeadline
	log      zerolog.Logger // sampled: a crashed plugin must not flood the log
	// inProcess marks a built-in or Spec.Local stage, called directly rather than through the coalescer.
	inProcess bool

	calls       atomic.Int64
	fallbacks   atomic.Int64
	rangeWarned atomic.Bool
	afterWarned atomic.Bool
}

func newSlot(p *pluginhost.Plugin, stage sdk.Stage, weight float64, deadline *stageDeadline, log zerolog.Logger) *slot {
	spec := p.Spec()
	return &slot{
		plugin: p, name: spec.Name, typ: spec.Type, stage: stage, weight: weight, deadline: deadline,
		inProcess: p.Status().Builtin,
		log: log.With().Str("plugin", spec.Name).Str("stage", stage.String()).Logger().
			Sample(&zerolog.BurstSampler{Burst: 5, Period: time.Second}),
	}
}

// client returns the plugin's current stage client as T, or errDown.
func client[T any](s *slot) (T, error) {
	c, ok := s.plugin.Client().(T)
	if !ok {
		var zero T
		return zero, errDown
	}
	return c, nil
}

// failed records a stage failure for one cycle and returns the reason that goes in the trace.
func (s *slot) failed(err error) string {
	s.fallbacks.Add(1)
	if isTransport(err) {
		s.plugin.CallFailed()
	}
	reason := fallbackReason(err)
	s.log.Warn().Err(err).Str("fallback", reason).Msg("stage failed; applying its fallback")
	return reason
}

// The fixed set of fallback labels, foresight_stage_fallbacks_total's reason: a failure's kind,
// never its text, which holds socket paths and plugin messages without bound. The text goes in
// the trace and the log.
const (
	FallbackUnavailable   = "unavailable"    // the process is down: crashed and restarting, or stopped
	FallbackTimeout       = "timeout"        // the call missed its deadline
	FallbackStageError    = "stage_error"    // the stage answered with an error of its own
	FallbackTransport     = "transport"      // the call failed on its way: connection, protocol
	FallbackInvalidAnswer = "invalid_answer" // the answer does not fit the cycle (counts, an empty order)
)

// fallbackPrefix is how the trace reasons of each label begin: fallbackReason writes them and
// FallbackLabel reads them back (no prefix begins another).
var fallbackPrefix = map[string]string{
	FallbackUnavailable:   "plugin down",
	FallbackTimeout:       "deadline exceeded",
	FallbackStageError:    "stage error: ",
	FallbackTransport:     "transport: ",
	FallbackInvalidAnswer: "invalid answer: ",
}

// fallbackReason describes a failure for the trace and the log: its label's prefix, then what
// the error said.
func fallbackReason(err error) string {
	var se *sdk.StatusError
	var miss *missError
	switch {
	case errors.Is(err, errDown):
		return fallbackPrefix[FallbackUnavailable]
	case errors.As(err, &miss):
		return fallbackPrefix[FallbackTimeout] + " (" + miss.Error() + ")"
	case isDeadline(err):
		return fallbackPrefix[FallbackTimeout]
	case errors.As(err, &se):
		return fallbackPrefix[FallbackStageError] + se.Message
	case isTransport(err):
		return fallbackPrefix[FallbackTransport] + status.Convert(err).Message()
	default:
		return fallbackPrefix[FallbackInvalidAnswer] + err.Error()
	}
}

// FallbackLabel returns the fixed label (FallbackTimeout, …) of a StageTrace.Fallback reason, for
// metrics; "" for "" (no fallback). Any reason the pipeline writes has one of the five labels.
func FallbackLabel(reason string) string {
	if reason == "" {
		return ""
	}
	for label, prefix := range fallbackPrefix {
		if strings.HasPrefix(reason, prefix) {
			return label
		}
	}
	return FallbackInvalidAnswer // not written by fallbackReason: what the host could not use
}

func isDeadline(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

func isTransport(err error) bool {
	_, ok := status.FromError(err)
	return ok && status.Code(err) != codes.OK && status.Code(err) != codes.DeadlineExceeded
}

// Stats is what a slot has seen since the pipeline was built.
type Stats struct {
	Plugin    string    `json:"plugin"`
	Stage     sdk.Stage `json:"stage"`
	Calls     int64     `json:"calls"`
	Fallbacks int64     `json:"fallbacks"`
	// Batches counts the round trips that carried the calls (Calls / Batches is the mean batch).
	Batches int64 `json:"batches"`
	// Profile is the scheduling profile of the pipeline (Pipeline.Profile).
	Profile string `json:"profile"`
	// Deadline is the slot's current deadline of a call, before a request's TTFT objective
	// bounds it: adapted to its round trips, or its plugin's fixed timeout.
	Deadline time.Duration `json:"deadline_ns"`
	// RoundTrip is the median of its recent successful round trips; 0 until it has measured a few.
	RoundTrip time.Duration `json:"round_trip_ns"`
}

func (s *slot) stats(batches int64) Stats {
	return Stats{Plugin: s.name, Stage: s.stage, Calls: s.calls.Load(), Fallbacks: s.fallbacks.Load(), Batches: batches,
		Deadline: s.deadline.now(), RoundTrip: s.deadline.typical()}
}

// finiteAfter returns a copy of a scorer's after-scores, or nil — the scorer said nothing, so the
// round's picks that collide are decided again — when one is NaN or infinite, warning once per
// slot. After-scores are on the scores' scale but may leave [0, 1] (sdk.RoundScorer): they are not
// clamped.
func (s *slot) finiteAfter(after []float64) []float64 {
	for _, v := range after {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if s.afterWarned.CompareAndSwap(false, true) {
				s.log.Warn().Msg("after-scores that are not finite ignored (warned once per plugin)")
			}
			return nil
		}
	}
	return slices.Clone(after)
}

// clampScores clamps scores into [0, 1] in place (NaN → 0), warning once per slot when it had to.
func (s *slot) clampScores(scores []float64) {
	out := false
	for i, v := range scores {
		switch {
		case v >= 0 && v <= 1:
		case v > 1:
			scores[i], out = 1, true
		default: // negative or NaN
			scores[i], out = 0, true
		}
	}
	if out && s.rangeWarned.CompareAndSwap(false, true) {
		s.log.Warn().Msg("scores outside [0, 1] clamped (warned once per plugin)")
	}
}
