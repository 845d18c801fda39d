// Command slo-threshold serves the slo-threshold-filter plugin to a Foresight host.
package main

import (
	_ "embed"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/slo-threshold/internal/threshold"
)

// version is the VERSION file beside this one: the plugin reports it in GetInfo, where a
// pipeline's version constraint checks it.
//
//go:embed VERSION
var version string

func main() { sdk.ServeInstances(sdk.StageFilter, threshold.New, strings.TrimSpace(version)) }
