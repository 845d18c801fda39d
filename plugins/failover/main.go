// Command failover serves the failover-filter plugin to a Foresight host.
package main

import (
	"github.com/foresight-router/foresight/plugins/failover/internal/failover"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// version is stamped at build time from the VERSION file beside this one.
var version = "0.0.0-dev"

func main() { sdk.ServeInstances(sdk.StageFilter, failover.New, version) }
