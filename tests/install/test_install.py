# SPDX-License-Identifier: MIT
"""`meson install` gives a host project what it needs: the probe header,
a pkg-config file whose --cflags find it, and the man page. Installs into a
DESTDIR, then builds a host against the installed files only and checks
that its probes are in the binary."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from sptest import check, eq, finish, optional, run  # noqa: E402

build = os.environ["BUILD_ROOT"]
dest = tempfile.mkdtemp(prefix="sptest-install-")
try:
    p = run(["meson", "install", "-C", build, "--destdir", dest,
             "--no-rebuild", "--quiet"], timeout=120)
    eq(p.returncode, 0, "meson install exit status (%s)" % p.stderr.strip())
    prefix = subprocess.run(["meson", "introspect", "--buildoptions", build],
                            capture_output=True, text=True).stdout
    opts = {o["name"]: o["value"] for o in json.loads(prefix)}
    root = dest + opts["prefix"]
    inc = os.path.join(root, opts["includedir"], "sptrace", "sp_probe.h")
    man = os.path.join(root, opts["mandir"], "man1", "sptrace.1")
    pcdirs = [os.path.join(root, opts["libdir"], "pkgconfig"),
              os.path.join(root, "lib", "pkgconfig")]
    pcdir = next((d for d in pcdirs if os.path.exists(d + "/sptrace.pc")),
                 None)
    check(os.path.exists(inc), "probe header installed: " + inc)
    check(os.path.exists(man) or os.path.exists(man + ".gz"),
          "man page installed: " + man)
    check(os.path.exists(os.path.join(root, opts["bindir"], "sptrace")),
          "sptrace installed")
    check(pcdir is not None, "sptrace.pc installed")
    if pcdir and os.path.exists(inc):
        env = dict(os.environ, PKG_CONFIG_PATH=pcdir,
                   PKG_CONFIG_SYSROOT_DIR=dest)
        cf = subprocess.run(["pkg-config", "--cflags", "sptrace"], env=env,
                            capture_output=True, text=True)
        eq(cf.returncode, 0, "pkg-config --cflags sptrace")
        flags = cf.stdout.split()
        check(any(f.startswith("-I") and f.endswith("/sptrace")
                  for f in flags), "cflags name the header's directory: %r"
              % flags)
        src = os.path.join(dest, "host.c")
        exe = os.path.join(dest, "host")
        with open(src, "w") as f:
            f.write('#include <sp_probe.h>\nint main(void){\n'
                    'SP_QUERY_BEGIN("q"); SP_QUERY_END("q"); return 0; }\n')
        c = run(["cc", "-O2"] + flags + ["-o", exe, src])
        eq(c.returncode, 0, "a host builds with the installed header only "
           "(%s)" % c.stderr.strip()[:300])
        if c.returncode == 0:
            notes = run(["readelf", "-n", exe]).stdout
            check("Provider: sp" in notes and "Name: query_begin" in notes,
                  "the host carries the sp USDT notes")
    if optional(shutil.which("groff"), "groff (Debian: groff-base)") and \
            check(os.path.exists(man), "man page installed uncompressed"):
        g = run(["groff", "-man", "-ww", "-z", man])
        eq(g.stderr, "", "installed man page renders without warnings")
finally:
    shutil.rmtree(dest, ignore_errors=True)
finish()
