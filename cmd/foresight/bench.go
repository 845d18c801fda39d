package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

func newBench() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmarks (pipeline, routing, predictor, proxy, faults, soak, live)"}
	cmd.AddCommand(newBenchPipeline(), newBenchRouting(), newBenchPredictor(), newBenchProxy())
	cmd.AddCommand(newBenchFaults(), newBenchSoak(), newBenchLive(), newBenchState())
	return cmd
}

// runBench runs bench under a CPU profile of this process (when profile names a file) and prints
// its result: one JSON object when asJSON, else through text.
func runBench[T any](out io.Writer, profile string, asJSON bool, bench func() (T, error), text func(T, io.Writer) error) error {
	stop, err := startCPUProfile(profile)
	if err != nil {
		return err
	}
	defer stop()
	res, err := bench()
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(out, res)
	}
	return text(res, out)
}

// startCPUProfile starts profiling this process into file and returns the function that stops it;
// with no file it profiles nothing.
func startCPUProfile(file string) (func(), error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// printJSON writes v as one line of JSON.
// reporter is a bench result that can write its HTML report.
type reporter interface{ WriteReport(file string) error }

// emitResult writes res's HTML report if report names a file, its table on stderr, and, with
// asJSON, res as one JSON object on stdout: the output of every bench that runs strategies.
func emitResult(cmd *cobra.Command, res reporter, table func(io.Writer) error, report string, asJSON bool) error {
	if report != "" {
		if err := res.WriteReport(report); err != nil {
			return err
		}
	}
	if err := table(cmd.ErrOrStderr()); err != nil {
		return err
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	return nil
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
