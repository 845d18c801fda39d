// Package kvevents reads the KV-cache events an engine publishes, as vLLM does with
// --kv-events-config (vllm/distributed/kv_events.py): a ZeroMQ PUB socket sending, per engine
// step that changed its prefix cache, a three-frame message — topic, an 8-byte big-endian
// sequence number, and a msgpack KVEventBatch — and optionally a ROUTER socket replaying missed
// sequences. It decodes them (Decode), encodes them for the emulator (AppendBatch), subscribes to
// an endpoint's publisher (Subscriber) and publishes them (Publisher).
package kvevents

// Kind is what an event says happened to the engine's prefix cache.
type Kind uint8

// The event kinds, vLLM's tags.
const (
	// Stored: full blocks were cached (vLLM's BlockStored), continuing the chain of Parent.
	Stored Kind = iota + 1
	// Removed: cached blocks were evicted (BlockRemoved).
	Removed
	// Cleared: the whole cache was dropped (AllBlocksCleared), e.g. by a prefix-cache reset.
	Cleared
)

// String returns vLLM's tag of the kind.
func (k Kind) String() string {
	switch k {
	case Stored:
		return "BlockStored"
	case Removed:
		return "BlockRemoved"
	case Cleared:
		return "AllBlocksCleared"
	}
	return "unknown"
}

// Event is one event of a batch.
type Event struct {
	Kind Kind
	// Hashes are the engine's block hashes (Stored, Removed), first block first. vLLM's
	// ExternalBlockHash is an int or bytes: an int is taken as its 64 bits; bytes are folded
	// into 64 bits (their last 8 bytes, big-endian, as vLLM turns a hash into an int).
	Hashes []uint64
	// Parent is the hash of the block before Hashes[0] when HasParent (Stored); without one the
	// blocks start a prompt.
	Parent    uint64
	HasParent bool
	// Tokens are the token ids of the stored blocks, BlockSize of them per hash (Stored).
	Tokens []uint32
	// BlockSize is the tokens per block (Stored; older vLLM's num_toks_per_block).
	BlockSize int
	// Medium is where the blocks live ("GPU", "CPU", …; empty when the engine does not say).
	Medium string
	// Group is the KV cache group of hybrid models (vLLM's group_idx; 0 when absent).
	Group int
}

// Batch is one published message: the events of one engine step.
type Batch struct {
	// Seq is the message's sequence number (the second frame), consecutive from 0 per publisher.
	Seq uint64
	// TS is the engine's timestamp of the batch, in seconds since the epoch.
	TS float64
	// Events in the order the engine produced them.
	Events []Event
	// DPRank is the data-parallel rank that published it (0 when absent).
	DPRank int
	// Skipped counts events of kinds this package does not know, left out of Events.
	Skipped int
}
