#!/usr/bin/env bash
# Benchmarks: the Go benchmarks of the plugin, printed as one table of figures with their ratios
# to the reference measured in the same run (see the README, "Performance").
. "$(dirname "$0")/lib.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench . -benchtime "${BENCHTIME:-2s}" ./pkg/frames/ ./pkg/plugin/ 2>/dev/null | grep '^Benchmark' | tee "$out" >&2
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3)"
echo
echo "| benchmark | figure | value |"
echo "| --- | --- | --- |"
# Each line: name, iterations, then value/unit pairs.
awk '{ name=$1; sub(/-[0-9]+$/, "", name); for (i = 3; i < NF; i += 2) printf "| %s | %s | %s |\n", name, $(i+1), $i }' "$out"
