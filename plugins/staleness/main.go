// Command staleness serves the staleness-filter plugin to a Foresight host.
package main

import (
	_ "embed"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/staleness/internal/staleness"
)

// version is the VERSION file beside this one: the plugin reports it in GetInfo, where a
// pipeline's version constraint checks it.
//
//go:embed VERSION
var version string

func main() { sdk.ServeInstances(sdk.StageFilter, staleness.New, strings.TrimSpace(version)) }
