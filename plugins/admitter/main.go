// Command admitter serves the latency-slo-admitter plugin to a Foresight host.
package main

import (
	"github.com/foresight-router/foresight/plugins/admitter/internal/admitter"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// version is stamped at build time from the VERSION file beside this one.
var version = "0.0.0-dev"

func main() { sdk.ServeInstances(sdk.StageAdmitter, admitter.New, version) }
