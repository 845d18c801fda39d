// Command picker serves the weighted-random-picker plugin to a Foresight host.
package main

import (
	_ "embed"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/pickpolicy"
)

// version is the VERSION file beside this one: the plugin reports it in GetInfo, where a
// pipeline's version constraint checks it.
//
//go:embed VERSION
var version string

func main() { sdk.ServeInstances(sdk.StagePicker, pickpolicy.New, strings.TrimSpace(version)) }
