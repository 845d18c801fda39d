// Command schedulability serves the schedulability-filter plugin to a Foresight host.
package main

import (
	"github.com/foresight-router/foresight/plugins/schedulability/internal/schedulability"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// version is stamped at build time from the VERSION file beside this one.
var version = "0.0.0-dev"

func main() { sdk.ServeInstances(sdk.StageFilter, schedulability.New, version) }
