// Command predicted-saturation-detector serves flow control's predicted-saturation-detector to a
// Foresight host.
package main

import (
	_ "embed"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
)

// version is the VERSION file beside this one: the plugin reports it in GetInfo, where a
// pipeline's version constraint checks it.
//
//go:embed VERSION
var version string

func main() {
	sdk.ServeInstances(sdk.StageDetector, flowpolicy.NewPredictedDetector, strings.TrimSpace(version))
}
