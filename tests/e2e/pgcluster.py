# SPDX-License-Identifier: MIT
"""A throw-away PostgreSQL 15 cluster for tests: initdb as the `postgres`
user in a private temp dir, a unix socket in a private dir, no TCP
(listen_addresses=''), autovacuum off (its transactions would mix with the
workload's). Stopped and removed whatever happens: try/finally in the
caller, plus atexit and SIGTERM (meson's timeout) here."""
import atexit
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile

PG_BIN = "/usr/lib/postgresql/15/bin"
POSTGRES = os.path.join(PG_BIN, "postgres")

_live = []


def spec_with_opt_in(spec, dest, extra=""):
    """Writes `spec` to `dest` with its opt-in lines on (phases, lock waits,
    buffer reads), not the extended protocol's statement line (statements
    would count twice), then `extra`."""
    with open(spec) as f, open(dest, "w") as g:
        for line in f:
            if line.startswith("#postgresql:") and "name=arg0" not in line:
                line = line[1:]
            g.write(line)
        g.write(extra)


def available():
    return os.path.exists(POSTGRES) and os.path.exists(os.path.join(PG_BIN, "pgbench"))


def require():
    """PostgreSQL 15 or: FAIL in CI, SKIP outside it (sptest.require)."""
    from sptest import require as sp_require
    sp_require(available(), "PostgreSQL 15 (%s, pgbench; .ci/install-deps "
               "installs postgresql-15)" % POSTGRES)


def _cleanup_all():
    for c in list(_live):
        c.stop()


def _on_term(signum, frame):
    _cleanup_all()
    sys.exit(128 + signum)


atexit.register(_cleanup_all)
signal.signal(signal.SIGTERM, _on_term)


class Cluster:
    def __init__(self):
        pw = pwd.getpwnam("postgres")
        self.uid, self.gid = pw.pw_uid, pw.pw_gid
        self.dir = tempfile.mkdtemp(prefix="sptrace-pg-")
        os.chown(self.dir, self.uid, self.gid)
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        os.mkdir(self.sock, 0o700)
        os.chown(self.sock, self.uid, self.gid)
        self.port = "5432"      # only names the socket file: no TCP
        self.started = False
        _live.append(self)

    def _as_pg(self):
        os.setgid(self.gid)
        os.setuid(self.uid)

    def run(self, args, timeout=300, check=True):
        p = subprocess.run(args, capture_output=True, text=True,
                           timeout=timeout, preexec_fn=self._as_pg,
                           cwd=self.dir, env={"PATH": "/usr/bin:/bin",
                                              "LC_ALL": "C"})
        if check and p.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (
                " ".join(args), p.returncode, p.stderr.strip()[-500:]))
        return p

    def start(self, extra=""):
        """extra: more -c settings for postgres, e.g. pg_stat_statements'."""
        self.run([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-A",
                  "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        opts = ("-c listen_addresses='' -k %s -p %s -c autovacuum=off "
                "-c fsync=off -c synchronous_commit=off "
                "-c shared_preload_libraries=pg_stat_statements "
                "-c pg_stat_statements.track=all %s" % (self.sock, self.port, extra))
        self.started = True
        self.run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-w",
                  "-t", "60", "-l", os.path.join(self.dir, "log"), "-o",
                  opts, "start"], timeout=90)

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def others(self):
        """Processes of the PostgreSQL binary outside this cluster: -b
        counts every process of the file, so they would be counted too."""
        ours, found = self.postmaster_pid(), []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if os.readlink("/proc/%s/exe" % d) != POSTGRES:
                    continue
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if int(d) != ours and ppid != ours:
                found.append(int(d))
        return found

    def conn(self):
        return ["-h", self.sock, "-p", self.port, "-U", "postgres"]

    def pgbench(self, args, timeout=600):
        return self.run([os.path.join(PG_BIN, "pgbench")] + self.conn() +
                        args + ["postgres"], timeout=timeout)

    def psql(self, sql, timeout=60):
        return self.run([os.path.join(PG_BIN, "psql")] + self.conn() +
                        ["-X", "-q", "-At", "-c", sql, "postgres"],
                        timeout=timeout)

    def psql_file(self, path, timeout=60):
        """psql -f: one query string per statement (psql splits them)."""
        return self.run([os.path.join(PG_BIN, "psql")] + self.conn() +
                        ["-X", "-q", "-At", "-f", path, "postgres"],
                        timeout=timeout)

    def stop(self):
        if self in _live:
            _live.remove(self)
        if self.started:
            try:
                pid = self.postmaster_pid()
            except (OSError, ValueError):
                pid = None
            try:
                self.run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data,
                          "-m", "immediate", "-w", "-t", "30", "stop"],
                         timeout=45, check=False)
            except subprocess.TimeoutExpired:
                pass
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)
