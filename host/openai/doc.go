// Package openai is the transport-agnostic part of the router's OpenAI-compatible proxy: it parses
// a client's /v1/completions or /v1/chat/completions request, derives what the scheduler needs
// (model, input-token estimate, prefix block hashes, max tokens, stream flags), produces the body
// sent upstream, relays a streamed (SSE) or whole response while measuring it (first content
// chunk, usage block, answer text), and formats errors in OpenAI's shape.
//
// Nothing here opens a connection: the server hands in bodies, readers and writers, and a clock.
package openai
