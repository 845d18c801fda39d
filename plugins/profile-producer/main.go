// Command profile-producer serves the profile-producer plugin to a Foresight host.
package main

import (
	"github.com/foresight-router/foresight/plugins/internal/profiled"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// version is stamped at build time from the VERSION file beside this one.
var version = "0.0.0-dev"

func main() { sdk.ServeInstances(sdk.StageProducer, profiled.New, version) }
