package sdk

import (
	"os"
	"runtime/pprof"
)

// profileEnv names the environment variable that makes a plugin write a CPU profile (see
// ServeProtocol).
const profileEnv = "FORESIGHT_PLUGIN_CPUPROFILE"

// profileCPU starts a CPU profile into file and returns its stop function; failures are logged.
func profileCPU(file string) func() {
	f, err := os.Create(file)
	if err != nil {
		Log().Error().Err(err).Msg("creating the CPU profile")
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		Log().Error().Err(err).Msg("starting the CPU profile")
		_ = f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }
}
