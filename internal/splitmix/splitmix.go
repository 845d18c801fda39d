// Package splitmix holds the project's one integer mixer, splitmix64's finaliser: the simulator
// uses it for deterministic hashing and seeding, the router to spread its prefix-block hashes.
package splitmix

// Gamma is splitmix64's increment (the golden ratio in 64 bits); Mix(x + Gamma) is one full
// splitmix64 step from state x.
const Gamma = 0x9e3779b97f4a7c15

// Mix is splitmix64's finaliser: a bijection of uint64 with good avalanche.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
