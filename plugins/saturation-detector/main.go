// Command saturation-detector serves flow control's saturation-detector to a Foresight host.
package main

import (
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
)

// version is stamped at build time from the VERSION file beside this one.
var version = "0.0.0-dev"

func main() { sdk.ServeInstances(sdk.StageDetector, flowpolicy.NewStateDetector, version) }
