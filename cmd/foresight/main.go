// Command foresight is the Foresight router host: it runs scheduling pipelines made of plugin
// processes, checks configurations, replays cycles and benchmarks the pipeline.
//
// Each command is one file that wires its flags to library calls: serve to host/router, check
// and schedule to host/pipeline, emulate to sim/emulator, demo to demo, bench's subcommands to
// bench, bench/faults and bench/soak, and the hidden noop-plugin to bench.NoopFilter. This file holds what
// they share: the root command, the logger, terminal detection, and the cleanups that run when
// the command ends or on SIGINT/SIGTERM (then the exit code is 130, or 0 for SIGTERM), so that plugin processes
// never outlive the host.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// version is stamped at build time from the VERSION file at the repository root.
var version = "0.0.0-dev"

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(sdk.DefaultGCPercent) // see sdk.ServeProtocol for the measurement
	}
	go stopOnSignal()
	err := newRoot().Execute()
	runCleanups()
	if err != nil {
		fmt.Fprintln(os.Stderr, "foresight: "+strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

var (
	cleanupMu sync.Mutex
	cleanups  []func()
	// cleanupRun is held while cleanups run: a second caller (the command returning while a
	// signal is being handled) waits for them instead of exiting with plugin processes still up.
	cleanupRun sync.Mutex
)

// atExit registers f to run when the command ends, normally or on SIGINT/SIGTERM, so plugin
// processes never outlive the host.
func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

func runCleanups() {
	cleanupRun.Lock()
	defer cleanupRun.Unlock()
	cleanupMu.Lock()
	fs := cleanups
	cleanups = nil
	cleanupMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func stopOnSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	s := <-sig
	fmt.Fprintf(os.Stderr, "foresight: %v: stopping\n", s)
	runCleanups()
	os.Exit(signalExitCode(s))
}

// signalExitCode is the exit code of a command stopped by s once its cleanups ran: 0 for SIGTERM,
// the orderly stop a supervisor (Kubernetes, systemd) asks for, which the command completed;
// 130 (128 + SIGINT) for Ctrl-C, as a shell reports an interrupted command.
func signalExitCode(s os.Signal) int {
	if s == syscall.SIGTERM {
		return 0
	}
	return 130
}

func newRoot() *cobra.Command {
	var level string
	root := &cobra.Command{
		Use:           "foresight",
		Short:         "Predicted-latency router for LLM inference fleets",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			l, err := zerolog.ParseLevel(level)
			if err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			zerolog.SetGlobalLevel(l)
			return nil
		},
	}
	root.PersistentFlags().StringVar(&level, "log-level", "warn", "log level: trace, debug, info, warn, error")
	root.AddCommand(newCheck(), newSchedule(), newServe(), newBench(), newDemo(), newEmulate(), newProfile(), newNoopPlugin())
	return root
}

// logger returns the host's structured logger (JSON on stderr).
func logger() zerolog.Logger {
	return zerolog.New(os.Stderr).With().Timestamp().Logger()
}

// isTerminal reports whether w is a terminal: where the demo redraws its view and bench routing
// draws progress bars.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// self returns the path of this binary, which benches run as routers or plugins (for names
// what for in the error).
func self(forWhat string) (string, error) {
	bin, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the foresight binary %s: %w", forWhat, err)
	}
	return bin, nil
}
