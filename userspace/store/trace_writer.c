// SPDX-License-Identifier: MIT
/*
 * The .spt trace file's writer, for `sptrace record`: a header, then
 * self-contained chunks of strings and events, ended every CHUNK_TARGET raw
 * bytes or on trace_writer__flush(), and a footer. Why the bytes are laid
 * out so: trace_codec.h.
 */
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
#include "output.h"
#include "trace_codec.h"
#include "trace_format.h"
#include "vec.h"

struct buf {
	uint8_t *data;
	size_t len, cap;
};

struct wthread {
	uint32_t pid, tid;
	uint32_t idx;
	bool used;
};

struct trace_writer {
	int fd;
	int err;		/* sticky: the first failed write */
	/* The header, written with the first chunk: until then its start
	 * times can still be set (trace_writer__set_start()). */
	uint8_t *hdr;
	size_t hdr_len;
	bool hdr_written;
	uint64_t off;		/* end of the last whole chunk */
	uint32_t seq;		/* chunks written */
	uint64_t events;

	/* Interned strings: contents in `arena`, by id in `soff`/`slen`,
	 * found by content through `shash` (id + 1, 0 = free slot). */
	char *arena;
	size_t arena_len, arena_cap;
	uint32_t *soff, *slen;
	uint32_t nstrings, strings_cap;
	uint32_t *shash;
	uint32_t shash_cap;

	/* Strings not written yet: the body of the next STRINGS chunk. */
	struct buf pending;
	uint32_t pending_first, pending_count;

	/* The EVENTS chunk being filled (payload from HEADROOM on). */
	struct buf ev;
	uint32_t ev_count;
	uint64_t ev_prev_ts;
	struct wthread *threads;	/* this chunk's (pid, tid) -> index */
	uint32_t nthreads, threads_cap;

	uint8_t *out;			/* frame + compressed payload */
	size_t out_cap;
};

static int buf_reserve(struct buf *b, size_t more)
{
	return VEC_RESERVE_MIN(b->data, b->cap, b->len + more, 4096);
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A write failed: the file's state is unknown from here on, so every later
 * call fails too. Cut the partial chunk off so the file still ends on a
 * chunk boundary (best effort: the reader copes with a partial chunk). */
static int writer_failed(struct trace_writer *w, int err)
{
	if (ftruncate(w->fd, (off_t)w->off)) {
		/* nothing better to do; the reader recovers */
	}
	w->err = err;
	return err;
}

/* Frames the payload already at w->out + FRAME_SIZE and writes the chunk
 * with one write sequence (the header first, before the first chunk). */
static int emit_chunk(struct trace_writer *w, uint8_t type, uint8_t encoding,
		      uint32_t stored_len, uint32_t raw_len)
{
	uint8_t *f = w->out;
	int err;

	if (!w->hdr_written) {
		err = write_all(w->fd, w->hdr, w->hdr_len);
		if (err)
			return writer_failed(w, err);
		w->hdr_written = true;
		w->off = w->hdr_len;
	}

	memcpy(f, chunk_sync, sizeof(chunk_sync));
	f[4] = type;
	f[5] = encoding;
	put_le16(f + 6, 0);
	put_le32(f + 8, w->seq);
	put_le32(f + 12, stored_len);
	put_le32(f + 16, raw_len);
	put_le32(f + 20, crc(f + FRAME_SIZE, stored_len));
	put_le32(f + 24, crc(f, 24));
	err = write_all(w->fd, f, FRAME_SIZE + (size_t)stored_len);
	if (err)
		return writer_failed(w, err);
	w->off += FRAME_SIZE + (uint64_t)stored_len;
	w->seq++;
	return 0;
}

static int out_reserve(struct trace_writer *w, size_t len)
{
	uint8_t *p;

	if (len <= w->out_cap)
		return 0;
	p = realloc(w->out, len);
	if (!p)
		return -ENOMEM;
	w->out = p;
	w->out_cap = len;
	return 0;
}

static int write_zlib_chunk(struct trace_writer *w, uint8_t type,
			    const uint8_t *raw, size_t len)
{
	uLongf clen = compressBound((uLong)len);
	int err, zret;

	err = out_reserve(w, FRAME_SIZE + clen);
	if (err)
		return err;
	zret = compress2(w->out + FRAME_SIZE, &clen, raw, (uLong)len,
			 TRACE_ZLIB_LEVEL);
	if (zret == Z_MEM_ERROR)
		return -ENOMEM;
	if (zret != Z_OK)
		return -EIO;
	return emit_chunk(w, type, ENC_ZLIB, (uint32_t)clen, (uint32_t)len);
}

/* Writes `body` (at data + HEADROOM) prefixed by up to two varints, which
 * go right-aligned into the headroom so the payload is contiguous. */
static int write_payload(struct trace_writer *w, uint8_t type, struct buf *b,
			 uint64_t v0, uint64_t v1, int nv)
{
	uint8_t pre[HEADROOM];
	size_t n = put_varint(pre, v0);

	if (nv > 1)
		n += put_varint(pre + n, v1);
	memcpy(b->data + HEADROOM - n, pre, n);
	return write_zlib_chunk(w, type, b->data + HEADROOM - n,
				b->len - HEADROOM + n);
}

static int flush_strings(struct trace_writer *w)
{
	int err;

	if (!w->pending_count)
		return 0;
	err = write_payload(w, CHUNK_STRINGS, &w->pending, w->pending_first,
			    w->pending_count, 2);
	if (err)
		return err;
	w->pending.len = HEADROOM;
	w->pending_count = 0;
	return 0;
}

static void threads_reset(struct trace_writer *w)
{
	memset(w->threads, 0, w->threads_cap * sizeof(*w->threads));
	w->nthreads = 0;
}

static int flush_events(struct trace_writer *w)
{
	int err;

	if (!w->ev_count)
		return 0;
	err = write_payload(w, CHUNK_EVENTS, &w->ev, w->ev_count, 0, 1);
	if (err)
		return err;
	w->ev.len = HEADROOM;
	w->ev_count = 0;
	w->ev_prev_ts = 0;
	threads_reset(w);
	return 0;
}

int trace_writer__flush(struct trace_writer *w)
{
	int err;

	if (w->err)
		return w->err;
	/* Strings first: the events may use them. */
	err = flush_strings(w);
	if (!err)
		err = flush_events(w);
	return err;
}

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The slot for (s, len) in w->shash: the string's, or the free one where it
 * belongs. */
static uint32_t str_slot(const struct trace_writer *w, const char *s,
			 size_t len)
{
	uint32_t mask = w->shash_cap - 1;
	uint32_t j = (uint32_t)str_hash(s, len) & mask;

	for (;; j = (j + 1) & mask) {
		uint32_t id = w->shash[j];

		if (!id)
			return j;
		id--;
		if (w->slen[id] == len &&
		    !memcmp(w->arena + w->soff[id], s, len))
			return j;
	}
}

static int shash_grow(struct trace_writer *w)
{
	uint32_t *old = w->shash, old_cap = w->shash_cap, i;

	w->shash_cap = old_cap ? old_cap * 2 : 256;
	w->shash = calloc(w->shash_cap, sizeof(*w->shash));
	if (!w->shash) {
		w->shash = old;
		w->shash_cap = old_cap;
		return -ENOMEM;
	}
	for (i = 0; i < old_cap; i++) {
		uint32_t id = old[i];

		if (id)
			w->shash[str_slot(w, w->arena + w->soff[id - 1],
					  w->slen[id - 1])] = id;
	}
	free(old);
	return 0;
}

static int strings_reserve(struct trace_writer *w, size_t len)
{
	if (VEC_RESERVE_MIN(w->arena, w->arena_cap, w->arena_len + len, 4096))
		return -ENOMEM;
	if (w->nstrings == w->strings_cap) {
		uint32_t cap = w->strings_cap ? w->strings_cap * 2 : 256;
		uint32_t *off = realloc(w->soff, cap * sizeof(*off));
		uint32_t *len2;

		if (!off)
			return -ENOMEM;
		w->soff = off;
		len2 = realloc(w->slen, cap * sizeof(*len2));
		if (!len2)
			return -ENOMEM;
		w->slen = len2;
		w->strings_cap = cap;
	}
	if ((w->nstrings + 1) * 2 > w->shash_cap)
		return shash_grow(w);
	return 0;
}

/*
 * -E2BIG if the string is longer than STRING_MAX bytes or the file already
 * holds STRINGS_MAX strings or STRING_BYTES_MAX bytes of them: the limits
 * the reader enforces.
 */
int trace_writer__string(struct trace_writer *w, const char *s, uint32_t *id)
{
	size_t len = strnlen(s, STRING_MAX + 1);
	uint32_t slot;
	int err;

	if (w->err)
		return w->err;
	if (len > STRING_MAX)
		return -E2BIG;
	if (w->shash_cap) {
		slot = str_slot(w, s, len);
		if (w->shash[slot]) {
			*id = w->shash[slot] - 1;
			return 0;
		}
	}
	if (w->nstrings >= STRINGS_MAX ||
	    w->arena_len + len > STRING_BYTES_MAX)
		return -E2BIG;
	err = strings_reserve(w, len);
	if (!err)
		err = buf_reserve(&w->pending, 5 + len);
	if (err)
		return err;
	memcpy(w->arena + w->arena_len, s, len);
	w->soff[w->nstrings] = (uint32_t)w->arena_len;
	w->slen[w->nstrings] = (uint32_t)len;
	w->arena_len += len;
	w->shash[str_slot(w, s, len)] = w->nstrings + 1;

	if (!w->pending_count)
		w->pending_first = w->nstrings;
	w->pending.len += put_varint(w->pending.data + w->pending.len, len);
	memcpy(w->pending.data + w->pending.len, s, len);
	w->pending.len += len;
	w->pending_count++;
	*id = w->nstrings++;

	if (w->pending.len - HEADROOM >= CHUNK_TARGET)
		return flush_strings(w);
	return 0;
}

static uint32_t thread_hash(uint32_t pid, uint32_t tid)
{
	return (pid * 2654435761u) ^ (tid * 40503u);
}

static struct wthread *thread_slot(struct trace_writer *w, uint32_t pid,
				   uint32_t tid)
{
	uint32_t mask = w->threads_cap - 1;
	uint32_t j = thread_hash(pid, tid) & mask;

	while (w->threads[j].used &&
	       (w->threads[j].pid != pid || w->threads[j].tid != tid))
		j = (j + 1) & mask;
	return &w->threads[j];
}

static int threads_grow(struct trace_writer *w)
{
	struct wthread *old = w->threads;
	uint32_t old_cap = w->threads_cap, i;

	w->threads_cap = old_cap * 2;
	w->threads = calloc(w->threads_cap, sizeof(*w->threads));
	if (!w->threads) {
		w->threads = old;
		w->threads_cap = old_cap;
		return -ENOMEM;
	}
	for (i = 0; i < old_cap; i++)
		if (old[i].used)
			*thread_slot(w, old[i].pid, old[i].tid) = old[i];
	free(old);
	return 0;
}

/* The chunk's index for (pid, tid); *is_new if the event must define it. */
static int thread_index(struct trace_writer *w, uint32_t pid, uint32_t tid,
			uint32_t *idx, bool *is_new)
{
	struct wthread *t = thread_slot(w, pid, tid);
	int err;

	*is_new = !t->used;
	if (t->used) {
		*idx = t->idx;
		return 0;
	}
	if ((w->nthreads + 1) * 2 > w->threads_cap) {
		err = threads_grow(w);
		if (err)
			return err;
		t = thread_slot(w, pid, tid);
	}
	*t = (struct wthread){ .pid = pid, .tid = tid, .idx = w->nthreads,
			       .used = true };
	*idx = w->nthreads++;
	return 0;
}

/* -EINVAL for a kind the format does not know or a string id never
 * interned: the file would not say what the caller meant. */
int trace_writer__event(struct trace_writer *w, const struct trace_event *ev)
{
	uint8_t tag = (uint8_t)ev->kind, *p;
	uint32_t idx;
	bool is_new;
	int err;

	if (w->err)
		return w->err;
	if (!ev->kind || ev->kind >= SP_EV__MAX)
		return -EINVAL;
	if (ev->name_id != TRACE_NO_STRING && ev->name_id >= w->nstrings)
		return -EINVAL;
	if (w->ev.len + EVENT_MAX_RAW > w->ev.cap) {
		err = trace_writer__flush(w);
		if (err)
			return err;
	}
	err = thread_index(w, ev->pid, ev->tid, &idx, &is_new);
	if (err)
		return err;

	if (ev->arg1)
		tag |= TAG_ARG1;
	if (ev->arg2)
		tag |= TAG_ARG2;
	p = w->ev.data + w->ev.len;
	*p++ = tag;
	p += put_varint(p, idx);
	if (is_new) {
		p += put_varint(p, ev->pid);
		p += put_varint(p, ev->tid);
	}
	p += put_varint(p, zigzag(ev->ts_ns - w->ev_prev_ts));
	p += put_varint(p, (uint32_t)(ev->name_id + 1));	/* NO_STRING: 0 */
	if (ev->arg1)
		p += put_varint(p, ev->arg1);
	if (ev->arg2)
		p += put_varint(p, ev->arg2);
	w->ev.len = (size_t)(p - w->ev.data);
	w->ev_prev_ts = ev->ts_ns;
	w->ev_count++;
	w->events++;

	if (w->ev.len - HEADROOM >= CHUNK_TARGET)
		return trace_writer__flush(w);
	return 0;
}

uint64_t trace_writer__events(const struct trace_writer *w)
{
	return w->events;
}

static int write_footer(struct trace_writer *w, uint64_t lost)
{
	uint8_t *p;
	int err;

	err = out_reserve(w, FRAME_SIZE + FOOTER_SIZE);
	if (err)
		return err;
	p = w->out + FRAME_SIZE;
	put_le64(p, w->events);
	put_le64(p + 8, lost);
	put_le64(p + 16, w->seq);
	return emit_chunk(w, CHUNK_FOOTER, ENC_STORED, FOOTER_SIZE,
			  FOOTER_SIZE);
}

/* The header bytes for h (docs/trace-file.md, "Header"). Command line and
 * version longer than STRING_MAX bytes are cut there. */
static uint8_t *build_header(const struct trace_header *h, size_t *lenp)
{
	const char *cmd = h->cmdline ? h->cmdline : "";
	const char *ver = h->version ? h->version : SPTRACE_VERSION;
	size_t clen = strnlen(cmd, STRING_MAX), vlen = strnlen(ver, STRING_MAX);
	size_t len = HDR_FIXED + 4 * (size_t)h->npids + 4 + clen + 4 + vlen + 4;
	uint8_t *b = malloc(len), *p;
	uint32_t i;

	if (!b)
		return NULL;
	memcpy(b, trace_magic, sizeof(trace_magic));
	put_le16(b + 8, TRACE_MAJOR);
	put_le16(b + 10, TRACE_MINOR);
	put_le32(b + 12, (uint32_t)len);
	put_le32(b + 16, BYTE_ORDER_MARK);
	put_le64(b + 20, h->start_realtime_ns);
	put_le64(b + 28, h->start_mono_ns);
	put_le32(b + 36, h->npids);
	p = b + HDR_FIXED;
	for (i = 0; i < h->npids; i++, p += 4)
		put_le32(p, h->pids[i]);
	put_le32(p, (uint32_t)clen);
	memcpy(p + 4, cmd, clen);
	p += 4 + clen;
	put_le32(p, (uint32_t)vlen);
	memcpy(p + 4, ver, vlen);
	p += 4 + vlen;
	put_le32(p, crc(b, len - 4));
	*lenp = len;
	return b;
}

static void writer_free(struct trace_writer *w)
{
	free(w->hdr);
	free(w->arena);
	free(w->soff);
	free(w->slen);
	free(w->shash);
	free(w->pending.data);
	free(w->ev.data);
	free(w->threads);
	free(w->out);
	free(w);
}

static int writer_alloc(struct trace_writer **out)
{
	struct trace_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->threads_cap = 64;
	w->threads = calloc(w->threads_cap, sizeof(*w->threads));
	if (!w->threads || buf_reserve(&w->pending, HEADROOM) ||
	    buf_reserve(&w->ev, HEADROOM + CHUNK_TARGET + EVENT_MAX_RAW)) {
		writer_free(w);
		return -ENOMEM;
	}
	w->pending.len = HEADROOM;
	w->ev.len = HEADROOM;
	*out = w;
	return 0;
}

int trace_writer__open(const char *path, bool force,
		       const struct trace_header *h, struct trace_writer **out)
{
	struct trace_writer *w = NULL;
	int err;

	*out = NULL;
	if (h->npids > TRACE_MAX_PIDS)
		return -EINVAL;
	err = writer_alloc(&w);
	if (err)
		return err;
	w->hdr = build_header(h, &w->hdr_len);
	if (!w->hdr) {
		writer_free(w);
		return -ENOMEM;
	}
	/* A device or FIFO (/dev/null, a pipe to a compressor) is written as
	 * it is, as every output is (output.c). */
	w->fd = output__create(path, force ? OUTPUT_REPLACE : OUTPUT_NEW);
	if (w->fd < 0) {
		err = w->fd;
		writer_free(w);
		return err;
	}
	*out = w;
	return 0;
}

int trace_writer__set_start(struct trace_writer *w, uint64_t realtime_ns,
			    uint64_t mono_ns)
{
	if (w->hdr_written)
		return -EALREADY;
	put_le64(w->hdr + 20, realtime_ns);
	put_le64(w->hdr + 28, mono_ns);
	put_le32(w->hdr + w->hdr_len - 4, crc(w->hdr, w->hdr_len - 4));
	return 0;
}

int trace_writer__close(struct trace_writer *w, uint64_t lost)
{
	int err;

	if (!w)
		return -EINVAL;
	err = trace_writer__flush(w);
	if (!err)
		err = write_footer(w, lost);
	/* Delayed allocation reports a full disk only here. Special files
	 * that cannot sync say EINVAL or EROFS. */
	if (!err && fsync(w->fd) && errno != EINVAL && errno != EROFS)
		err = -errno;
	if (close(w->fd) && !err)
		err = -errno;
	writer_free(w);
	return err;
}
