#!/usr/bin/env bash
# Installs, from Debian's packages, what the build and the tests need beyond Go: npm (buf, ts-proto
# and the TypeScript kit come from the npm registry), gcc (the race detector needs cgo), protoc and
# gRPC's Python generator (make generate), and Debian's Python with gRPC, protobuf and cryptography
# (the Python plugin kit), and Chromium (test/e2e/dashboard_test.go opens /dashboard in it, headless).
# It installs only what is missing, and does nothing when all is there.
set -euo pipefail
missing=()
command -v npm >/dev/null || missing+=(npm)
command -v gcc >/dev/null || missing+=(gcc)
[ -x /usr/bin/protoc ] || missing+=(protobuf-compiler)
[ -x /usr/bin/grpc_python_plugin ] || missing+=(protobuf-compiler-grpc)
[ -x /usr/bin/chromium ] || missing+=(chromium)
/usr/bin/python3 -c 'import grpc, google.protobuf, cryptography' 2>/dev/null ||
  missing+=(python3 python3-grpcio python3-protobuf python3-cryptography)
((${#missing[@]})) || exit 0
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "installing from Debian: ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
