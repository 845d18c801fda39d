// Package bench holds the benchmarks `foresight bench` runs, as library calls the command only
// wires its flags to: each has an Options struct (its flags, under the same names), a Run
// function returning a Result whose JSON is what --json prints, and a WriteText method for the
// text the command prints otherwise.
//
//   - pipeline ([RunPipeline]): decision latency and throughput of a configured pipeline over
//     real plugin processes on synthetic cycles, decided in rounds as the router's decider does
//     (or in cohorts), against the transport floor of bare round trips to [NoopFilter].
//   - predictor ([RunPredictor]): the producer's training time, prediction latency and accuracy
//     on samples of the simulated fleet (sim/cluster), in process.
//   - proxy ([RunProxy]): the TTFT the router adds over going straight to emulated servers
//     (sim/testbed), and the highest rate it completes.
//   - routing ([RunRouting]): routing strategies compared on the same simulated arrivals; with
//     --load, the load ladder ([RunLadder]): the fleet's saturation rate measured
//     ([MeasureSaturation]), then the strategies compared at fractions of it.
//   - live ([RunLive]): router configs, each run as its own `foresight serve` process, and
//     client-side references, replaying the same arrivals in real time against fresh emulated
//     servers (sim/emulator).
//
// The fault bench, which swaps, kills and badly reloads plugins under load, is the sub-package
// bench/faults, and the soak, a long run of load and faults watching the router's memory and
// goroutines, bench/soak: they have a vocabulary of their own, which they share through
// bench/chaos (the fault schedule, the faulter, an admin API client) and bench/openloop (Poisson
// arrivals sent open loop). The soak runs its router as bench live and proxy do ([StartRouter]).
//
// Conventions: every percentile goes through internal/quantile (linear interpolation, numpy's
// default). Errors about options name the command's flags (--endpoints, --params, …), which
// the Options fields mirror. A bench that starts plugin processes or servers stops them before
// it returns; its AtExit option, when set, also registers each stop function with the caller's
// exit handling, so that they run on SIGINT or SIGTERM too (cmd/foresight's atExit).
//
// bench sits above sim/ and host/ (it imports both, and plugins/producer/predictor, which the
// producer exports for it); nothing but cmd/foresight and bench/soak imports it.
package bench
