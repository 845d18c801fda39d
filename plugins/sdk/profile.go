package sdk

import (
	"os"
	"runtime/pprof"
)

// ProfileEnv names the environment variable that makes a plugin write a CPU profile: when set to
// a path prefix, the plugin profiles itself into "<prefix>.<type>.<pid>" until the host stops it.
// The host passes its environment to plugins, so setting it on the host profiles every plugin.
const ProfileEnv = "FORESIGHT_PLUGIN_CPUPROFILE"

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
