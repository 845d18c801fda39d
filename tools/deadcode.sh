#!/usr/bin/env bash
# Fails when deadcode finds an unreachable function that tools/deadcode-allow.txt does not list.
# Usage: tools/deadcode.sh PATH-TO-DEADCODE
set -euo pipefail
cd "$(dirname "$0")/.."
found=$("$1" ./... | sed -E 's/:[0-9]+:[0-9]+: unreachable func: / /' | sort)
allowed=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' tools/deadcode-allow.txt | awk '{print $1, $2}' | sort)
extra=$(comm -23 <(echo "$found") <(echo "$allowed") | sed '/^$/d')
if [ -n "$extra" ]; then
  echo "unreachable code: remove it, or list it with the reason in tools/deadcode-allow.txt:"
  echo "$extra"
  exit 1
fi
