#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs a libFuzzer binary on a seed corpus for a bounded time.
#
#   tests/fuzz/run_fuzz.sh FUZZER_BINARY CORPUS_DIR SECONDS
#
# The seed corpus is only read: new inputs go to a scratch directory that is
# removed afterwards, so a run never changes the checked-in seeds. Exits 0
# if the time ran out without a finding, and non-zero on a crash, leak,
# timeout or out-of-memory. A crash input is kept as
# $SPTRACE_FUZZ_ARTIFACTS/crash-<sha1> (default: the current directory).
# Add it to CORPUS_DIR as a regression seed once it is fixed.
set -eu

if [ $# -ne 3 ]; then
	echo "usage: $0 FUZZER_BINARY CORPUS_DIR SECONDS" >&2
	exit 2
fi
fuzzer=$1
corpus=$2
seconds=$3

case $seconds in
'' | *[!0-9]*)
	echo "$0: SECONDS must be a whole number, not '$seconds'" >&2
	exit 2
	;;
esac
if [ ! -x "$fuzzer" ]; then
	echo "$0: $fuzzer: not an executable" >&2
	exit 2
fi
if [ ! -d "$corpus" ]; then
	echo "$0: $corpus: not a directory" >&2
	exit 2
fi

# UBSan only prints by default: make undefined behaviour a finding too.
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export UBSAN_OPTIONS

artifacts=${SPTRACE_FUZZ_ARTIFACTS:-.}
mkdir -p "$artifacts"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/sptrace-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT INT TERM

# Every seed must pass before fuzzing: a seed that crashes is a regression.
if ! "$fuzzer" -runs=0 -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$artifacts/" "$corpus"; then
	echo "$0: a seed in $corpus fails: a regression" >&2
	exit 1
fi

# -timeout: one input taking 10 s is a hang. -rss_limit_mb and
# -malloc_limit_mb: the reader promises bounded memory (chunks are at most
# 64 MiB stored and 64 MiB raw). The first directory receives new inputs;
# the second is the seed corpus, read only.
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-malloc_limit_mb=512 -max_len=65536 -print_final_stats=1 \
	-artifact_prefix="$artifacts/" "$scratch" "$corpus" || status=$?
if [ "$status" -ne 0 ]; then
	echo "$0: $fuzzer found a problem (exit $status); input saved in $artifacts/" >&2
	exit 1
fi
