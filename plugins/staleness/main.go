// Command staleness serves the staleness-filter plugin to a Foresight host.
package main

import (
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/staleness/internal/staleness"
)

// version is stamped at build time from the VERSION file beside this one.
var version = "0.0.0-dev"

func main() { sdk.ServeInstances(sdk.StageFilter, staleness.New, version) }
