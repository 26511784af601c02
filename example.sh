#!/bin/sh
# Sets everything up and traces the bundled example, a multi-threaded query
# engine, printing sptrace's per-query table: sudo ./example.sh
set -eu
cd "$(dirname "$0")"
.ci/install-deps
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
exec build/userspace/sptrace "$@" -- build/examples/query_engine -q
