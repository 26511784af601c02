# SPDX-License-Identifier: MIT
"""The probe header in every configuration it promises: gcc and clang, C99+
and C++11+, -O0 to -O3, LTO, PIE and non-PIE, executables and shared
libraries. For each build: it runs untraced, every probe has a note with
provider sp, a semaphore and the right number of register arguments, and
every x86-64 site is lea -128(%rsp) / 5-byte nop / lea 128(%rsp) (sp:flush
and sp:tsc, of batched events, a 1-byte nop between the same leas)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROBES = os.path.join(HERE, "..", "..", "probes")
passed = failed = 0

# A tuple: each count is seen (query sites: plain, integer key, text key).
EXPECTED_ARGS = {
    "query_begin": (1, 2, 3), "query_end": (1, 2, 3), "cache_hit": (1, 2, 3),
    "incr_load_begin": 1,
    "incr_load_end": 1, "blocked_begin": 1, "blocked_end": 1, "mark": 2,
    "alloc": 3, "free": 2, "thread_name": 1, "custom0": 0, "custom6": 6,
    "flush": 1, "tsc": 0,
}


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL " + what)
    return cond


def notes(path):
    out = subprocess.run(["readelf", "-nW", path], capture_output=True,
                         text=True, check=True).stdout
    sites = []
    for m in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), "
                         r"Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)\s+"
                         r"Arguments: ?(.*)", out):
        sites.append(dict(provider=m.group(1), name=m.group(2),
                          pc=int(m.group(3), 16), sema=int(m.group(5), 16),
                          args=m.group(6).split()))
    return sites


def disasm(path):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                         capture_output=True, text=True, check=True).stdout
    insns = []
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2).strip()))
    return insns


def check_build(label, path):
    sites = [s for s in notes(path) if s["provider"] == "sp"]
    by_name = {}
    for s in sites:
        by_name.setdefault(s["name"], []).append(s)
    for name, nargs in EXPECTED_ARGS.items():
        if not check(name in by_name, "%s: probe sp:%s present" % (label, name)):
            continue
        counts = nargs if isinstance(nargs, tuple) else (nargs,)
        check(sorted(set(len(s["args"]) for s in by_name[name])) ==
              sorted(counts), "%s: sp:%s sites of %s arguments" %
              (label, name, counts))
        for s in by_name[name]:
            check(s["sema"] != 0, "%s: sp:%s has a semaphore" % (label, name))
            check(len(s["args"]) in counts and
                  all(re.fullmatch(r"-8@%r(\w+)", a) for a in s["args"]),
                  "%s: sp:%s args %s are %s 64-bit registers" %
                  (label, name, s["args"], nargs))
    # the site: lea -0x80(%rsp),%rsp ; nopl 0x0(%rax,%rax,1) ; lea 0x80(%rsp),%rsp
    insns = disasm(path)
    index = {addr: i for i, (addr, _) in enumerate(insns)}
    for s in sites:
        i = index.get(s["pc"])
        # sp:flush and sp:tsc are 1-byte nops (int3 traps; see sp_probe.h)
        one = s["name"] in ("flush", "tsc")
        nop = "nop" if one else "nopl   0x0(%rax,%rax,1)"
        ok = (i is not None and 0 < i < len(insns) - 1 and
              (insns[i][1] == nop if one else
               insns[i][1].startswith(nop)) and
              insns[i - 1][1] == "lea    -0x80(%rsp),%rsp" and
              insns[i + 1][1] == "lea    0x80(%rsp),%rsp")
        check(ok, "%s: sp:%s site at %#x is lea/%s/lea" % (label, s["name"], s["pc"], nop))


def main():
    tmp = tempfile.mkdtemp(prefix="sp-header-")
    src_c = os.path.join(HERE, "probe_matrix.c")
    src_cc = os.path.join(HERE, "probe_matrix.cc")
    configs = []
    for cc in ("gcc", "clang"):
        for std in ("c99", "c11"):
            for opt in ("-O0", "-O1", "-O2", "-O3"):
                configs.append((cc, src_c, ["-std=" + std, opt]))
        configs.append((cc, src_c, ["-std=c11", "-O2", "-flto"]))
        configs.append((cc, src_c, ["-std=c11", "-O2", "-fno-pie", "-no-pie"]))
        configs.append((cc, src_c, ["-std=c11", "-O2", "-fPIE", "-pie"]))
    for cxx in ("g++", "clang++"):
        for std in ("c++11", "c++17"):
            for opt in ("-O0", "-O2", "-O3"):
                configs.append((cxx, src_cc, ["-std=" + std, opt]))
        configs.append((cxx, src_cc, ["-std=c++17", "-O2", "-flto"]))
    try:
        for n, (cc, src, flags) in enumerate(configs):
            if not shutil.which(cc):
                check(False, "compiler %s installed" % cc)
                continue
            label = "%s %s" % (cc, " ".join(flags))
            exe = os.path.join(tmp, "m%d" % n)
            cmd = [cc] + flags + ["-Wall", "-Wextra", "-Werror", "-pedantic",
                                  "-I", PROBES, src, "-o", exe]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if not check(p.returncode == 0, "%s: compiles clean: %s" % (label, p.stderr[:500])):
                continue
            check(subprocess.run([exe]).returncode == 0, "%s: runs untraced" % label)
            check_build(label, exe)
            # the same code as a shared library
            so = exe + ".so"
            lib_flags = [f for f in flags if "pie" not in f.lower()]
            p = subprocess.run([cc] + lib_flags + ["-fPIC", "-shared", "-Wall", "-Werror",
                                               "-I", PROBES, src, "-o", so],
                               capture_output=True, text=True)
            if check(p.returncode == 0, "%s: shared library builds: %s" % (label, p.stderr[:300])):
                check_build(label + " -shared", so)
        # Disabled probes compile to nothing.
        exe = os.path.join(tmp, "disabled")
        subprocess.run(["gcc", "-DSP_PROBES_DISABLE", "-O2", "-Wall", "-Werror",
                        "-I", PROBES, src_c, "-o", exe], check=True)
        check(not [s for s in notes(exe) if s["provider"] == "sp"],
              "SP_PROBES_DISABLE: no notes")
    finally:
        shutil.rmtree(tmp)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


main()
