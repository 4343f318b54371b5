#!/usr/bin/env bash
# `make valgrind`: the example conversion (float16 example model -> w4a16,
# sharded, CPU verification, manifest) and `check` under
# valgrind --error-exitcode=1 --leak-check=full. libgomp keeps its thread
# pool until exit ("possibly lost" / "still reachable" blocks allocated by
# pthread_create inside GOMP): tests/valgrind.supp suppresses exactly those;
# OMP_NUM_THREADS=2 keeps the run short.
set -eu
build=${1:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/hc-valgrind-XXXXXX")
trap 'rm -rf "$work"' EXIT
vg="valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --suppressions=tests/valgrind.supp -q"
"$build/examples/gen_example_model" "$work/in" --format float16 --experts 0 >/dev/null
export OMP_NUM_THREADS=2
echo "valgrind: convert"
$vg "$build/humming-convert" "$work/in" "$work/out" --format w4a16 --max-shard-size 256K --verify cpu -q
echo "valgrind: check"
$vg "$build/humming-convert" check "$work/out" >/dev/null
echo "valgrind: clean (no errors, no definite/indirect/possible leaks)"
