// SPDX-License-Identifier: MIT
/*
 * The .spt trace file's reader, for every command that reads a recording:
 * hostile input, fuzzed (tests/fuzz/fuzz_trace_reader.c). Every length read
 * from the file is checked before use; damage becomes a warning naming the
 * file and offset, and reading goes on with the next chunk it can trust.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* asprintf */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "input.h"
#include "trace_codec.h"
#include "trace_format.h"
#include "vec.h"

struct rthread {
	uint32_t pid, tid;
};

struct trace_reader {
	char *path;
	int fd;
	uint64_t size;			/* at open: a growing file is read to there */
	uint64_t off;			/* where the next frame should start */
	bool done;
	uint32_t next_seq;		/* seq the next chunk should have */
	struct trace_header hdr;

	char **strs;			/* by id; NULL where a chunk was lost */
	uint32_t nstrs, strs_cap;
	uint64_t str_bytes;

	uint8_t *stored;		/* the current chunk's payload */
	size_t stored_cap;
	uint8_t *raw;			/* ... inflated */
	size_t raw_cap;
	uint8_t *scan;			/* resync window */

	/* The EVENTS chunk being returned. */
	const uint8_t *p, *end, *payload;
	uint64_t ev_left, ev_index;
	uint64_t prev_ts;
	struct rthread *threads;
	uint32_t nthreads;
	size_t threads_cap;
	uint32_t chunk_seq;
	uint64_t chunk_off;
	uint64_t chunk_bad_names;

	struct trace_stats st;
	char *warn[MAX_WARNINGS + 2];	/* + "N more" line + NULL */
	unsigned int nwarn;
	uint64_t suppressed;
	char more[PATH_MAX + 64];
};

static void reader_warn(struct trace_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void reader_warn(struct trace_reader *r, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	/* A hostile file can cause a warning per chunk: keep the first. */
	if (r->nwarn == MAX_WARNINGS) {
		r->suppressed++;
		snprintf(r->more, sizeof(r->more),
			 "%s: %" PRIu64 " more warnings not shown", r->path,
			 r->suppressed);
		r->warn[MAX_WARNINGS] = r->more;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (asprintf(&r->warn[r->nwarn], "%s: %s", r->path, msg) < 0) {
		r->warn[r->nwarn] = NULL;
		return;
	}
	r->nwarn++;
}

/* Reads len bytes at off: len, fewer if the file got shorter, or -errno. */
static ssize_t read_at(const struct trace_reader *r, void *buf, size_t len,
		       uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(r->fd, (uint8_t *)buf + got, len - got,
				  (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int grow_bytes(uint8_t **p, size_t *cap, size_t len)
{
	uint8_t *n;

	if (len <= *cap)
		return 0;
	n = realloc(*p, len);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = len;
	return 0;
}

/* A bounds-checked view of a payload: a read past the end sets `bad`. */
struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t get_varint(struct cursor *c)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 10 && c->p < c->end; i++) {
		uint8_t b = *c->p++;

		/* The tenth byte holds bit 63 only. */
		if (i == 9 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

static uint32_t get_varint32(struct cursor *c)
{
	uint64_t v = get_varint(c);

	if (v > UINT32_MAX) {
		c->bad = true;
		return 0;
	}
	return (uint32_t)v;
}

/* Sync marker, frame CRC and lengths within the limits: the frame can be
 * trusted to say where the next one starts. */
static bool frame_decode(const uint8_t *b, struct frame *f)
{
	if (memcmp(b, chunk_sync, sizeof(chunk_sync)) ||
	    crc(b, 24) != get_le32(b + 24))
		return false;
	f->type = b[4];
	f->encoding = b[5];
	f->seq = get_le32(b + 8);
	f->stored_len = get_le32(b + 12);
	f->raw_len = get_le32(b + 16);
	f->payload_crc = get_le32(b + 20);
	if (f->stored_len > CHUNK_MAX || f->raw_len > CHUNK_MAX)
		return false;
	if (f->encoding == ENC_STORED && f->raw_len != f->stored_len)
		return false;
	if (f->encoding == ENC_ZLIB &&
	    f->raw_len > (uint64_t)f->stored_len * ZLIB_MAX_RATIO)
		return false;
	return true;
}

/* Offset of the first trustworthy frame at or after `from`, in *found:
 * 1, 0 if there is none, or -errno. */
static int find_frame(struct trace_reader *r, uint64_t from, uint64_t *found)
{
	const size_t window = 65536 + FRAME_SIZE - 1;
	uint64_t pos = from;
	struct frame f;

	if (!r->scan && !(r->scan = malloc(window)))
		return -ENOMEM;
	while (pos < r->size && r->size - pos >= FRAME_SIZE) {
		size_t want = r->size - pos < window ? r->size - pos : window;
		ssize_t got = read_at(r, r->scan, want, pos);
		size_t i, last;

		if (got < 0)
			return (int)got;
		if ((size_t)got < FRAME_SIZE)
			return 0;
		last = (size_t)got - FRAME_SIZE;	/* last start that fits */
		for (i = 0; i <= last; i++) {
			uint8_t *s = memchr(r->scan + i, chunk_sync[0],
					    last - i + 1);

			if (!s)
				break;
			i = (size_t)(s - r->scan);
			if (frame_decode(s, &f)) {
				*found = pos + i;
				return 1;
			}
		}
		pos += last + 1;
	}
	return 0;
}

static void reader_end(struct trace_reader *r)
{
	r->done = true;
	if (!r->st.footer)
		reader_warn(r, "offset %" PRIu64
			    ": no footer: the recording was cut short",
			    r->off);
}

/* The frame at r->off is not trustworthy: skip to the next one that is. */
static int resync(struct trace_reader *r)
{
	uint64_t from = r->off, next = 0;
	int ret = find_frame(r, from + 1, &next);

	if (ret < 0)
		return ret;
	r->st.bad_chunks++;
	if (!ret) {
		reader_warn(r, "offset %" PRIu64
			    ": damaged chunk header and no chunk after it, %"
			    PRIu64 " bytes skipped", from, r->size - from);
		r->st.bytes_skipped += r->size - from;
		r->off = r->size;
		return 0;
	}
	reader_warn(r, "offset %" PRIu64 ": damaged chunk header, %" PRIu64
		    " bytes skipped to the next chunk at offset %" PRIu64,
		    from, next - from, next);
	r->st.bytes_skipped += next - from;
	r->off = next;
	return 0;
}

/* The payload of chunk f, inflated if needed, in *raw: 0, or -EBADMSG
 * (warned) if zlib disagrees with the frame, or -errno. */
static int chunk_payload(struct trace_reader *r, const struct frame *f,
			 const uint8_t **raw)
{
	uLongf dlen = f->raw_len;
	uLong slen = f->stored_len;
	int zret, err;

	if (f->encoding == ENC_STORED) {
		*raw = r->stored;
		return 0;
	}
	err = grow_bytes(&r->raw, &r->raw_cap, f->raw_len ? f->raw_len : 1);
	if (err)
		return err;
	zret = uncompress2(r->raw, &dlen, r->stored, &slen);
	if (zret == Z_MEM_ERROR)
		return -ENOMEM;
	if (zret != Z_OK || dlen != f->raw_len || slen != f->stored_len) {
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": zlib: %s, skipped", f->seq, r->off,
			    zret != Z_OK ? zError(zret) :
			    "size differs from the chunk header");
		return -EBADMSG;
	}
	*raw = r->raw;
	return 0;
}

static int strings_reserve_ids(struct trace_reader *r, uint32_t n)
{
	uint32_t cap = r->strs_cap ? r->strs_cap : 256;
	char **p;

	if (n <= r->strs_cap)
		return 0;
	while (cap < n)
		cap *= 2;
	p = realloc(r->strs, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + r->strs_cap, 0, (cap - r->strs_cap) * sizeof(*p));
	r->strs = p;
	r->strs_cap = cap;
	return 0;
}

/* A STRINGS payload: first id, count, then each string's length and
 * bytes. Strings before a malformed one are kept. 0, -EBADMSG (with *why)
 * or -ENOMEM. */
static int decode_strings(struct trace_reader *r, const uint8_t *raw,
			  uint32_t len, const char **why)
{
	struct cursor c = { raw, raw + len, false };
	uint32_t first = get_varint32(&c), count = get_varint32(&c), i;
	int err;

	if (c.bad) {
		*why = "bad header";
		return -EBADMSG;
	}
	if (first < r->nstrs) {
		*why = "ids already defined";
		return -EBADMSG;
	}
	/* Each string takes a byte at least. */
	if (first > STRINGS_MAX || count > STRINGS_MAX - first ||
	    count > (size_t)(c.end - c.p)) {
		*why = "too many strings";
		return -EBADMSG;
	}
	err = strings_reserve_ids(r, first + count);
	if (err)
		return err;
	for (i = 0; i < count; i++) {
		uint32_t slen = get_varint32(&c);
		char *s;

		if (c.bad || slen > STRING_MAX || slen > c.end - c.p) {
			*why = "bad string length";
			return -EBADMSG;
		}
		if (memchr(c.p, 0, slen)) {
			*why = "NUL in a string";
			return -EBADMSG;
		}
		if (r->str_bytes + slen > STRING_BYTES_MAX) {
			*why = "string table too large";
			return -EBADMSG;
		}
		s = malloc((size_t)slen + 1);
		if (!s)
			return -ENOMEM;
		memcpy(s, c.p, slen);
		s[slen] = 0;
		c.p += slen;
		r->strs[first + i] = s;
		r->nstrs = first + i + 1;
		r->str_bytes += slen;
	}
	if (c.p != c.end) {
		*why = "bytes after the last string";
		return -EBADMSG;
	}
	return 0;
}

static int load_strings(struct trace_reader *r, const struct frame *f,
			const uint8_t *raw)
{
	const char *why = NULL;
	int err = decode_strings(r, raw, f->raw_len, &why);

	if (err == -EBADMSG) {
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": malformed strings (%s), rest skipped", f->seq,
			    r->off, why);
		r->st.bad_chunks++;
		return 0;
	}
	if (!err)
		r->st.chunks++;
	return err;
}

static void load_footer(struct trace_reader *r, const struct frame *f,
			const uint8_t *raw)
{
	uint64_t end = r->off + FRAME_SIZE + f->stored_len;

	if (f->raw_len < FOOTER_SIZE) {
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": footer of %" PRIu32 " bytes, expected %d",
			    f->seq, r->off, f->raw_len, FOOTER_SIZE);
		r->st.bad_chunks++;
		return;
	}
	r->st.footer = true;
	r->st.footer_events = get_le64(raw);
	r->st.footer_lost = get_le64(raw + 8);
	r->st.footer_chunks = get_le64(raw + 16);
	r->done = true;
	if (end < r->size)
		reader_warn(r, "offset %" PRIu64 ": %" PRIu64
			    " bytes after the footer ignored", end,
			    r->size - end);
}

static void start_events(struct trace_reader *r, const struct frame *f,
			 const uint8_t *raw)
{
	struct cursor c = { raw, raw + f->raw_len, false };
	uint64_t n = get_varint(&c);

	r->chunk_seq = f->seq;
	r->chunk_off = r->off;
	r->chunk_bad_names = 0;
	if (c.bad || n > (uint64_t)(c.end - c.p) / EVENT_MIN_RAW) {
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": malformed events (bad count), skipped",
			    f->seq, r->off);
		r->st.bad_chunks++;
		return;
	}
	r->payload = raw;
	r->p = c.p;
	r->end = c.end;
	r->ev_left = n;
	r->ev_index = 0;
	r->prev_ts = 0;
	r->nthreads = 0;
	if (!n)
		r->st.chunks++;
}

/* Reads the next chunk, which leaves either events to return, strings
 * added, the footer read, damage skipped, or the end reached. */
static int read_chunk(struct trace_reader *r)
{
	uint64_t left = r->size - r->off;
	uint8_t fb[FRAME_SIZE];
	const uint8_t *raw;
	struct frame f;
	ssize_t got;
	int err;

	if (r->off >= r->size) {
		reader_end(r);
		return 0;
	}
	got = read_at(r, fb, left < FRAME_SIZE ? left : FRAME_SIZE, r->off);
	if (got < 0)
		return (int)got;
	if ((size_t)got < FRAME_SIZE) {
		r->st.truncated = true;
		r->st.bytes_skipped += left;
		reader_warn(r, "offset %" PRIu64 ": file ends %" PRIu64
			    " bytes into a chunk header: the last chunk is lost",
			    r->off, left);
		r->off = r->size;
		reader_end(r);
		return 0;
	}
	if (!frame_decode(fb, &f))
		return resync(r);
	if (f.seq != r->next_seq)
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": expected chunk %" PRIu32 " (chunks missing)",
			    f.seq, r->off, r->next_seq);
	r->next_seq = f.seq + 1;
	if (FRAME_SIZE + (uint64_t)f.stored_len > left) {
		r->st.truncated = true;
		r->st.bytes_skipped += left;
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": file ends %" PRIu64 " of %" PRIu64
			    " bytes into it: the last chunk is lost", f.seq,
			    r->off, left, FRAME_SIZE + (uint64_t)f.stored_len);
		r->off = r->size;
		reader_end(r);
		return 0;
	}
	err = grow_bytes(&r->stored, &r->stored_cap,
			 f.stored_len ? f.stored_len : 1);
	if (err)
		return err;
	got = read_at(r, r->stored, f.stored_len, r->off + FRAME_SIZE);
	if (got < 0)
		return (int)got;
	if ((size_t)got < f.stored_len || crc(r->stored, f.stored_len) !=
	    f.payload_crc) {
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": CRC mismatch, skipped", f.seq, r->off);
		err = 0;
		goto skip;
	}
	if (f.type != CHUNK_STRINGS && f.type != CHUNK_EVENTS &&
	    f.type != CHUNK_FOOTER) {
		/* From a newer minor version: not ours to read. */
		r->st.chunks++;
		goto next;
	}
	if (f.encoding != ENC_STORED && f.encoding != ENC_ZLIB) {
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": unknown encoding %u, skipped", f.seq, r->off,
			    f.encoding);
		err = 0;
		goto skip;
	}
	err = chunk_payload(r, &f, &raw);
	if (err == -EBADMSG) {
		err = 0;
		goto skip;
	}
	if (err)
		return err;
	if (f.type == CHUNK_FOOTER) {
		load_footer(r, &f, raw);
	} else if (f.type == CHUNK_STRINGS) {
		err = load_strings(r, &f, raw);
		if (err)
			return err;
	} else {
		start_events(r, &f, raw);
	}
	goto next;
skip:
	r->st.bad_chunks++;
	r->st.bytes_skipped += FRAME_SIZE + (uint64_t)f.stored_len;
next:
	r->off += FRAME_SIZE + (uint64_t)f.stored_len;
	return err;
}

static void end_events(struct trace_reader *r, bool ok)
{
	if (r->chunk_bad_names)
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": %" PRIu64 " events name a string the file does not hold",
			    r->chunk_seq, r->chunk_off, r->chunk_bad_names);
	r->chunk_bad_names = 0;
	r->ev_left = 0;
	if (ok)
		r->st.chunks++;
	else
		r->st.bad_chunks++;
}

static int malformed(struct trace_reader *r, const char *why)
{
	reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
		    ": malformed event %" PRIu64 " at payload byte %zu (%s), rest of the chunk skipped",
		    r->chunk_seq, r->chunk_off, r->ev_index,
		    (size_t)(r->p - r->payload), why);
	end_events(r, false);
	return 0;
}

static int add_thread(struct trace_reader *r, uint32_t pid, uint32_t tid)
{
	if (VEC_RESERVE(r->threads, r->threads_cap, (size_t)r->nthreads + 1))
		return -ENOMEM;
	r->threads[r->nthreads++] = (struct rthread){ pid, tid };
	return 0;
}

/* One event of the current chunk: 1, 0 if it was malformed (the rest of
 * the chunk is dropped), or -ENOMEM. */
static int decode_event(struct trace_reader *r, struct trace_event *ev)
{
	struct cursor c = { r->p, r->end, false };
	uint32_t idx, name;
	uint8_t tag;
	int err;

	if (c.p == c.end)
		return malformed(r, "payload ends early");
	tag = *c.p++;
	if (!(tag & TAG_KIND) || (tag & TAG_RESERVED))
		return malformed(r, "bad tag");
	idx = get_varint32(&c);
	if (!c.bad && idx == r->nthreads) {
		uint32_t pid = get_varint32(&c), tid = get_varint32(&c);

		if (c.bad)
			return malformed(r, "bad thread");
		if (r->nthreads == CHUNK_THREADS_MAX)
			return malformed(r, "too many threads");
		err = add_thread(r, pid, tid);
		if (err)
			return err;
	} else if (c.bad || idx > r->nthreads) {
		return malformed(r, "bad thread index");
	}
	ev->ts_ns = r->prev_ts + unzigzag(get_varint(&c));
	name = get_varint32(&c);
	ev->arg1 = tag & TAG_ARG1 ? get_varint(&c) : 0;
	ev->arg2 = tag & TAG_ARG2 ? get_varint(&c) : 0;
	if (c.bad)
		return malformed(r, "malformed field");
	ev->kind = tag & TAG_KIND;
	ev->pid = r->threads[idx].pid;
	ev->tid = r->threads[idx].tid;
	ev->name_id = name - 1;		/* 0 is TRACE_NO_STRING */
	if (ev->name_id != TRACE_NO_STRING &&
	    (ev->name_id >= r->nstrs || !r->strs[ev->name_id])) {
		ev->name_id = TRACE_NO_STRING;
		r->chunk_bad_names++;
		r->st.bad_names++;
	}
	r->prev_ts = ev->ts_ns;
	r->p = c.p;
	r->ev_index++;
	r->st.events++;
	if (--r->ev_left)
		return 1;
	if (r->p != r->end)
		reader_warn(r, "chunk %" PRIu32 " at offset %" PRIu64
			    ": %zu bytes after the last event ignored",
			    r->chunk_seq, r->chunk_off,
			    (size_t)(r->end - r->p));
	end_events(r, true);
	return 1;
}

int trace_reader__next(struct trace_reader *r, struct trace_event *ev)
{
	int ret;

	for (;;) {
		if (r->ev_left) {
			ret = decode_event(r, ev);
			if (ret)
				return ret;
			continue;
		}
		if (r->done)
			return 0;
		ret = read_chunk(r);
		if (ret < 0)
			return ret;
	}
}

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static char *dup_bytes(const uint8_t *p, uint32_t len)
{
	char *s = malloc((size_t)len + 1);

	if (s) {
		memcpy(s, p, len);
		s[len] = 0;
	}
	return s;
}

/* The variable part of a header whose CRC matched: pids, command line,
 * version. Fields a newer minor version appends are after them. */
static int parse_header_fields(struct trace_reader *r, const uint8_t *b,
			       uint32_t hsize, char *err, size_t errlen)
{
	const uint8_t *p = b + HDR_FIXED, *end = b + hsize - 4;
	struct trace_header *h = &r->hdr;
	uint32_t i, len;

	h->npids = get_le32(b + 36);
	if (h->npids > TRACE_MAX_PIDS || h->npids > (end - p) / 4)
		return fail(err, errlen, -EINVAL,
			    "%s: header: %" PRIu32 " pids: expected at most %d in %" PRIu32 " header bytes",
			    r->path, h->npids, TRACE_MAX_PIDS, hsize);
	for (i = 0; i < h->npids; i++, p += 4)
		h->pids[i] = get_le32(p);
	for (i = 0; i < 2; i++) {
		char **dst = i ? &h->version : &h->cmdline;

		if (end - p < 4 || (len = get_le32(p)) > STRING_MAX ||
		    len > end - p - 4)
			return fail(err, errlen, -EINVAL,
				    "%s: header: %s length beyond the header (%" PRIu32 " bytes)",
				    r->path, i ? "version" : "command line",
				    hsize);
		*dst = dup_bytes(p + 4, len);
		if (!*dst)
			return -ENOMEM;
		p += 4 + len;
	}
	return 0;
}

static int read_header(struct trace_reader *r, char *err, size_t errlen)
{
	uint8_t fixed[HDR_FIXED], *b = NULL;
	uint32_t hsize, mark, want, found;
	size_t n = r->size < HDR_FIXED ? (size_t)r->size : HDR_FIXED;
	ssize_t got;
	char hex[3 * sizeof(trace_magic) + 1] = "";
	size_t i, hlen = 0;
	int ret;

	if (!r->size)
		return fail(err, errlen, -EINVAL,
			    "%s: empty file: not an sptrace trace", r->path);
	got = read_at(r, fixed, n, 0);
	if (got < 0)
		return fail(err, errlen, (int)got, "%s: %s", r->path,
			    strerror((int)-got));
	n = (size_t)got;
	if (memcmp(fixed, trace_magic, n < 8 ? n : 8)) {
		/* A JSON summary is the likely mistake: say so, and where it
		 * can go, rather than its bytes. */
		for (i = 0; i < n && strchr(" \t\r\n", fixed[i]); i++)
			;
		if (i < n && fixed[i] == '{')
			return fail(err, errlen, -EINVAL,
				    "%s: this is a JSON summary, not a trace file "
				    "(sptrace record writes those): use diff or "
				    "report, which read both", r->path);
		for (i = 0; i < sizeof(trace_magic) && i < n; i++)
			hlen += (size_t)sprintf(hex + hlen, "%s%02x",
						i ? " " : "", fixed[i]);
		return fail(err, errlen, -EINVAL,
			    "%s: not an sptrace trace: expected magic 89 53 50 54 0d 0a 1a 0a, found %s",
			    r->path, hex);
	}
	if (n >= 12 && get_le16(fixed + 8) > TRACE_MAJOR)
		return fail(err, errlen, -EPROTONOSUPPORT,
			    "%s: format version %u.%u is newer than this sptrace reads (%d.x); upgrade sptrace",
			    r->path, get_le16(fixed + 8),
			    get_le16(fixed + 10), TRACE_MAJOR);
	if (n >= 12 && get_le16(fixed + 8) < TRACE_MAJOR)
		return fail(err, errlen, -EINVAL,
			    "%s: format version %u.%u: expected %d.x",
			    r->path, get_le16(fixed + 8),
			    get_le16(fixed + 10), TRACE_MAJOR);
	if (n < HDR_FIXED)
		return fail(err, errlen, -EINVAL,
			    "%s: short header: expected at least %d bytes, found %zu",
			    r->path, HDR_MIN, n);
	hsize = get_le32(fixed + 12);
	if (hsize < HDR_MIN || hsize > HDR_MAX)
		return fail(err, errlen, -EINVAL,
			    "%s: bad header size: expected %d to %u bytes, found %" PRIu32,
			    r->path, HDR_MIN, HDR_MAX, hsize);
	if (hsize > r->size)
		return fail(err, errlen, -EINVAL,
			    "%s: short header: expected %" PRIu32 " bytes, found %" PRIu64,
			    r->path, hsize, r->size);
	mark = get_le32(fixed + 16);
	if (mark != BYTE_ORDER_MARK)
		return fail(err, errlen, -EINVAL,
			    "%s: bad byte-order mark: expected 0x%08x, found 0x%08" PRIx32,
			    r->path, BYTE_ORDER_MARK, mark);
	b = malloc(hsize);
	if (!b)
		return -ENOMEM;
	got = read_at(r, b, hsize, 0);
	if (got != (ssize_t)hsize) {
		ret = fail(err, errlen, got < 0 ? (int)got : -EINVAL,
			   "%s: cannot read the header: %s", r->path,
			   got < 0 ? strerror((int)-got) : "file got shorter");
		goto cleanup;
	}
	want = get_le32(b + hsize - 4);
	found = crc(b, hsize - 4);
	if (want != found) {
		ret = fail(err, errlen, -EINVAL,
			   "%s: damaged header: CRC expected %08" PRIx32 ", found %08" PRIx32,
			   r->path, want, found);
		goto cleanup;
	}
	ret = parse_header_fields(r, b, hsize, err, errlen);
	if (ret)
		goto cleanup;
	r->hdr.major = get_le16(b + 8);
	r->hdr.minor = get_le16(b + 10);
	r->hdr.start_realtime_ns = get_le64(b + 20);
	r->hdr.start_mono_ns = get_le64(b + 28);
	if (r->size == hsize) {
		ret = fail(err, errlen, -EINVAL,
			   "%s: header only (%" PRIu32 " bytes), no chunks: the recording was cut short before its first flush",
			   r->path, hsize);
		goto cleanup;
	}
	r->off = hsize;
cleanup:
	free(b);
	return ret;
}

int trace_reader__open(const char *path, struct trace_reader **out,
		       char *err, size_t errlen)
{
	struct trace_reader *r;
	struct stat st;
	int ret;

	*out = NULL;
	if (err && errlen)
		err[0] = 0;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return fail(err, errlen, -ENOMEM, "%s: %s", path,
			    strerror(ENOMEM));
	}
	r->fd = input__open(path);
	if (r->fd < 0) {
		ret = fail(err, errlen, r->fd, "%s: %s", path,
			   input__strerror(r->fd));
		goto cleanup;
	}
	if (fstat(r->fd, &st)) {
		ret = fail(err, errlen, -errno, "%s: %s", path,
			   strerror(errno));
		goto cleanup;
	}
	r->size = (uint64_t)st.st_size;
	ret = read_header(r, err, errlen);
	if (ret == -ENOMEM)
		fail(err, errlen, ret, "%s: %s", path, strerror(ENOMEM));
	if (ret)
		goto cleanup;
	*out = r;
	return 0;
cleanup:
	trace_reader__close(r);
	return ret;
}

const struct trace_header *trace_reader__header(const struct trace_reader *r)
{
	return &r->hdr;
}

const char *trace_reader__string(const struct trace_reader *r, uint32_t id)
{
	return id < r->nstrs ? r->strs[id] : NULL;
}

void trace_reader__stats(const struct trace_reader *r, struct trace_stats *st)
{
	*st = r->st;
}

const char *const *trace_reader__warnings(const struct trace_reader *r)
{
	return (const char *const *)r->warn;
}

void trace_reader__close(struct trace_reader *r)
{
	uint32_t i;

	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	for (i = 0; i < r->nstrs; i++)
		free(r->strs[i]);
	for (i = 0; i < r->nwarn; i++)
		free(r->warn[i]);
	free(r->strs);
	free(r->stored);
	free(r->raw);
	free(r->scan);
	free(r->threads);
	free(r->hdr.cmdline);
	free(r->hdr.version);
	free(r->path);
	free(r);
}
