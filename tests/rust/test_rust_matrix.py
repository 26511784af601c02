# SPDX-License-Identifier: MIT
"""The sp-probe crate in every configuration it promises, with every rustc
present (the one on PATH, rustup's, Debian's 1.63): debug (opt-level 0,
many codegen units), release (opt-level 3, 16 codegen units), fat and thin
LTO, PIE and non-PIE executables, a cdylib, and the feature `enabled` off.
For each build: it runs untraced and finds one address per name across
functions, modules and crates; every probe has a note with provider sp, a
semaphore in .probes (one symbol per name) and register arguments; every
site is lea -128(%rsp) / nop5 / lea 128(%rsp); and every named site loads
its name from the symbol of its text, one address per text. Names that are not string literals and
arguments that are not integers or pointers are compile errors with a clear
message. `sptrace list` warns of nothing. Clippy, where the toolchain has
it, finds nothing; nor does rustdoc, whose examples run as tests."""
import os
import re
import subprocess
import sys

from toolchains import toolchains

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "Cargo.toml")
BASE = os.environ.get("RUST_TARGET_BASE", "/tmp/sp-rust-matrix")
SPTRACE = os.environ.get("SPTRACE")  # for `sptrace list`, if given
DROPPED = []  # builds with notes of functions the linker dropped
passed = failed = 0

EXPECTED_ARGS = {
    "query_begin": 1, "query_end": 1, "cache_hit": 1, "incr_load_begin": 1,
    "incr_load_end": 1, "blocked_begin": 1, "blocked_end": 1, "mark": 2,
    "alloc": 3, "free": 2, "thread_name": 1, "custom0": 0, "custom6": 6,
    "flush": 1, "tsc": 0,
}
# The batched ring's sites (sp_probe.h, BATCHED EVENTS): a 1-byte nop, an
# int3 trap that fork() copies, between the same leas; one of each per
# crate, in the crate's own ring code.
TRAPS = {"flush", "tsc"}
NAMED = {k for k, v in EXPECTED_ARGS.items()
         if not k.startswith("custom") and k not in TRAPS}


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL " + what)
    return cond


def out(args):
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def notes(path):
    sites = []
    for m in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), "
                         r"Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)\s+"
                         r"Arguments: ?(.*)", out(["readelf", "-nW", path])):
        sites.append(dict(provider=m.group(1), name=m.group(2), pc=int(m.group(3), 16),
                          base=int(m.group(4), 16), sema=int(m.group(5), 16),
                          args=m.group(6).split()))
    return sites


def sections(path):
    secs = {}
    for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)",
                         out(["readelf", "-SW", path])):
        secs[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16))
    return secs


def disasm(path):
    insns = []
    for line in out(["objdump", "-d", "--no-show-raw-insn", path]).splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2).strip()))
    return insns


def check_build(label, path, must_run, optimized):
    if must_run:
        p = subprocess.run([path])
        check(p.returncode == 0, "%s: runs untraced, one address per name (exit %d)" %
              (label, p.returncode))
    if SPTRACE:
        # No warning: the notes of functions the linker dropped are what
        # it legitimately leaves (elf_notes.c), every other note is whole.
        p = subprocess.run([SPTRACE, "list", path], capture_output=True, text=True)
        check(p.returncode == 0 and p.stderr == "",
              "%s: sptrace list warns nothing (%s)" % (label, p.stderr.strip()[:300]))
    secs = sections(path)
    probes = secs.get(".probes")
    check(".stapsdt.base" in secs, "%s: .stapsdt.base kept" % label)
    sites = [s for s in notes(path) if s["provider"] == "sp"]
    # Notes of functions the linker garbage-collected keep a pc of 0 + offset.
    text = secs.get(".text", (0, 0))
    live = [s for s in sites if text[0] <= s["pc"] < text[0] + text[1]]
    if any(s["pc"] < text[0] for s in sites):
        DROPPED.append(label)
    by_name = {}
    for s in live:
        by_name.setdefault(s["name"], []).append(s)
    sema_of = {}
    for name, nargs in EXPECTED_ARGS.items():
        if not check(name in by_name, "%s: probe sp:%s present" % (label, name)):
            continue
        for s in by_name[name]:
            check(probes and probes[0] <= s["sema"] < probes[0] + probes[1],
                  "%s: sp:%s semaphore %#x in .probes" % (label, name, s["sema"]))
            sema_of.setdefault(name, set()).add(s["sema"])
            check(s["base"] == secs.get(".stapsdt.base", (None,))[0],
                  "%s: sp:%s base is .stapsdt.base" % (label, name))
            check(len(s["args"]) == nargs and
                  all(re.fullmatch(r"-8@%r(\w+)", a) for a in s["args"]),
                  "%s: sp:%s args %s are %d 64-bit registers" % (label, name, s["args"], nargs))
    for name, sems in sema_of.items():
        check(len(sems) == 1, "%s: sp:%s: one semaphore (%s)" % (label, name, sems))
    for name in TRAPS:
        check(len(by_name.get(name, [])) == 1, "%s: one sp:%s site (%d)" %
              (label, name, len(by_name.get(name, []))))
    syms = re.findall(r" (sp_\w+_semaphore)$", out(["nm", path]), re.M)
    check(len(syms) == len(set(syms)), "%s: one symbol per semaphore name" % label)
    insns = disasm(path)
    index = {addr: i for i, (addr, _) in enumerate(insns)}
    name_addr = {}
    for s in live:
        i = index.get(s["pc"])
        nop = "nop" if s["name"] in TRAPS else "nopl   0x0(%rax,%rax,1)"
        ok = (i is not None and 1 < i < len(insns) - 1 and
              (insns[i][1] == nop if s["name"] in TRAPS else insns[i][1].startswith(nop)) and
              insns[i - 1][1] == "lea    -0x80(%rsp),%rsp" and
              insns[i + 1][1] == "lea    0x80(%rsp),%rsp")
        check(ok, "%s: sp:%s site at %#x is lea/%s/lea" %
              (label, s["name"], s["pc"], "nop" if s["name"] in TRAPS else "nop5"))
        if not ok or s["name"] not in NAMED:
            continue
        # The name: lea sym(%rip),%reg right before the site, into arg 0.
        m = re.match(r"lea\s+-?0x[0-9a-f]+\(%rip\),(%\w+)\s+# ([0-9a-f]+) <sp\.name\.(.*)>",
                     insns[i - 2][1])
        if check(m and "-8@" + m.group(1) == s["args"][0],
                 "%s: sp:%s at %#x loads its name symbol into arg 0 (%s)" %
                 (label, s["name"], s["pc"], insns[i - 2][1])):
            name_addr.setdefault(m.group(3), set()).add(int(m.group(2), 16))
    # Untraced cost, optimized: each probe's semaphore is read by one movzwl,
    # then one test and one conditional jump. (sp_enabled!, a value, ORs
    # the standard semaphores together: not a site.)
    for j, (addr, ins) in enumerate(insns[:-2] if optimized else []):
        if not re.match(r"movzwl\s+\S+\(%rip\),%\w+\s+# [0-9a-f]+ <sp_\w+_semaphore>", ins):
            continue
        k = j + 1
        if insns[k][1].startswith("or ") and "_semaphore>" in insns[k][1]:
            continue
        check(k + 1 < len(insns) and insns[k][1].startswith("test ") and
              re.match(r"j(n?e|n?z)\s", insns[k + 1][1]),
              "%s: semaphore load at %#x is followed by test and a branch (%s; %s)" %
              (label, addr, insns[k][1] if k < len(insns) else "",
               insns[k + 1][1] if k + 1 < len(insns) else ""))
    for text_, addrs in name_addr.items():
        check(len(addrs) == 1, "%s: name %r has one address (%s)" % (label, text_, addrs))
    check("cross" in name_addr and "m_query" in name_addr,
          "%s: names of both crates seen (%s)" % (label, sorted(name_addr)))


# Bad input: each program must fail to compile with a message naming the
# mistake.
BAD = [
    ("name in a variable", 'let q = "parse"; sp_probe::sp_query_begin!(q);',
     "the name must be a string literal"),
    ("name not a string", "sp_probe::sp_query_end!(42);", "expected `&str`"),
    ("name with a quote", 'sp_probe::sp_cache_hit!("a\\"b");', "must not contain"),
    ("empty name", 'sp_probe::sp_thread_name!("");', "must not be empty"),
    ("float argument", 'sp_probe::sp_mark!("m", 1.5f64);', "IntegerOrPointer"),
    ("struct argument", 'struct S; sp_probe::sp_probe!(p, S);', "IntegerOrPointer"),
    ("String argument", 'sp_probe::sp_alloc!("T", String::new(), 0usize);', "IntegerOrPointer"),
    ("reference argument", 'let x = 1u64; sp_probe::sp_mark!("m", &x);', "IntegerOrPointer"),
    ("probe name a string", 'sp_probe::sp_probe!("p", 1u8);', "`name` an identifier"),
    ("scope name in a variable", 'let q = "x"; sp_probe::sp_scope!(q);',
     "the name must be a string literal"),
]


def check_compile_errors(label, rustc, deps):
    # The newest: an older build with other features may have left one.
    rlibs = sorted((f for f in os.listdir(deps)
                    if f.startswith("libsp_probe-") and f.endswith(".rlib")),
                   key=lambda f: os.path.getmtime(os.path.join(deps, f)), reverse=True)
    if not check(rlibs, "%s: the sp_probe rlib in %s" % (label, deps)):
        return
    tmp = os.path.join(deps, "..", "bad-input")
    os.makedirs(tmp, exist_ok=True)
    good = os.path.join(tmp, "good.rs")
    with open(good, "w") as f:
        f.write('fn main() { sp_probe::sp_query_begin!("ok"); sp_probe::sp_mark!("m", 1u8); }\n')
    base = [rustc, "--edition", "2018", "-L", "dependency=" + deps,
            "--extern", "sp_probe=" + os.path.join(deps, rlibs[0]), "-o"]
    p = subprocess.run(base + [os.path.join(tmp, "good"), good], capture_output=True, text=True)
    check(p.returncode == 0, "%s: the control program compiles (%s)" % (label, p.stderr[-300:]))
    for i, (what, body, msg) in enumerate(BAD):
        src = os.path.join(tmp, "bad%d.rs" % i)
        with open(src, "w") as f:
            f.write("fn main() { %s }\n" % body)
        p = subprocess.run(base + [os.path.join(tmp, "bad%d" % i), src],
                           capture_output=True, text=True)
        check(p.returncode != 0 and (msg is None or msg in p.stderr),
              "%s: %s is a compile error saying %r (%s)" %
              (label, what, msg, p.stderr.strip()[:300]))


def main():
    tcs = toolchains()
    if not tcs:
        if os.environ.get("CI") == "true":
            print("FAIL: no cargo (CI=true: must not skip)")
            sys.exit(1)
        print("SKIP: no cargo")
        sys.exit(77)
    configs = [
        ("debug", [], {}, "debug"),
        ("release", ["--release"], {"CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "16"}, "release"),
        ("lto-fat", ["--release"], {"CARGO_PROFILE_RELEASE_LTO": "fat"}, "release"),
        ("lto-thin", ["--release"], {"CARGO_PROFILE_RELEASE_LTO": "thin",
                                     "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "16"}, "release"),
        # Position-dependent executable: the bin alone linked with -no-pie
        # (after rustc's -pie); the cdylib is built as usual.
        ("non-pie", ["--release", "--bin", "sp-matrix", "--", "-C", "link-arg=-no-pie"],
         {}, "release"),
    ]
    for cargo, version, rustc, _ in tcs:
        for name, flags, env, profile in configs:
            label = "rustc %s %s" % (version, name)
            target = os.path.join(BASE, version, name)
            e = dict(os.environ, RUSTC=rustc, **env)
            if "RUSTFLAGS" not in env:
                e.pop("RUSTFLAGS", None)
            verb = "rustc" if "--" in flags else "build"
            p = subprocess.run([cargo, verb, "--offline", "--quiet", "-p", "sp-matrix",
                                "--manifest-path", MANIFEST, "--target-dir", target] + flags,
                               env=e, capture_output=True, text=True)
            if not check(p.returncode == 0, "%s: builds: %s" % (label, p.stderr[-800:])):
                continue
            check(p.stderr.strip() == "", "%s: no warnings: %s" % (label, p.stderr[-500:]))
            exe = os.path.join(target, profile, "sp-matrix")
            etype = re.search(r"Type:\s+(\w+)", out(["readelf", "-h", exe])).group(1)
            eq_type = "EXEC" if name == "non-pie" else "DYN"
            check(etype == eq_type, "%s: executable type %s (%s)" % (label, eq_type, etype))
            check_build(label, exe, True, name != "debug")
            if name == "debug":
                check_compile_errors(label, rustc, os.path.join(target, "debug", "deps"))
            if name != "non-pie":
                check_build(label + " cdylib",
                            os.path.join(target, profile, "libsp_matrix.so"), False,
                            name != "debug")
        # The feature off: nothing emitted, the program still runs.
        target = os.path.join(BASE, version, "disabled")
        label = "rustc %s --no-default-features" % version
        p = subprocess.run([cargo, "build", "--offline", "--quiet", "-p", "sp-matrix",
                            "--no-default-features", "--manifest-path", MANIFEST,
                            "--target-dir", target], env=dict(os.environ, RUSTC=rustc),
                           capture_output=True, text=True)
        if check(p.returncode == 0, "%s: builds: %s" % (label, p.stderr[-800:])):
            exe = os.path.join(target, "debug", "sp-matrix")
            check(subprocess.run([exe]).returncode == 0, "%s: runs" % label)
            check(not [s for s in notes(exe) if s["provider"] == "sp"], "%s: no notes" % label)
            check(".probes" not in sections(exe), "%s: no .probes" % label)
        # The example and every test host build clean with this toolchain too.
        root = os.path.join(HERE, "..", "..")
        for m in ("examples/rust", "tests/rust", "bench/rust"):
            p = subprocess.run([cargo, "build", "--offline", "--release", "--workspace",
                                "--manifest-path", os.path.join(root, m, "Cargo.toml"),
                                "--target-dir", os.path.join(BASE, version, "all")],
                               env=dict(os.environ, RUSTC=rustc), capture_output=True, text=True)
            check(p.returncode == 0 and "warning" not in p.stderr,
                  "rustc %s: %s builds without warnings (%s)" % (version, m, p.stderr[-800:]))
        # Clippy where the toolchain has it (rustup's does, Debian's not).
        if os.access(os.path.join(os.path.dirname(cargo), "cargo-clippy"), os.X_OK):
            root = os.path.join(HERE, "..", "..")
            for m in ("probes/rust", "examples/rust", "tests/rust", "bench/rust"):
                p = subprocess.run([cargo, "clippy", "--offline", "--quiet", "--all-targets",
                                    "--manifest-path", os.path.join(root, m, "Cargo.toml"),
                                    "--target-dir", os.path.join(BASE, version, "clippy"),
                                    "--", "-D", "warnings"],
                                   env=dict(os.environ, RUSTC=rustc), capture_output=True,
                                   text=True)
                check(p.returncode == 0, "rustc %s: clippy clean: %s (%s)" %
                      (version, m, p.stderr[-600:]))
        # The crate's docs without a warning, and its tests (unit tests
        # and every rustdoc example, the compile_fail ones included) with
        # this toolchain's rustdoc.
        root = os.path.join(HERE, "..", "..")
        rustdoc = os.path.join(os.path.dirname(rustc), "rustdoc")
        e = dict(os.environ, RUSTC=rustc, RUSTDOC=rustdoc, RUSTDOCFLAGS="-D warnings")
        e.pop("RUSTFLAGS", None)
        crate = os.path.join(root, "probes", "rust", "Cargo.toml")
        for verb in ("doc", "test"):
            p = subprocess.run([cargo, verb, "--offline", "--quiet", "--manifest-path", crate,
                                "--target-dir", os.path.join(BASE, version, "crate")],
                               env=e, capture_output=True, text=True)
            check(p.returncode == 0 and (verb == "test" or p.stderr.strip() == ""),
                  "rustc %s: cargo %s of the crate clean (%s)" %
                  (version, verb, (p.stderr + p.stdout)[-800:]))
    # What keeps the `sptrace list` check from passing vacuously: builds
    # whose linker left notes of dropped functions (with rustc 1.63 and
    # 1.95: every build, sp_matrix_unused() in the matrix crate).
    print("note: notes of dropped functions in %d builds: %s" % (len(DROPPED), DROPPED))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


main()
