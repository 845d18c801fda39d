package pluginhost

// Checksum returns the hex SHA-256 of the binary at path, as a plugin's sha256 pins it (cached
// by the file's identity like the pool's fingerprints). A client of PUT /admin/stages uses it to
// pin the binary it swaps in.
func Checksum(path string) (string, error) { return fileSHA256(path) }
