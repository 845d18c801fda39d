package sdk

import (
	"hash/fnv"
	"math/rand/v2"
)

// Rand returns a random source derived from the cycle's seed and salt (use the plugin type), so a
// stage's random choices are reproducible from the cycle alone and independent of other stages'.
func Rand(c *Cycle, salt string) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(salt))
	return rand.New(rand.NewPCG(c.Seed, h.Sum64()))
}
