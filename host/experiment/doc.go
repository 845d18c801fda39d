// Package experiment keeps the statistics of an A/B experiment on one pipeline stage and builds
// the report that GET /admin/experiments serves as JSON.
//
// Requests are assigned to arms by [Assign], a stable hash of their session (or request id)
// compared against the arms' cumulative weights, so a session stays on one arm. A [Recorder]
// collects each finished request's [Outcome] per arm, and optionally the agreement between the
// enacted decision and a shadow arm's decision, which is computed on the same scheduling cycle
// but only recorded.
//
// # Statistics
//
// Each arm keeps its most recent outcomes in a bounded window (a ring buffer) and lifetime
// counters of requests and failures. All figures except the lifetime counters come from the
// window.
//
//   - Quantiles use linear interpolation between order statistics (Hyndman and Fan type 7, the
//     default of R and NumPy; internal/quantile, the repository's one estimator) over the non-failed outcomes of the window in which the value was
//     observed. A quantile with no observations is reported as 0.
//   - SLO attainment is met / with_slo, where with_slo counts the window's outcomes with at least
//     one objective. An outcome meets its SLO when it did not fail and every objective it has was
//     met by its observed value; an objective whose value was not observed counts as met.
//   - The TTFT median difference (arm minus baseline) has a 95% interval built from each arm's
//     distribution-free confidence interval for its median: the order statistics of ranks
//     (n+1)/2 ± 1.96·√n/2, rounded outward and clamped to [1, n]. Each interval's width gives a
//     standard error se = (hi − lo) / (2·1.96); the difference has se = √(se₁² + se₂²) and the
//     interval is the difference of the sample medians ± 1.96·se. It needs at least
//     [MinTTFTObservations] observations per arm.
//   - The SLO attainment difference (arm minus baseline) has Newcombe's hybrid score interval
//     (method 10 of Newcombe, Statistics in Medicine 1998), built from the Wilson score interval
//     of each proportion without continuity correction. It needs at least [MinSLOOutcomes]
//     outcomes with an objective per arm.
//
// A difference is significant when its interval excludes 0. Intervals are recomputed on every
// report from the current windows; no correction is made for looking at them repeatedly.
package experiment
