// Command producer serves the predicted-latency-producer plugin to a Foresight host.
package main

import (
	"github.com/foresight-router/foresight/plugins/producer/predictor"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// version is stamped at build time from the VERSION file beside this one.
var version = "0.0.0-dev"

func main() { sdk.ServeProducer(predictor.New(), version) }
