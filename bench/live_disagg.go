package bench

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/foresight-router/foresight/sim/emulator"
)

// A live run on a prefill/decode disaggregated fleet (LiveOptions.Prefill, Decode, Split,
// KillPrefill): the routers get each server's role and the split mode on their command line
// (serve --roles, --split), and a prefill server may be stopped mid-run, as an engine that dies.

// validateDisaggregation checks the P/D options, naming the flags.
func (o *LiveOptions) validateDisaggregation() error {
	switch {
	case o.Prefill == 0 && o.Decode == 0:
		if o.Split != "" || o.KillPrefill != 0 {
			return fmt.Errorf("--split and --kill-prefill need a disaggregated fleet: give --prefill and --decode")
		}
		return nil
	case o.Prefill < 1 || o.Decode < 1 || o.Prefill+o.Decode != o.Servers:
		return fmt.Errorf("a disaggregated fleet needs at least one prefill and one decode server, %d in all (--servers), got %d and %d", o.Servers, o.Prefill, o.Decode)
	case o.KillPrefill < 0:
		return fmt.Errorf("--kill-prefill must be a time into the run > 0, got %v", o.KillPrefill)
	case o.KillPrefill > 0 && o.EngineCPU != "":
		return fmt.Errorf("--kill-prefill stops one server of the bench's own: leave --engine-cpu off (its servers share one process)")
	}
	return nil
}

// disaggregationArgs are the router's flags for the fleet's roles and the split mode; none on a
// fleet without disaggregation.
func (o *LiveOptions) disaggregationArgs() []string {
	if o.Prefill == 0 {
		return nil
	}
	roles := make([]string, 0, o.Servers)
	for i := range o.Servers {
		roles = append(roles, map[bool]string{true: "prefill", false: "decode"}[i < o.Prefill])
	}
	args := []string{"--roles", strings.Join(roles, ",")}
	if o.Split != "" {
		args = append(args, "--split", o.Split)
	}
	return args
}

// killPrefill stops the fleet's first prefill server KillPrefill into the run, and records it in
// run; the function it returns cancels a stop not yet done. Without KillPrefill it does nothing.
func (o *LiveOptions) killPrefill(fleet liveFleet, run *LiveRun) (cancel func()) {
	f, ok := fleet.(*emulator.Fleet)
	if o.KillPrefill <= 0 || !ok {
		return func() {}
	}
	var mu sync.Mutex
	t := time.AfterFunc(o.KillPrefill, func() {
		mu.Lock()
		defer mu.Unlock()
		f.Stop(0)
		run.Killed = fmt.Sprintf("%s (prefill) at %v", f.Addrs()[0], o.KillPrefill)
	})
	return func() {
		t.Stop()
		mu.Lock() // a stop under way is done before the run is summarized
		defer mu.Unlock()
	}
}
