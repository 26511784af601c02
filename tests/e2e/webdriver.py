# SPDX-License-Identifier: MIT
"""The few W3C WebDriver calls the browser tests need, spoken over HTTP
with urllib to Debian's chromedriver driving headless Chromium (no Python
packages beyond the standard library)."""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
# The key W3C gives an element reference in JSON.
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    pass


def available():
    return os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One chromedriver process and one headless Chromium session; use as
    a context manager so both end whatever happens."""

    def __init__(self, width=1500, height=1000):
        self.port = _free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.profile = tempfile.mkdtemp(prefix="sptest-chromium-")
        self.driver = subprocess.Popen(
            [CHROMEDRIVER, "--port=%d" % self.port],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # Its own process group: the browsers it starts end with it.
            start_new_session=True)
        self.sid = None
        try:
            self._wait_ready()
            caps = {"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": ["--headless=new", "--no-sandbox",
                             "--disable-gpu", "--disable-dev-shm-usage",
                             # No network but loopback here: without these
                             # Chromium spends its start-up on refused
                             # connections and failed look-ups.
                             "--disable-background-networking",
                             "--disable-component-update",
                             "--disable-sync", "--no-first-run",
                             "--disable-quic",
                             "--user-data-dir=" + self.profile,
                             "--window-size=%d,%d" % (width, height)],
                }}}}
            # A cold Chromium on a loaded 2-CPU machine can take minutes to
            # start; page calls keep the 60 s limit.
            self.sid = self._call("POST", "/session", caps,
                                  timeout=240)["sessionId"]
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            if self.driver.poll() is not None:
                raise WebDriverError("chromedriver exited with %d" %
                                     self.driver.returncode)
            try:
                if self._call("GET", "/status").get("ready"):
                    return
            except (OSError, WebDriverError):
                pass
            time.sleep(0.1)
        raise WebDriverError("chromedriver not ready after %ds" % timeout)

    def _call(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.base + path, data=data, method=method,
            headers={"Content-Type": "application/json; charset=utf-8"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                reply = json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            try:
                v = json.loads(e.read().decode()).get("value", {})
                msg = "%s: %s" % (v.get("error"), v.get("message", "")[:300])
            except ValueError:
                msg = str(e)
            raise WebDriverError("%s %s: %s" % (method, path, msg))
        return reply.get("value")

    def _s(self, path):
        return "/session/%s%s" % (self.sid, path)

    def get(self, url):
        self._call("POST", self._s("/url"), {"url": url})

    def find(self, css):
        """The first element matching css (an element reference)."""
        return self._call("POST", self._s("/element"),
                          {"using": "css selector", "value": css})

    def click(self, elem):
        self._call("POST", self._s("/element/%s/click" % elem[ELEMENT]), {})

    def js(self, script, *args):
        """Runs script (a function body; `arguments` holds args) and
        returns what it returns; elements come back as references."""
        return self._call("POST", self._s("/execute/sync"),
                          {"script": script, "args": list(args)})

    def screenshot(self, path):
        png = base64.b64decode(self._call("GET", self._s("/screenshot")))
        with open(path, "wb") as f:
            f.write(png)
        return len(png)

    def close(self):
        try:
            if self.sid:
                self._call("DELETE", self._s(""), timeout=20)
        except (OSError, WebDriverError):
            pass
        finally:
            self.sid = None
            # TERM, then KILL whatever of the group is left (Linux does
            # not reuse a pid while a group of that id exists).
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.driver.pid, sig)
                except ProcessLookupError:
                    pass
                try:
                    self.driver.wait(10)
                except subprocess.TimeoutExpired:
                    pass
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
