#!/bin/sh
# SPDX-License-Identifier: MIT
# The build without BPF (meson setup -Dbpf=false): configures, builds and
# unit-tests the tree in a temporary directory; meson must not look for
# clang, llvm-strip or bpftool, which are shadowed on PATH by stand-ins
# that record any call and fail; then
# runs the file-only commands on the golden trace and checks that a live
# command is refused in one line.
#   no_bpf.sh SOURCE_ROOT
set -eu
src=$(cd "$1" && pwd)
tmp=$(mktemp -d /tmp/sptrace_no_bpf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/bin"
for tool in clang llvm-strip bpftool; do
	printf '#!/bin/sh\ntouch "%s/called-%s"\nexit 1\n' "$tmp" "$tool" \
		> "$tmp/bin/$tool"
	chmod +x "$tmp/bin/$tool"
done
export PATH="$tmp/bin:$PATH"
fail() { echo "FAIL: $*"; exit 1; }

CC=gcc meson setup "$tmp/b" "$src" -Dbpf=false -Dwerror=true \
	>"$tmp/setup.log" 2>&1 ||
	{ cat "$tmp/setup.log"; fail "meson setup -Dbpf=false"; }
# A find_program() of them would fail on a machine without them.
if grep -E "Program (clang|llvm-strip|bpftool) found" "$tmp/setup.log"; then
	fail "the -Dbpf=false configuration looks for the BPF toolchain"
fi
ninja -C "$tmp/b" -j2 >"$tmp/build.log" 2>&1 ||
	{ tail -40 "$tmp/build.log"; fail "build -Dbpf=false"; }
meson test -C "$tmp/b" --no-rebuild --suite unit >"$tmp/test.log" 2>&1 ||
	{ tail -40 "$tmp/test.log"; fail "unit tests -Dbpf=false"; }
for tool in clang llvm-strip bpftool; do
	[ ! -e "$tmp/called-$tool" ] || fail "the -Dbpf=false build ran $tool"
done

sp="$tmp/b/userspace/sptrace"
golden="$src/tests/golden/v1_0.spt"
"$sp" summarize "$golden" >"$tmp/out" 2>>"$tmp/cmd.err" || fail "summarize"
grep -q . "$tmp/out" || fail "summarize printed nothing"
"$sp" summarize -f json -o "$tmp/run.json" "$golden" 2>>"$tmp/cmd.err" || fail "summarize -f json"
"$sp" diff "$golden" "$tmp/run.json" >/dev/null 2>>"$tmp/cmd.err" || fail "diff"
"$sp" export --folded -o "$tmp/folded" "$golden" 2>>"$tmp/cmd.err" || fail "export"
"$sp" import --db "$tmp/h.db" "$golden" 2>/dev/null || fail "import"
"$sp" history --db "$tmp/h.db" >/dev/null 2>>"$tmp/cmd.err" || fail "history"
"$sp" report -o "$tmp/r.html" "$golden" 2>>"$tmp/cmd.err" || fail "report"
"$sp" list "$sp" >/dev/null 2>&1 || fail "list"

for cmd in "record -o $tmp/x.spt -- true" "-- true" "mem -- true" \
	"bench --db $tmp/b.db -- true"; do
	# shellcheck disable=SC2086
	if "$sp" $cmd 2>"$tmp/err"; then
		fail "sptrace $cmd ran without BPF"
	fi
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "sptrace $cmd: not one line"
	grep -q "built without BPF" "$tmp/err" || fail "sptrace $cmd: $(cat "$tmp/err")"
done
echo "ok: -Dbpf=false builds, passes the unit tests and runs the file-only commands without clang or bpftool"
