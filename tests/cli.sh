#!/bin/sh
# cli.sh - the tessel command as a user runs it: each subcommand once on a
# small shape, checking its exit code and a line of what it prints, and a
# wrong command line exiting 2 with a usage line. The library's own
# behaviour is tested in C (tessel_tests); this catches a subcommand that
# crashes, misparses or stops printing what its README promises. The
# database is a fresh file in a temporary directory, never the user's.
#
# Usage: sh tests/cli.sh path/to/tessel
set -u

TESSEL=${1:?usage: sh tests/cli.sh path/to/tessel}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tessel-cli.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
export TESSEL_DB="$WORK/tessel.db"
passed=0
failed=0

# expect CODE PATTERN command...: the exit code is CODE and the output
# (stdout and stderr together) has a line matching PATTERN.
expect() {
    code=$1
    pattern=$2
    shift 2
    "$@" > "$WORK/out" 2>&1
    got=$?
    if [ "$got" -eq "$code" ] && grep -q -- "$pattern" "$WORK/out"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $* (exit $got, want $code; looked for '$pattern')"
        sed 's/^/    /' "$WORK/out" | tail -5
    fi
}

expect 0 '^fma peak' "$TESSEL" probe
expect 0 '"fingerprint"' "$TESSEL" probe --json
expect 0 '^17,33,65,NN,' "$TESSEL" gemm 17 33 65 --check --csv --repeat 3
expect 0 '^5,7,9,TT,' "$TESSEL" gemm 5 7 9 --trans TT --alpha 0.5 --beta 2 --check --csv --repeat 3
# A batch: the CSV line ends with it, --check covers every matrix.
expect 0 '^17,17,64,NT,[12],.*,12$' "$TESSEL" gemm 17 17 64 --trans NT --batch 12 --threads 2 \
    --check --csv --repeat 3
expect 0 '^check .*: ok' "$TESSEL" gemm 6 5 7 --trans TN --batch 5 --beta 0.5 --check --repeat 3
# The pre-packed call and its epilogue, checked against ref_epilogue.
expect 0 '^pack .*once' "$TESSEL" gemm 17 96 40 --packed --check --repeat 3
expect 0 '^check .*: ok' "$TESSEL" gemm 9 70 33 --bias --act gelu-tanh --check --repeat 3
expect 0 '^check .*: ok' "$TESSEL" gemm 5 40 20 --trans TN --act gelu-erf --beta 0.5 --check \
    --repeat 3
expect 0 '^tessellation' "$TESSEL" explain gemm 100 70 33 --threads 2 --no-measure
expect 0 '^ *whole matrices per thread: 2 threads' "$TESSEL" explain gemm 43 43 64 --trans NT \
    --batch 24 --threads 2 --no-measure
expect 0 '^time .*in turn.*measured' "$TESSEL" explain gemm 5 5 64 --trans NT --batch 12
expect 0 '^time .*measured' "$TESSEL" explain gemm 16 96 40 --packed --threads 2
expect 0 'B pre-packed' "$TESSEL" explain gemm 3 64 20 --trans NT --packed --no-measure
expect 0 '^direct' "$TESSEL" explain gemm 2 2 2 --no-measure
expect 0 '^svg' "$TESSEL" explain gemm 40 50 60 --no-measure --svg "$WORK/t.svg"
# Listing does not create the database: a missing one is an error.
expect 1 'does not exist' "$TESSEL" tune --list
printf 'cli 17 64 33 N N\n' > "$WORK/shapes.txt"
expect 0 'predicted .* measured .* us: fma' "$TESSEL" tune --shapes "$WORK/shapes.txt" --top 2 \
    --no-store --verbose --threads 1
expect 2 'usage:' "$TESSEL" explain gemm 4 4
expect 2 'usage:' "$TESSEL" gemm 4 4 4 --trans XX
expect 2 'usage:' "$TESSEL" explain conv 4 4 4
expect 2 'usage:' "$TESSEL" gemm 4 4 4 --batch 0
expect 2 'usage:' "$TESSEL" gemm 4 4 4 --act tanh
expect 2 'usage:' "$TESSEL" gemm 4 4 4 --bias --batch 3
expect 2 'usage:' "$TESSEL" explain gemm 4 4 4 --batch 2 --packed

echo "suite cli          $passed passed, $failed failed"
[ "$failed" -eq 0 ]
