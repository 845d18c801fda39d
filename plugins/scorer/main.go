// Command scorer serves the latency-scorer plugin to a Foresight host.
package main

import (
	_ "embed"
	"strings"

	"github.com/foresight-router/foresight/plugins/scorer/internal/scorer"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// version is the VERSION file beside this one: the plugin reports it in GetInfo, where a
// pipeline's version constraint checks it.
//
//go:embed VERSION
var version string

func main() { sdk.ServeInstances(sdk.StageScorer, scorer.New, strings.TrimSpace(version)) }
