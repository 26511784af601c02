# SPDX-License-Identifier: MIT
"""An independent reader of the golden trace file tests/golden/v1_0.spt,
written from docs/trace-file.md alone (none of sptrace's code): header and its
CRC, the chunk frames and both CRCs, zlib, the STRINGS and EVENTS payloads
and the footer. The file must decode to the content written out below
(tests/golden/README.md), so a writer and reader that drift together from
the specification cannot both pass. Then it corrupts copies of the file
and checks that this reader refuses each: its own checks can fail.
With a second argument, today's writer (test_trace_format --write-golden)
writes the same content again and this reader decodes that file too.

    golden_reader.py tests/golden/v1_0.spt [path/to/test_trace_format]"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

MAGIC = b"\x89SPT\r\n\x1a\n"
T = 5000000000000
PTR = 0x7F0012345000
NO = 0xFFFFFFFF            # TRACE_NO_STRING
STRINGS = ["main", "worker-1", "typeck", "borrowck", "parse ünïcødé ✓",
           "phase-2", "blocked\ton\x01lock", "codegen"]
MAIN, WORKER, TYPECK, BORROWCK, PARSE, PHASE, LOCK, CODEGEN = range(8)
# (ts, arg1, arg2, pid, tid, name id, kind): record_abi.h's kinds, 1-12.
EVENTS = [
    (T + 1000, 0, 0, 4242, 4242, MAIN, 11),
    (T + 1500, 0, 0, 4242, 4243, WORKER, 11),
    (T + 2000, 0, 0, 4242, 4242, TYPECK, 1),
    (T + 2750, 0, 0, 4242, 4243, PARSE, 1),
    (T + 3000, 0, 0, 4242, 4242, BORROWCK, 1),
    (T + 3100, 0, 0, 4242, 4242, PARSE, 3),
    (T + 3050, 17, 0, 4242, 4243, PHASE, 8),
    (T + 4000, 4096, PTR, 4242, 4242, NO, 9),
    (T + 5000, 0, 0, 4242, 4242, BORROWCK, 2),
    (T + 6000, 0, PTR, 4242, 4242, NO, 10),
    (T + 1000000, 0, 0, 4242, 4243, LOCK, 6),
    (T + 2500000, 0, 0, 4242, 4243, LOCK, 7),
    (T + 2600000, 0, 0, 4242, 4242, CODEGEN, 4),
    (T + 2700000, 0, 0, 4242, 4242, CODEGEN, 5),
    (T + 3000000, 0, 0, 4242, 4242, TYPECK, 2),
    (T + 3100000, 0, 0, 4242, 4243, PARSE, 2),
    (T + 3200000, 2 ** 64 - 1, 0, 4250, 4250, PHASE, 8),
]
# (offset, type, seq) of every chunk, the footer last.
LAYOUT = [(103, 1, 0), (202, 2, 1), (314, 1, 2), (373, 2, 3), (469, 3, 4)]


class Bad(Exception):
    pass


class Buf:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        if self.p + n > len(self.d):
            raise Bad("short by %d bytes at %d" % (self.p + n - len(self.d), self.p))
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def u(self, n):
        return int.from_bytes(self.take(n), "little")

    def varint(self, bits=64):
        v = 0
        for i in range(10):
            b = self.u(1)
            if i == 9 and b > 1:
                raise Bad("varint: 10th byte %#x" % b)
            v |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                break
        else:
            raise Bad("varint longer than 10 bytes")
        if v >= 1 << bits:
            raise Bad("varint%d: %d too large" % (bits, v))
        return v

    def left(self):
        return len(self.d) - self.p


def crc(b):
    return zlib.crc32(b) & 0xFFFFFFFF


def decode(data):
    """Returns (header dict, strings, events, footer, chunks); raises Bad."""
    b = Buf(data)
    if b.take(8) != MAGIC:
        raise Bad("magic")
    major, minor, hsize, bom = b.u(2), b.u(2), b.u(4), b.u(4)
    if (major, bom) != (1, 0x0A0B0C0D) or not 52 <= hsize <= 1 << 20:
        raise Bad("header: version %d.%d, size %d, bom %#x" % (major, minor, hsize, bom))
    if crc(data[:hsize - 4]) != int.from_bytes(data[hsize - 4:hsize], "little"):
        raise Bad("header CRC")
    h = {"major": major, "minor": minor, "realtime": b.u(8), "mono": b.u(8)}
    npids = b.u(4)
    h["pids"] = [b.u(4) for _ in range(npids)]
    h["cmdline"] = b.take(b.u(4)).decode()
    h["version"] = b.take(b.u(4)).decode()
    if b.p != hsize - 4:
        raise Bad("header fields end at %d, not %d" % (b.p, hsize - 4))
    b.p = hsize
    strings, events, footer, chunks = [], [], None, []
    while footer is None:
        off = b.p
        if b.take(4) != b"SPCK":
            raise Bad("no sync at %d" % off)
        typ, enc, _resv, seq, stored, raw, pcrc, fcrc = struct.unpack(
            "<BBHIIIII", b.take(24))
        if crc(data[off:off + 24]) != fcrc:
            raise Bad("frame CRC of chunk at %d" % off)
        payload = b.take(stored)
        if crc(payload) != pcrc:
            raise Bad("payload CRC of chunk at %d" % off)
        if enc == 1:
            z = zlib.decompressobj()
            payload = z.decompress(payload)
            if not z.eof or z.unused_data:
                raise Bad("zlib stream of chunk at %d" % off)
        elif enc != 0:
            raise Bad("encoding %d" % enc)
        if len(payload) != raw:
            raise Bad("raw_len %d, inflated %d" % (raw, len(payload)))
        chunks.append((off, typ, seq))
        p = Buf(payload)
        if typ == 1:
            first, count = p.varint(32), p.varint(32)
            if first != len(strings):
                raise Bad("first_id %d after %d strings" % (first, len(strings)))
            for _ in range(count):
                strings.append(p.take(p.varint(32)).decode())
        elif typ == 2:
            threads, ts = [], 0
            for _ in range(p.varint()):
                tag = p.u(1)
                kind = tag & 0x1F
                if not kind or tag & 0x80:
                    raise Bad("tag %#x" % tag)
                t = p.varint(32)
                if t == len(threads):
                    threads.append((p.varint(32), p.varint(32)))
                elif t > len(threads):
                    raise Bad("thread %d of %d" % (t, len(threads)))
                z = p.varint()
                ts = (ts + ((z >> 1) ^ -(z & 1))) % 2 ** 64
                name = p.varint(32) - 1
                a1 = p.varint() if tag & 0x20 else 0
                a2 = p.varint() if tag & 0x40 else 0
                events.append((ts, a1, a2) + threads[t] +
                              (name % 2 ** 32, kind))
        elif typ == 3:
            if enc != 0 or raw < 24:
                raise Bad("footer: encoding %d, %d bytes" % (enc, raw))
            footer = struct.unpack("<QQQ", payload[:24])
            continue
        if p.left():
            raise Bad("%d bytes after the payload of chunk at %d" % (p.left(), off))
    if b.left():
        raise Bad("%d bytes after the footer" % b.left())
    return h, strings, events, footer, chunks


def check_content(check, label, minor, h, strings, events, footer, chunks):
    check(h == {"major": 1, "minor": minor, "realtime": 1700000000123456789,
                "mono": T, "pids": [4242, 4250],
                "cmdline": './query_engine --jobs 2 --name "ünï"',
                "version": "0.1.0"}, "%s: header: %r" % (label, h))
    check(strings == STRINGS, "%s: strings: %r" % (label, strings))
    check(chunks == LAYOUT, "%s: chunk layout: %r" % (label, chunks))
    check(len(events) == len(EVENTS), "%s: %d events" % (label, len(events)))
    for i, (got, want) in enumerate(zip(events, EVENTS)):
        check(got == want, "%s: event %d: %r == %r" % (label, i, got, want))
    check(footer == (17, 3, 4), "%s: footer (events, lost, chunks): %r" %
          (label, footer))


def check_refused(check, data):
    """This reader's own checks can fail: one flipped bit in the header,
    in each chunk's frame and in each chunk's payload, and a file cut
    short, must each be refused."""
    spots = [("header", 40)] + [("frame %d" % s, o + 10) for o, _, s in LAYOUT] + \
            [("payload %d" % s, o + 30) for o, _, s in LAYOUT]
    for what, at in spots:
        bad = bytearray(data)
        bad[at] ^= 0x04
        try:
            decode(bytes(bad))
            check(False, "a flipped bit in the %s (byte %d) is refused" % (what, at))
        except Bad as e:
            check(True, "a flipped bit in the %s (byte %d) is refused: %s" % (what, at, e))
    try:
        decode(data[:-1])
        check(False, "a file cut short is refused")
    except Bad as e:
        check(True, "a file cut short is refused: %s" % e)


def main():
    failed = passed = 0

    def check(ok, what):
        nonlocal failed, passed
        print(("ok   " if ok else "FAIL ") + what)
        passed += bool(ok)
        failed += not ok

    data = open(sys.argv[1], "rb").read()
    check(len(data) == 521, "golden file: 521 bytes (%d)" % len(data))
    # (label, bytes, minor): the golden file is 1.0; today's writer writes
    # 1.2 (1.1: event kind 13, process_title; 1.2: kind 14, pause), the
    # same content otherwise.
    files = [("golden", data, 0)]
    if len(sys.argv) > 2:
        d = tempfile.mkdtemp(prefix="sptest-golden-")
        fresh = os.path.join(d, "fresh.spt")
        try:
            p = subprocess.run([sys.argv[2], "--write-golden", fresh],
                               capture_output=True, text=True)
            check(p.returncode == 0, "today's writer: exit 0 (%s)" % p.stderr)
            if os.path.exists(fresh):
                files.append(("today's writer", open(fresh, "rb").read(), 2))
        finally:
            if os.path.exists(fresh):
                os.unlink(fresh)
            os.rmdir(d)
    for label, d, minor in files:
        try:
            content = decode(d)
        except Bad as e:
            check(False, "%s: decodes: %s" % (label, e))
            continue
        check_content(check, label, minor, *content)
    check_refused(check, data)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
