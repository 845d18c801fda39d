package bench

import (
	"cmp"
	"fmt"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/cluster"
)

// disaggregated is o's disaggregation: o.Prefill prefill servers, then o.Decode decode servers,
// o.Servers in all; nil when o asks for none.
func disaggregated(o RoutingOptions) (*cluster.Disaggregation, error) {
	if o.Prefill == 0 && o.Decode == 0 {
		if o.Split != "" {
			return nil, fmt.Errorf("a split mode (%q) needs a disaggregated fleet: give --prefill and --decode", o.Split)
		}
		return nil, nil
	}
	if o.Prefill < 1 || o.Decode < 1 || o.Prefill+o.Decode != o.Servers {
		return nil, fmt.Errorf("a disaggregated fleet needs at least one prefill and one decode server, %d in all (--servers), got %d and %d", o.Servers, o.Prefill, o.Decode)
	}
	d := &cluster.Disaggregation{Split: cmp.Or(o.Split, config.SplitAdaptive)}
	for i := range o.Servers {
		d.Roles = append(d.Roles, map[bool]endpoints.Role{true: endpoints.RolePrefill, false: endpoints.RoleDecode}[i < o.Prefill])
	}
	return d, nil
}

// chooseProfile is how a config of profiles chooses a simulated request's profile: its handler's
// rules (the request carries no headers: by its SLO alone), and a disaggregated request's prefill
// decision on the config's prefill profile, as the live router takes it.
func chooseProfile(cfg *config.Config) func(*sdk.Request) string {
	return func(r *sdk.Request) string {
		profile, _, _ := cfg.ChooseProfile(nil, "", r.SLO.Any()) // without headers it cannot fail
		if d := cfg.Disaggregation; d != nil && r.Disaggregation.Hop == sdk.HopPrefill {
			return d.PrefillProfileFor(profile)
		}
		return profile
	}
}
