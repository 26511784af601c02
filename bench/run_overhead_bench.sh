#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_overhead_bench.sh BUILD_DIR: sptrace's estimate of its own cost
# against the cost a host measures (issue 27; docs/numbers.md, "Overhead").
# tests/hosts/rate_host runs work items with one query pair each and
# reports items per second of its own CPU time; untraced and traced runs
# alternate (ROUNDS pairs, default 5, medians) at three event rates,
# batched and per-event. Prints per rate the host's loss (1 - traced /
# untraced throughput), sptrace's estimated share and their ratio, and
# exits 1 when an estimate is off by more than 1.5x, the issue's target
# (or 3 points where the loss is under 5%): the checks of
# tests/e2e/test_overhead.py, which this runs with OVERHEAD_FACTOR=1.5
# (the test's own default is 2x, room for a loaded machine), and with
# --max-overhead 2 the settled loss within 2 points of the budget (the
# test's default: 5). Needs root. About 90 seconds with 5 rounds.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
bench_root
host=$build/tests/hosts/rate_host
bench_need "$host"
ROUNDS=${ROUNDS:-5}
[ "$ROUNDS" -ge 3 ] 2>/dev/null || die "ROUNDS=$ROUNDS: at least 3 (the figures are medians)"
src=$(cd "$(dirname "$0")/.." && pwd)
SPTRACE=$sptrace RATE_HOST=$host OVERHEAD_ROUNDS=$ROUNDS OVERHEAD_FACTOR=1.5 \
	OVERHEAD_BUDGET_MARGIN=2 \
	python3 "$src/tests/e2e/test_overhead.py" | grep -E '^(RESULT|FAIL|[0-9]+ passed)'
