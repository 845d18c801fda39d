#!/usr/bin/env bash
# Runs every fuzz target of the Go module for FUZZTIME each (default 10m), one after the other with
# one worker (-parallel 1, so it leaves the other core free), and prints each target's outcome.
# Inputs that find new coverage stay in Go's cache; a failing input is written to the package's
# testdata/fuzz/<Target>/, where go test replays it. Usage: tools/fuzz.sh [FUZZTIME]
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-10m}
failed=0
while IFS=: read -r file _ match; do
  pkg=$(dirname "$file")
  target=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' <<<"$match")
  log=$(mktemp)
  start=$(date +%s)
  if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -parallel 1 "$pkg" >"$log" 2>&1; then
    result=clean
  else
    result=FAILED
    failed=1
  fi
  echo "$(date -u +%FT%TZ) $pkg $target: $result after $(( $(date +%s) - start )) s, $(grep -o 'execs: [0-9]*' "$log" | tail -1)"
  [ "$result" = FAILED ] && grep -v '^fuzz: elapsed' "$log" | head -40
  rm -f "$log"
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v node_modules | sort)
exit $failed
