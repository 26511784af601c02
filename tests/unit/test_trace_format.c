// SPDX-License-Identifier: MIT
/*
 * Unit tests of the trace writer and reader (userspace/store/trace_*.c):
 * round trips, the size target on a realistic workload, every kind of
 * damage the reader must survive (made by writing a good file and then
 * cutting, flipping or rewriting its bytes, or by framing hostile payloads
 * with valid CRCs), the v1.0 golden file, and the writer's refusal to
 * overwrite files or follow symlinks.
 *
 * The helpers that build and take apart files (b_header, b_chunk,
 * walk_chunks) follow docs/trace-file.md, not the code under test, so they
 * check the specification too.
 *
 *   test_trace_format [GOLDEN [GOLDEN11 [GOLDEN12]]]  tests/golden/v1_*.spt
 *   test_trace_format --write-golden OUT      (how v1_0.spt was made)
 *   test_trace_format --write-golden-1.1 OUT  (how v1_1.spt was made)
 *   test_trace_format --write-golden-1.2 OUT  (how v1_2.spt was made)
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "summary.h"
#include "trace_format.h"
#include "trace_summary.h"
#include "check.h"
/* What today's writer writes (trace_codec.h: TRACE_MINOR). */
#define TODAY_MINOR 2

#define HDR_SIZE_OFF 12
#define FRAME 28
#define FOOTER_BYTES 24
#define NO_STR TRACE_NO_STRING

static char tmpdir[] = "/tmp/sptrace-ttf-XXXXXX";

static uint64_t xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/* A path in the test's directory (rotating buffers: a few at a time). */
static const char *tpath(const char *name)
{
	static char bufs[8][256];
	static unsigned int n;
	char *b = bufs[n++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, name);
	return b;
}

/* ------------------------------------------------------- byte buffers */

struct bytes {
	uint8_t *p;
	size_t len, cap;
};

static void b_put(struct bytes *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void b_u8(struct bytes *b, uint8_t v)
{
	b_put(b, &v, 1);
}

static void b_le(struct bytes *b, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		b_u8(b, (uint8_t)(v >> (8 * i)));
}

static void b_varint(struct bytes *b, uint64_t v)
{
	while (v >= 0x80) {
		b_u8(b, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	b_u8(b, (uint8_t)v);
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void set_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t crc(const uint8_t *p, size_t n)
{
	return (uint32_t)crc32(0, p, (uInt)n);
}

/* A v1 header per docs/trace-file.md, with `extra` unknown bytes before the CRC
 * (what a newer minor version may add). */
static void b_header(struct bytes *b, uint16_t minor, size_t extra)
{
	static const uint8_t magic[8] = { 0x89, 'S', 'P', 'T', '\r', '\n',
					  0x1a, '\n' };
	size_t start = b->len, i;

	b_put(b, magic, 8);
	b_le(b, 1, 2);
	b_le(b, minor, 2);
	b_le(b, 0, 4);			/* size, set below */
	b_le(b, 0x0a0b0c0d, 4);
	b_le(b, 1000, 8);
	b_le(b, 2000, 8);
	b_le(b, 1, 4);
	b_le(b, 77, 4);
	b_le(b, 3, 4);
	b_put(b, "cmd", 3);
	b_le(b, 1, 4);
	b_put(b, "v", 1);
	for (i = 0; i < extra; i++)
		b_u8(b, (uint8_t)i);
	set_le32(b->p + start + HDR_SIZE_OFF, (uint32_t)(b->len - start + 4));
	b_le(b, crc(b->p + start, b->len - start), 4);
}

/* A frame per docs/trace-file.md around stored bytes as they are. */
static void b_frame(struct bytes *b, uint8_t type, uint8_t enc, uint32_t seq,
		    const uint8_t *stored, size_t len, uint32_t raw_len)
{
	uint8_t f[FRAME];

	memcpy(f, "SPCK", 4);
	f[4] = type;
	f[5] = enc;
	f[6] = f[7] = 0;
	set_le32(f + 8, seq);
	set_le32(f + 12, (uint32_t)len);
	set_le32(f + 16, raw_len);
	set_le32(f + 20, crc(stored, len));
	set_le32(f + 24, crc(f, 24));
	b_put(b, f, FRAME);
	b_put(b, stored, len);
}

/* A chunk: encoding 1 (zlib) compresses the payload, others store it. */
static void b_chunk(struct bytes *b, uint8_t type, uint8_t enc, uint32_t seq,
		    const uint8_t *payload, size_t len)
{
	uLongf clen = compressBound((uLong)len);
	uint8_t *z = malloc(clen + 1);

	if (enc != 1) {
		b_frame(b, type, enc, seq, payload, len, (uint32_t)len);
	} else {
		if (compress2(z, &clen, payload, (uLong)len, 6) != Z_OK)
			abort();
		b_frame(b, type, enc, seq, z, clen, (uint32_t)len);
	}
	free(z);
}

static void b_footer(struct bytes *b, uint32_t seq, uint64_t events,
		     uint64_t lost, uint64_t chunks)
{
	struct bytes p = { 0 };

	b_le(&p, events, 8);
	b_le(&p, lost, 8);
	b_le(&p, chunks, 8);
	b_chunk(b, 3, 0, seq, p.p, p.len);
	free(p.p);
}

static void fix_frame_crc(uint8_t *frame)
{
	set_le32(frame + 24, crc(frame, 24));
}

static bool slurp(const char *path, struct bytes *b)
{
	FILE *f = fopen(path, "rb");
	uint8_t buf[65536];
	size_t n;

	memset(b, 0, sizeof(*b));
	if (!f)
		return false;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		b_put(b, buf, n);
	fclose(f);
	return true;
}

static void spit(const char *path, const void *p, size_t len)
{
	FILE *f;

	unlink(path);
	f = fopen(path, "wb");
	/* len 0: p may be NULL (an empty file read back), which fwrite()
	 * must not be given even for no bytes. */
	if (!f || (len && fwrite(p, 1, len, f) != len) || fclose(f))
		abort();
}

struct chunk_info {
	size_t off, end;
	uint8_t type;
	uint32_t seq, stored, raw;
	uint32_t first_id, nids;	/* STRINGS: ids it defines */
};

/* The chunks of a well-formed file, by walking frames (docs/trace-file.md). */
static size_t walk_chunks(const struct bytes *b, struct chunk_info *ci,
			  size_t max)
{
	size_t off = le32(b->p + HDR_SIZE_OFF), n = 0;

	while (off + FRAME <= b->len && n < max) {
		const uint8_t *f = b->p + off;
		struct chunk_info *c = &ci[n++];

		c->off = off;
		c->type = f[4];
		c->seq = le32(f + 8);
		c->stored = le32(f + 12);
		c->raw = le32(f + 16);
		c->end = off + FRAME + c->stored;
		if (c->type == 1) {
			uint8_t *raw = malloc(c->raw);
			uLongf dlen = c->raw;
			const uint8_t *p;
			uint64_t v[2] = { 0, 0 };
			int i, sh;

			if (uncompress(raw, &dlen, f + FRAME, c->stored) != Z_OK)
				abort();
			for (i = 0, p = raw; i < 2; i++)
				for (sh = 0;; sh += 7, p++) {
					v[i] |= (uint64_t)(*p & 0x7f) << sh;
					if (!(*p & 0x80)) {
						p++;
						break;
					}
				}
			c->first_id = (uint32_t)v[0];
			c->nids = (uint32_t)v[1];
			free(raw);
		}
		off = c->end;
	}
	return n;
}

/* ------------------------------------------------------ read it back */

struct readback {
	struct trace_reader *r;
	struct trace_event *ev;
	size_t n, cap;
	struct trace_stats st;
	char warnings[16384];
	int nwarn;
	int err, next_err;
	char msg[512];
};

/* Reads the whole file; the reader stays open in rb->r (rb_free). */
static int read_all(const char *path, struct readback *rb)
{
	const char *const *w;
	struct trace_event ev;
	size_t off = 0;
	int ret;

	memset(rb, 0, sizeof(*rb));
	rb->err = trace_reader__open(path, &rb->r, rb->msg, sizeof(rb->msg));
	if (rb->err)
		return rb->err;
	while ((ret = trace_reader__next(rb->r, &ev)) > 0) {
		if (rb->n == rb->cap) {
			rb->cap = rb->cap ? rb->cap * 2 : 1024;
			rb->ev = realloc(rb->ev, rb->cap * sizeof(ev));
			if (!rb->ev)
				abort();
		}
		rb->ev[rb->n++] = ev;
	}
	rb->next_err = ret;
	/* At the end, next keeps saying so. */
	CHECK(trace_reader__next(rb->r, &ev) == ret);
	trace_reader__stats(rb->r, &rb->st);
	for (w = trace_reader__warnings(rb->r); *w; w++, rb->nwarn++)
		off += (size_t)snprintf(rb->warnings + off,
					off < sizeof(rb->warnings) ?
					sizeof(rb->warnings) - off : 0,
					"%s\n", *w);
	return 0;
}

/* read_all that must succeed: a failure to open is a test failure. */
static bool read_ok(const char *path, struct readback *rb, int line)
{
	if (!read_all(path, rb))
		return true;
	printf("FAIL line %d: %s\n", line, rb->msg);
	check_failed++;
	return false;
}

#define READ_OK(path, rb) read_ok(path, rb, __LINE__)

static void rb_free(struct readback *rb)
{
	trace_reader__close(rb->r);
	free(rb->ev);
	rb->r = NULL;
	rb->ev = NULL;
}

static bool ev_eq(const struct trace_event *a, const struct trace_event *b)
{
	return a->ts_ns == b->ts_ns && a->arg1 == b->arg1 &&
	       a->arg2 == b->arg2 && a->pid == b->pid && a->tid == b->tid &&
	       a->name_id == b->name_id && a->kind == b->kind;
}

/* All events equal, reporting the first difference. */
static void check_events(const struct trace_event *got, size_t ngot,
			 const struct trace_event *want, size_t nwant,
			 int line)
{
	size_t i;

	if (ngot != nwant) {
		printf("FAIL line %d: %zu events, want %zu\n", line, ngot,
		       nwant);
		check_failed++;
	}
	for (i = 0; i < ngot && i < nwant; i++) {
		if (ev_eq(&got[i], &want[i]))
			continue;
		printf("FAIL line %d: event %zu: got kind %u ts %" PRIu64
		       " pid %u tid %u name %u arg1 %" PRIu64 " arg2 %" PRIu64
		       ", want kind %u ts %" PRIu64 " pid %u tid %u name %u arg1 %"
		       PRIu64 " arg2 %" PRIu64 "\n", line, i, got[i].kind,
		       got[i].ts_ns, got[i].pid, got[i].tid, got[i].name_id,
		       got[i].arg1, got[i].arg2, want[i].kind, want[i].ts_ns,
		       want[i].pid, want[i].tid, want[i].name_id,
		       want[i].arg1, want[i].arg2);
		check_failed++;
		return;
	}
}

#define CHECK_EVENTS(got, ngot, want, nwant) \
	check_events(got, ngot, want, nwant, __LINE__)
static void check_has(const char *haystack, const char *needle, int line)
{
	if (haystack && needle && strstr(haystack, needle))
		return;
	printf("FAIL %s:%d: \"%s\" not in:\n%s\n", __FILE__, line,
	       needle ? needle : "(null)", haystack ? haystack : "(null)");
	check_failed++;
}

#define CHECK_HAS(haystack, needle) check_has((haystack), (needle), __LINE__)

static struct trace_header test_header(void)
{
	struct trace_header h;

	memset(&h, 0, sizeof(h));
	h.start_realtime_ns = 1700000000000000000ull;
	h.start_mono_ns = 1000;
	h.npids = 1;
	h.pids[0] = 77;
	h.cmdline = "./host";
	h.version = "test";
	return h;
}

/* --------------------------------------------------- a small file */

/*
 * The file most damage tests start from: 80 events in 4 EVENTS chunks of
 * 20, strings in 3 STRINGS chunks (ids 0-5, 6-8, 9-10), footer (lost 5).
 * Chunks: S E S E E S E F.
 */
#define SMALL_EVENTS 80
static struct trace_event small_ev[SMALL_EVENTS];

static void write_small(const char *path)
{
	struct trace_header h = test_header();
	struct trace_writer *w;
	uint64_t rng = 42, ts = 5000;
	uint32_t nstr = 0, id;
	char name[32];
	int i, err;

	unlink(path);
	err = trace_writer__open(path, false, &h, &w);
	CHECK_U64(err, 0);
	if (err)
		abort();
	for (i = 0; i < SMALL_EVENTS; i++) {
		struct trace_event *e = &small_ev[i];
		int nnew = i == 0 ? 6 : i == 20 ? 3 : i == 60 ? 2 : 0;

		while (nnew--) {
			snprintf(name, sizeof(name), "query_%u", nstr);
			CHECK_U64(trace_writer__string(w, name, &id), 0);
			CHECK_U64(id, nstr);
			nstr++;
		}
		ts += 1000 + xorshift(&rng) % 100000;
		*e = (struct trace_event){
			.ts_ns = ts, .pid = 77,
			.tid = 77 + (uint32_t)(xorshift(&rng) % 3),
			.kind = (uint16_t)(1 + xorshift(&rng) % (SP_EV__MAX - 1)),
			.name_id = i % 7 == 3 ? NO_STR :
				   (uint32_t)(xorshift(&rng) % nstr),
		};
		if (e->kind == SP_EV_MARK || e->kind == SP_EV_ALLOC)
			e->arg1 = xorshift(&rng) % 5000;
		if (e->kind == SP_EV_ALLOC || e->kind == SP_EV_FREE)
			e->arg2 = 0x7f0000000000ull + xorshift(&rng) % 4096;
		CHECK_U64(trace_writer__event(w, e), 0);
		if (i % 20 == 19 && i != SMALL_EVENTS - 1)
			CHECK_U64(trace_writer__flush(w), 0);
	}
	CHECK_U64(trace_writer__close(w, 5), 0);
}

/* ------------------------------------------------------------- tests */

static void test_round_trip(void)
{
	const char *path = tpath("round_trip.spt");
	struct trace_header h = test_header();
	struct trace_writer *w;
	struct readback rb;
	enum { N = 200000, NSTR = 300 };
	struct trace_event *ev = calloc(N, sizeof(*ev));
	static char strs[NSTR][300];
	uint32_t ids[NSTR], id, nids = 0, i, tids[50];
	char *big = malloc(65538);
	struct trace_event probe;
	uint64_t rng = 7, ts = 1ull << 40;
	int err;

	/* Strings with any bytes but NUL: every byte value, UTF-8, control
	 * characters, the empty string, the longest allowed. */
	for (i = 0; i < 255; i++)
		strs[0][i] = (char)(i + 1);
	strs[0][255] = 0;
	strcpy(strs[1], "名前 ✓ ünïcødé \xf0\x9f\x94\xa5");
	strcpy(strs[2], "\x01\x1b[31mred\x7f\t\r\n");
	strcpy(strs[3], "");
	for (i = 4; i < NSTR; i++)
		snprintf(strs[i], sizeof(strs[i]), "rustc_query::q%u", i);
	memset(big, 'x', 65537);
	big[65536] = big[65537] = 0;

	h.npids = 3;
	h.pids[0] = 100;
	h.pids[1] = 200;
	h.pids[2] = UINT32_MAX;
	h.cmdline = "./engine --name 'ünï' \t\x01";
	h.version = "9.9.9-test";
	err = trace_writer__open(path, false, &h, &w);
	CHECK_U64(err, 0);
	if (err)
		goto out;

	CHECK_U64(trace_writer__string(w, big, &id), 0);	/* 65536: ok */
	CHECK_STR(big + 65536, "");
	big[65536] = 'x';
	CHECK_U64(trace_writer__string(w, big, &id), (uint64_t)-E2BIG);
	CHECK_U64(id, 0);
	for (i = 0; i < 50; i++)
		tids[i] = 1000 + i * 7;

	for (i = 0; i < N; i++) {
		struct trace_event *e = &ev[i];
		uint64_t r = xorshift(&rng);

		/* Strings keep arriving, so STRINGS chunks come between
		 * EVENTS chunks; re-interning gives the same id. */
		if (nids < NSTR && (i % 500 == 0)) {
			CHECK_U64(trace_writer__string(w, strs[nids], &id), 0);
			ids[nids] = id;
			CHECK_U64(id, nids + 1);	/* after `big` */
			nids++;
		}
		if (i % 1000 == 1) {
			uint32_t k = (uint32_t)(r % nids);
			char copy[300];

			strcpy(copy, strs[k]);
			CHECK_U64(trace_writer__string(w, copy, &id), 0);
			CHECK_U64(id, ids[k]);
		}
		switch (r % 8) {
		case 0:
			ts += r % 7;			/* same ns, or close */
			break;
		case 1:
			ts -= r % 50000;		/* out of order */
			break;
		case 2:
			ts += (r >> 8) % 10000000000ull;
			break;
		default:
			ts += 1000 + (r >> 8) % 1000000;
		}
		e->ts_ns = i == 777 ? UINT64_MAX : i == 778 ? 0 : ts;
		e->kind = (uint16_t)(1 + (r >> 3) % (SP_EV__MAX - 1));
		e->pid = i % 100 == 0 ? UINT32_MAX : 4242;
		e->tid = tids[(r >> 13) % 50];
		e->name_id = (r >> 20) % 9 == 0 ? NO_STR :
			     ids[(r >> 24) % nids];
		e->arg1 = (r >> 40) % 3 == 0 ? xorshift(&rng) : 0;
		e->arg2 = (r >> 42) % 3 == 0 ? xorshift(&rng) >> (r % 64) : 0;
		if (i == 999)
			e->arg1 = e->arg2 = UINT64_MAX;
		if (i == 1000)
			e->arg1 = e->arg2 = 1;
		err = trace_writer__event(w, e);
		if (err) {
			CHECK_U64(err, 0);
			break;
		}
		if (i % 77777 == 0)
			CHECK_U64(trace_writer__flush(w), 0);
	}
	CHECK_U64(trace_writer__events(w), N);
	/* What the format cannot say is refused, not written wrong. */
	probe = ev[0];
	probe.kind = 0;
	CHECK_U64(trace_writer__event(w, &probe), (uint64_t)-EINVAL);
	probe.kind = SP_EV__MAX;
	CHECK_U64(trace_writer__event(w, &probe), (uint64_t)-EINVAL);
	probe.kind = SP_EV_MARK;
	probe.name_id = NSTR + 5;
	CHECK_U64(trace_writer__event(w, &probe), (uint64_t)-EINVAL);
	CHECK_U64(trace_writer__events(w), N);
	CHECK_U64(trace_writer__close(w, 7), 0);

	if (read_all(path, &rb)) {
		CHECK_STR(rb.msg, "");
		goto out;
	}
	CHECK_EVENTS(rb.ev, rb.n, ev, N);
	CHECK_U64(rb.next_err, 0);
	CHECK_U64(rb.st.events, N);
	CHECK(rb.st.chunks >= 20);
	CHECK_U64(rb.st.chunks, rb.st.footer_chunks);
	CHECK_U64(rb.st.bad_chunks, 0);
	CHECK_U64(rb.st.bytes_skipped, 0);
	CHECK_U64(rb.st.bad_names, 0);
	CHECK(rb.st.footer);
	CHECK(!rb.st.truncated);
	CHECK_U64(rb.st.footer_events, N);
	CHECK_U64(rb.st.footer_lost, 7);
	CHECK_U64(rb.nwarn, 0);
	CHECK_U64(trace_reader__header(rb.r)->major, 1);
	CHECK_U64(trace_reader__header(rb.r)->minor, TODAY_MINOR);
	CHECK_U64(trace_reader__header(rb.r)->start_realtime_ns,
		  h.start_realtime_ns);
	CHECK_U64(trace_reader__header(rb.r)->start_mono_ns, h.start_mono_ns);
	CHECK_U64(trace_reader__header(rb.r)->npids, 3);
	CHECK_U64(trace_reader__header(rb.r)->pids[0], 100);
	CHECK_U64(trace_reader__header(rb.r)->pids[1], 200);
	CHECK_U64(trace_reader__header(rb.r)->pids[2], UINT32_MAX);
	CHECK_STR(trace_reader__header(rb.r)->cmdline, h.cmdline);
	CHECK_STR(trace_reader__header(rb.r)->version, "9.9.9-test");
	big[65536] = 0;
	CHECK_STR(trace_reader__string(rb.r, 0), big);
	for (i = 0; i < nids; i++)
		CHECK_STR(trace_reader__string(rb.r, ids[i]), strs[i]);
	CHECK(!trace_reader__string(rb.r, nids + 1));
	CHECK(!trace_reader__string(rb.r, NO_STR));
	rb_free(&rb);
out:
	free(big);
	free(ev);
}

/* The golden file's content: tests/golden/README.md. */
#define G_T 5000000000000ull
#define G_PTR 0x7f0012345000ull
/* String ids: 0-5 are written before the first EVENTS chunk, 6-7 after
 * it, before the second. */
enum { G_MAIN, G_WORKER, G_TYPECK, G_BORROWCK, G_PARSE, G_PHASE, G_LOCK,
       G_CODEGEN, G_NSTR };
static const char *const golden_str[G_NSTR] = {
	"main", "worker-1", "typeck", "borrowck", "parse ünïcødé ✓",
	"phase-2", "blocked\ton\x01lock", "codegen",
};
static const struct trace_event golden_ev[] = {
	{ G_T + 1000, 0, 0, 4242, 4242, G_MAIN, SP_EV_THREAD_NAME },
	{ G_T + 1500, 0, 0, 4242, 4243, G_WORKER, SP_EV_THREAD_NAME },
	{ G_T + 2000, 0, 0, 4242, 4242, G_TYPECK, SP_EV_QUERY_BEGIN },
	{ G_T + 2750, 0, 0, 4242, 4243, G_PARSE, SP_EV_QUERY_BEGIN },
	{ G_T + 3000, 0, 0, 4242, 4242, G_BORROWCK, SP_EV_QUERY_BEGIN },
	{ G_T + 3100, 0, 0, 4242, 4242, G_PARSE, SP_EV_CACHE_HIT },
	{ G_T + 3050, 17, 0, 4242, 4243, G_PHASE, SP_EV_MARK },
	{ G_T + 4000, 4096, G_PTR, 4242, 4242, NO_STR, SP_EV_ALLOC },
	{ G_T + 5000, 0, 0, 4242, 4242, G_BORROWCK, SP_EV_QUERY_END },
	{ G_T + 6000, 0, G_PTR, 4242, 4242, NO_STR, SP_EV_FREE },
	/* flush: chunk 2 of events, with strings 6 and 7 before it */
	{ G_T + 1000000, 0, 0, 4242, 4243, G_LOCK, SP_EV_BLOCKED_BEGIN },
	{ G_T + 2500000, 0, 0, 4242, 4243, G_LOCK, SP_EV_BLOCKED_END },
	{ G_T + 2600000, 0, 0, 4242, 4242, G_CODEGEN, SP_EV_INCR_LOAD_BEGIN },
	{ G_T + 2700000, 0, 0, 4242, 4242, G_CODEGEN, SP_EV_INCR_LOAD_END },
	{ G_T + 3000000, 0, 0, 4242, 4242, G_TYPECK, SP_EV_QUERY_END },
	{ G_T + 3100000, 0, 0, 4242, 4243, G_PARSE, SP_EV_QUERY_END },
	{ G_T + 3200000, UINT64_MAX, 0, 4250, 4250, G_PHASE, SP_EV_MARK },
};
#define G_NEV (sizeof(golden_ev) / sizeof(golden_ev[0]))

/* The 1.1 golden file (tests/golden/README.md): what 1.1 added to the
 * stream, each in one event. A process title (SP_EV_PROCESS_TITLE, its
 * title a string), and --query spec intervals that carry their track and
 * spec line in arg1/arg2 (+1 each; 0 in older files), on two tracks that
 * overlap: track 1's interval ends inside track 2's. */
enum { G11_TITLE, G11_TXN, G11_STMT, G11_NSTR };
static const char *const golden11_str[G11_NSTR] = {
	"postgres: bench bench [local] idle", "txn", "SELECT $1",
};
static const struct trace_event golden11_ev[] = {
	{ G_T + 100, 0, 0, 4300, 4300, G11_TITLE, SP_EV_PROCESS_TITLE },
	{ G_T + 1000, 1, 3, 4300, 4300, G11_TXN, SP_EV_QUERY_BEGIN },
	{ G_T + 1500, 2, 1, 4300, 4300, G11_STMT, SP_EV_QUERY_BEGIN },
	{ G_T + 4000, 1, 3, 4300, 4300, G11_TXN, SP_EV_QUERY_END },
	{ G_T + 4500, 2, 1, 4300, 4300, G11_STMT, SP_EV_QUERY_END },
	{ G_T + 4600, 0, 0, 4300, 4300, G11_TXN, SP_EV_CACHE_HIT },
};

/* The 1.2 golden file (tests/golden/README.md): what batched recording
 * added. A PAUSE event (kind 14: a batched flush took arg1 ns from its
 * timestamp on) inside two nested queries, which replay must take out of
 * the interval that began at that timestamp only; and a second thread
 * whose events, drained later, come after the first's in the file with
 * earlier timestamps. */
enum { G12_OUTER, G12_INNER, G12_NSTR };
static const char *const golden12_str[G12_NSTR] = { "outer", "inner" };
static const struct trace_event golden12_ev[] = {
	{ G_T + 1000, 0, 0, 4400, 4400, G12_OUTER, SP_EV_QUERY_BEGIN },
	{ G_T + 2000, 0, 0, 4400, 4400, G12_INNER, SP_EV_QUERY_BEGIN },
	{ G_T + 2000, 500, 0, 4400, 4400, TRACE_NO_STRING, SP_EV_PAUSE },
	{ G_T + 3000, 0, 0, 4400, 4400, G12_INNER, SP_EV_QUERY_END },
	{ G_T + 4000, 0, 0, 4400, 4400, G12_OUTER, SP_EV_QUERY_END },
	{ G_T + 1500, 0, 0, 4400, 4401, G12_INNER, SP_EV_QUERY_BEGIN },
	{ G_T + 1800, 0, 0, 4400, 4401, G12_INNER, SP_EV_QUERY_END },
};

/* One golden file: its header, its strings (the first `str_split` before
 * the first EVENTS chunk, the rest after the flush at event `flush_at`,
 * 0 for one chunk), its events and the lost count of its footer. */
struct golden {
	uint64_t realtime_ns;
	uint32_t pids[2];
	uint32_t npids;
	const char *cmdline;
	const char *const *str;
	uint32_t nstr, str_split;
	const struct trace_event *ev;
	size_t nev, flush_at;
	uint64_t lost;
	uint64_t chunks;
};

static const struct golden golden10 = {
	.realtime_ns = 1700000000123456789ull,
	.pids = { 4242, 4250 }, .npids = 2,
	.cmdline = "./query_engine --jobs 2 --name \"ünï\"",
	.str = golden_str, .nstr = G_NSTR, .str_split = G_LOCK,
	.ev = golden_ev, .nev = G_NEV, .flush_at = 10,
	.lost = 3, .chunks = 4,		/* S E S E */
};

static const struct golden golden11 = {
	.realtime_ns = 1764590400000000000ull,
	.pids = { 4300 }, .npids = 1,
	.cmdline = "-b /usr/lib/postgresql/15/bin/postgres",
	.str = golden11_str, .nstr = G11_NSTR, .str_split = G11_NSTR,
	.ev = golden11_ev,
	.nev = sizeof(golden11_ev) / sizeof(golden11_ev[0]),
	.lost = 0, .chunks = 2,		/* S E */
};

static const struct golden golden12 = {
	.realtime_ns = 1764600000000000000ull,
	.pids = { 4400 }, .npids = 1,
	.cmdline = "./batch_host cross 1",
	.str = golden12_str, .nstr = G12_NSTR, .str_split = G12_NSTR,
	.ev = golden12_ev,
	.nev = sizeof(golden12_ev) / sizeof(golden12_ev[0]),
	.lost = 0, .chunks = 2,		/* S E */
};

static int golden_strings(struct trace_writer *w, const struct golden *g,
			  uint32_t from, uint32_t to)
{
	uint32_t s, id;
	int err = 0;

	for (s = from; s < to && !err; s++) {
		err = trace_writer__string(w, g->str[s], &id);
		if (!err && id != s)
			err = -EINVAL;
	}
	return err;
}

static int write_golden(const struct golden *g, const char *path)
{
	struct trace_header h;
	struct trace_writer *w;
	uint32_t p;
	size_t i;
	int err;

	memset(&h, 0, sizeof(h));
	h.start_realtime_ns = g->realtime_ns;
	h.start_mono_ns = G_T;
	h.npids = g->npids;
	for (p = 0; p < g->npids; p++)
		h.pids[p] = g->pids[p];
	h.cmdline = (char *)g->cmdline;
	h.version = "0.1.0";
	err = trace_writer__open(path, false, &h, &w);
	if (err)
		return err;
	err = golden_strings(w, g, 0, g->str_split);
	for (i = 0; i < g->nev && !err; i++) {
		if (g->flush_at && i == g->flush_at) {
			err = trace_writer__flush(w);
			if (!err)
				err = golden_strings(w, g, g->str_split,
						     g->nstr);
		}
		if (!err)
			err = trace_writer__event(w, &g->ev[i]);
	}
	if (err) {
		trace_writer__close(w, 0);
		return err;
	}
	return trace_writer__close(w, g->lost);
}

/* `minor`: the file's version (1.0 for v1_0.spt; today's writer writes
 * TODAY_MINOR, the same content otherwise). */
static void check_golden(const struct golden *g, const char *path,
			 unsigned int minor)
{
	const struct trace_header *h;
	struct readback rb;
	uint32_t p;
	size_t i;

	if (read_all(path, &rb)) {
		printf("FAIL %s: %s\n", path, rb.msg);
		check_failed++;
		return;
	}
	h = trace_reader__header(rb.r);
	CHECK_U64(h->major, 1);
	CHECK_U64(h->minor, minor);
	CHECK_U64(h->start_realtime_ns, g->realtime_ns);
	CHECK_U64(h->start_mono_ns, G_T);
	CHECK_U64(h->npids, g->npids);
	for (p = 0; p < g->npids; p++)
		CHECK_U64(h->pids[p], g->pids[p]);
	CHECK_STR(h->cmdline, g->cmdline);
	CHECK_STR(h->version, "0.1.0");
	for (i = 0; i < g->nstr; i++)
		CHECK_STR(trace_reader__string(rb.r, (uint32_t)i), g->str[i]);
	CHECK(!trace_reader__string(rb.r, g->nstr));
	CHECK_EVENTS(rb.ev, rb.n, g->ev, g->nev);
	CHECK_U64(rb.next_err, 0);
	CHECK_U64(rb.st.events, g->nev);
	CHECK_U64(rb.st.chunks, g->chunks);
	CHECK_U64(rb.st.bad_chunks, 0);
	CHECK_U64(rb.st.bad_names, 0);
	CHECK(rb.st.footer);
	CHECK(!rb.st.truncated);
	CHECK_U64(rb.st.footer_events, g->nev);
	CHECK_U64(rb.st.footer_lost, g->lost);
	CHECK_U64(rb.st.footer_chunks, g->chunks);
	CHECK_U64(rb.nwarn, 0);
	rb_free(&rb);
}

/* The 1.2 file replayed: the pause is out of inner (2000 + 500 .. 3000)
 * and still in outer, as live aggregation shifted them; thread 4401's
 * earlier interval counts though it comes later; the duration is the
 * latest timestamp's. */
static void check_golden12_replay(const char *path)
{
	const struct sp_query_row *row;
	struct summary sum;
	unsigned int i;

	summary__init(&sum);
	CHECK_U64(trace_summary__read(path, &sum), 0);
	CHECK_U64(sum.nrows, 2);
	CHECK_U64(sum.duration_ns, 4000);
	for (i = 0; i < sum.nrows; i++) {
		row = &sum.rows[i];
		if (!strcmp(row->name, "inner")) {
			CHECK_U64(row->st.count, 2);
			CHECK_U64(row->st.total_ns, 500 + 300);
			CHECK_U64(row->st.max_ns, 500);
			CHECK_U64(row->st.min_ns, 300);
		} else {
			CHECK_STR(row->name, "outer");
			CHECK_U64(row->st.count, 1);
			CHECK_U64(row->st.total_ns, 3000);
			CHECK_U64(row->st.self_ns, 2500);
		}
	}
	summary__free(&sum);
}

static const char *golden_path = "tests/golden/v1_0.spt";
static const char *golden11_path = "tests/golden/v1_1.spt";
static const char *golden12_path = "tests/golden/v1_2.spt";

static void test_golden(void)
{
	/* The files checked in: format compatibility. Then today's writer of
	 * the same content, so the checks above can pass. */
	check_golden(&golden10, golden_path, 0);
	CHECK_U64(write_golden(&golden10, tpath("golden_fresh.spt")), 0);
	check_golden(&golden10, tpath("golden_fresh.spt"), TODAY_MINOR);
	check_golden(&golden11, golden11_path, 1);
	CHECK_U64(write_golden(&golden11, tpath("golden11_fresh.spt")), 0);
	check_golden(&golden11, tpath("golden11_fresh.spt"), TODAY_MINOR);
	check_golden(&golden12, golden12_path, 2);
	check_golden12_replay(golden12_path);
	CHECK_U64(write_golden(&golden12, tpath("golden12_fresh.spt")), 0);
	check_golden(&golden12, tpath("golden12_fresh.spt"), TODAY_MINOR);
	check_golden12_replay(tpath("golden12_fresh.spt"));
}

/* ---------------------------------------------------- size on disk */

struct sim_thread {
	uint32_t tid;
	uint64_t clock;
	uint32_t stack[16];
	uint16_t kind[16];
	int depth;
};

/* Log-uniform-ish gaps from 1 µs to 1 ms, to the nanosecond. */
static uint64_t gap_ns(uint64_t *rng)
{
	static const uint64_t decade[3] = { 1000, 10000, 100000 };
	uint64_t r = xorshift(rng), base = decade[r % 3];

	return base + (r >> 8) % (9 * base);
}

/*
 * A query engine on 4 threads: nested queries over 40 names (a few hot),
 * cache hits, blocking, incremental loads and marks. Returns file bytes
 * per event.
 */
static double realistic_bytes_per_event(const char *path, uint64_t nev,
					double *mev_per_s)
{
	struct trace_header h = test_header();
	struct sim_thread th[4];
	struct trace_writer *w;
	struct timespec t0, t1;
	uint32_t names[40], i;
	uint64_t rng = 99, n = 0;
	struct stat st;
	char name[64];
	int err = 0;

	*mev_per_s = 0;
	unlink(path);
	if (trace_writer__open(path, false, &h, &w))
		return 1e9;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "rustc_middle::query::q_%u", i);
		err |= trace_writer__string(w, name, &names[i]);
	}
	for (i = 0; i < 4; i++) {
		struct trace_event e = { .kind = SP_EV_THREAD_NAME,
					 .pid = 31337, .tid = 31337 + i };

		th[i] = (struct sim_thread){ .tid = 31337 + i,
					     .clock = 1000000000000ull + i * 333 };
		snprintf(name, sizeof(name), "worker-%u", i);
		err |= trace_writer__string(w, name, &e.name_id);
		e.ts_ns = th[i].clock;
		err |= trace_writer__event(w, &e);
	}
	while (!err && n < nev) {
		struct sim_thread *t = &th[0];
		struct trace_event e = { .pid = 31337 };
		uint64_t r = xorshift(&rng), a = r % 100;
		uint32_t nm = (uint32_t)((r >> 8) % 40 * ((r >> 16) % 40) / 40);

		for (i = 1; i < 4; i++)
			if (th[i].clock < t->clock)
				t = &th[i];
		t->clock += gap_ns(&rng);
		e.tid = t->tid;
		e.ts_ns = t->clock;
		if (t->depth && (a < 45 || t->depth == 12)) {
			t->depth--;
			e.kind = t->kind[t->depth] + 1;	/* the END */
			e.name_id = t->stack[t->depth];
		} else if (a < 85 || (a >= 92 && a < 98)) {
			e.kind = a < 85 ? SP_EV_QUERY_BEGIN :
				 a < 96 ? SP_EV_BLOCKED_BEGIN :
				 SP_EV_INCR_LOAD_BEGIN;
			e.name_id = names[nm];
			t->stack[t->depth] = e.name_id;
			t->kind[t->depth++] = e.kind;
		} else if (a < 92) {
			e.kind = SP_EV_CACHE_HIT;
			e.name_id = names[nm];
		} else {
			e.kind = SP_EV_MARK;
			e.name_id = names[0];
			e.arg1 = n;
		}
		err = trace_writer__event(w, &e);
		n++;
	}
	CHECK_U64(err, 0);
	n = trace_writer__events(w);
	CHECK_U64(trace_writer__close(w, 0), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*mev_per_s = (double)n / ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
				  (double)(t1.tv_nsec - t0.tv_nsec)) * 1e3;
	if (stat(path, &st))
		return 1e9;
	return (double)st.st_size / (double)n;
}

static void test_size_realistic(void)
{
	const char *path = tpath("realistic.spt");
	double mev = 0, bpe = realistic_bytes_per_event(path, 500000, &mev);
	struct readback rb;

	printf("     realistic workload: %.2f bytes/event on disk, %.1f M events/s written\n",
	       bpe, mev);
	CHECK(bpe <= 16.0);
	CHECK(bpe > 0.5);	/* the measure measures something */
	if (READ_OK(path, &rb)) {
		CHECK_U64(rb.n, 500004);
		CHECK(rb.st.chunks > 5);
		CHECK_U64(rb.nwarn, 0);
		rb_free(&rb);
	}
}

/* ---------------------------------------------- crash consistency */

static void copy_file(const char *from, const char *to)
{
	struct bytes b;

	if (!slurp(from, &b))
		abort();
	spit(to, b.p, b.len);
	free(b.p);
}

static void test_flush_visible(void)
{
	const char *path = tpath("live.spt"), *copy = tpath("live_copy.spt");
	struct trace_header h = test_header();
	struct trace_event e = { .pid = 77, .tid = 78,
				 .kind = SP_EV_QUERY_BEGIN };
	struct trace_writer *w;
	struct readback rb;
	uint32_t id;
	int i;

	if (trace_writer__open(path, false, &h, &w)) {
		CHECK(0);
		return;
	}
	/* Nothing yet: the header waits for its start (the instant counting
	 * is armed), set now, before the first chunk writes it. */
	copy_file(path, copy);
	CHECK_U64(read_all(copy, &rb), (uint64_t)-EINVAL);
	CHECK_HAS(rb.msg, "empty file");
	CHECK_HAS(rb.msg, copy);
	if (rb.r)
		rb_free(&rb);
	CHECK_U64(trace_writer__set_start(w, 1700000000123456789ull, 900), 0);

	CHECK_U64(trace_writer__string(w, "q", &id), 0);
	e.name_id = id;
	for (i = 0; i < 100; i++) {
		e.ts_ns = 1000 + (uint64_t)i;
		CHECK_U64(trace_writer__event(w, &e), 0);
	}
	CHECK_U64(trace_writer__flush(w), 0);
	CHECK_U64(trace_writer__flush(w), 0);	/* nothing new: no chunk */
	/* Written: its start can no longer change. */
	CHECK_U64(trace_writer__set_start(w, 1, 1), (uint64_t)-EALREADY);
	copy_file(path, copy);
	if (READ_OK(copy, &rb)) {
		CHECK_U64(trace_reader__header(rb.r)->start_realtime_ns,
			  1700000000123456789ull);
		CHECK_U64(trace_reader__header(rb.r)->start_mono_ns, 900);
		CHECK_U64(rb.n, 100);
		CHECK_U64(rb.st.chunks, 2);
		CHECK(!rb.st.footer);
		CHECK(!rb.st.truncated);
		CHECK_U64(rb.nwarn, 1);
		CHECK_HAS(rb.warnings, "no footer: the recording was cut short");
		CHECK_STR(trace_reader__string(rb.r, id), "q");
		rb_free(&rb);
	}
	for (i = 0; i < 50; i++)
		CHECK_U64(trace_writer__event(w, &e), 0);
	CHECK_U64(trace_writer__flush(w), 0);
	copy_file(path, copy);
	if (READ_OK(copy, &rb)) {
		CHECK_U64(rb.n, 150);
		CHECK_U64(rb.st.chunks, 3);
		rb_free(&rb);
	}
	CHECK_U64(trace_writer__close(w, 0), 0);
	if (READ_OK(path, &rb)) {
		CHECK_U64(rb.n, 150);
		CHECK(rb.st.footer);
		CHECK_U64(rb.st.footer_chunks, 3);
		CHECK_U64(rb.nwarn, 0);
		rb_free(&rb);
	}
}

/* Strings are written once 64 KiB of them wait, events or not. */
static void test_strings_alone(void)
{
	const char *path = tpath("strings.spt"), *copy = tpath("strings2.spt");
	struct trace_header h = test_header();
	struct trace_writer *w;
	struct readback rb;
	char s[64];
	uint32_t i, id;

	CHECK_U64(trace_writer__open(path, false, &h, &w), 0);
	for (i = 0; i < 5000; i++) {
		snprintf(s, sizeof(s), "a/rather/long/module/path::query_%05u", i);
		CHECK_U64(trace_writer__string(w, s, &id), 0);
		CHECK_U64(id, i);
	}
	copy_file(path, copy);
	if (READ_OK(copy, &rb)) {
		CHECK(rb.st.chunks >= 2);
		CHECK_STR(trace_reader__string(rb.r, 0),
			  "a/rather/long/module/path::query_00000");
		CHECK_STR(trace_reader__string(rb.r, 1000),
			  "a/rather/long/module/path::query_01000");
		rb_free(&rb);
	}
	CHECK_U64(trace_writer__close(w, 0), 0);
	if (READ_OK(path, &rb)) {
		CHECK_STR(trace_reader__string(rb.r, 4999),
			  "a/rather/long/module/path::query_04999");
		CHECK_U64(rb.nwarn, 0);
		rb_free(&rb);
	}
}

/* An empty recording is header + footer: valid, no events. */
static void test_empty_recording(void)
{
	const char *path = tpath("empty_rec.spt");
	struct trace_header h = test_header();
	struct trace_writer *w;
	struct readback rb;

	h.cmdline = NULL;
	h.version = NULL;
	h.npids = 0;
	CHECK_U64(trace_writer__open(path, false, &h, &w), 0);
	CHECK_U64(trace_writer__close(w, 0), 0);
	if (read_all(path, &rb)) {
		CHECK_STR(rb.msg, "");
		return;
	}
	CHECK_U64(rb.n, 0);
	CHECK(rb.st.footer);
	CHECK_U64(rb.st.footer_chunks, 0);
	CHECK_U64(rb.nwarn, 0);
	CHECK_STR(trace_reader__header(rb.r)->cmdline, "");
	CHECK(trace_reader__header(rb.r)->version != NULL);
	CHECK_U64(trace_reader__header(rb.r)->npids, 0);
	rb_free(&rb);
}

/* ---------------------------------------------------- bad headers */

static void expect_open_error(const char *path, int want, const char *msg)
{
	struct readback rb;
	int err = read_all(path, &rb);

	CHECK_U64(err, (uint64_t)want);
	if (!err) {
		rb_free(&rb);
		return;
	}
	CHECK(rb.r == NULL);
	CHECK_HAS(rb.msg, msg);
	CHECK_HAS(rb.msg, path);
	CHECK(!strchr(rb.msg, '\n'));
}

static void test_bad_headers(void)
{
	const char *good = tpath("good.spt"), *bad = tpath("bad.spt");
	char want[512];
	struct bytes b;
	uint32_t hsize;

	write_small(good);
	if (!slurp(good, &b))
		abort();
	hsize = le32(b.p + HDR_SIZE_OFF);

	expect_open_error(tpath("does-not-exist.spt"), -ENOENT,
			  "No such file");
	expect_open_error(tmpdir, -EISDIR, "directory");
	spit(bad, "", 0);
	expect_open_error(bad, -EINVAL, "empty file");
	spit(bad, b.p, 5);
	expect_open_error(bad, -EINVAL, "short header");
	spit(bad, b.p, 11);
	expect_open_error(bad, -EINVAL, "short header");
	spit(bad, b.p, 39);
	expect_open_error(bad, -EINVAL, "short header");
	spit(bad, b.p, hsize - 1);
	expect_open_error(bad, -EINVAL, "short header");
	spit(bad, b.p, hsize);
	expect_open_error(bad, -EINVAL, "header only");

	spit(bad, "PK\3\4 this is a zip, not a trace", 31);
	expect_open_error(bad, -EINVAL,
			  "expected magic 89 53 50 54 0d 0a 1a 0a, found 50 4b 03 04 20 74 68 69");
	b.p[3] = 'X';
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL, "not an sptrace trace");
	b.p[3] = 'T';

	/* Newer major: refused by version, before anything else is read
	 * (today's writer writes 1.2, so this is 2.2). */
	b.p[8] = 2;
	spit(bad, b.p, b.len);
	snprintf(want, sizeof(want),
		 "%s: format version 2.2 is newer than this sptrace reads (1.x); upgrade sptrace",
		 bad);
	{
		struct readback rb;

		CHECK_U64(read_all(bad, &rb), (uint64_t)-EPROTONOSUPPORT);
		CHECK_STR(rb.msg, want);
		if (rb.r)
			rb_free(&rb);
	}
	b.p[8] = 0;
	b.p[10] = 9;
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL, "format version 0.9: expected 1.x");
	b.p[8] = 1;
	b.p[10] = 1;

	set_le32(b.p + HDR_SIZE_OFF, 10);
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL, "bad header size");
	set_le32(b.p + HDR_SIZE_OFF, 0xffffffff);
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL, "found 4294967295");
	set_le32(b.p + HDR_SIZE_OFF, (uint32_t)b.len + 100);
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL, "short header");
	set_le32(b.p + HDR_SIZE_OFF, hsize);

	set_le32(b.p + 16, 0x0d0c0b0a);
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL,
			  "byte-order mark: expected 0x0a0b0c0d, found 0x0d0c0b0a");
	set_le32(b.p + 16, 0x0a0b0c0d);

	b.p[hsize - 8] ^= 0x20;		/* in the version string */
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL, "damaged header: CRC");
	b.p[hsize - 8] ^= 0x20;

	/* npids beyond the limit, with the CRC fixed up. */
	set_le32(b.p + 36, TRACE_MAX_PIDS + 1);
	set_le32(b.p + hsize - 4, crc(b.p, hsize - 4));
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL, "pids");
	set_le32(b.p + 36, 1);
	/* A string length past the header. */
	set_le32(b.p + 44, 0x7fffffff);
	set_le32(b.p + hsize - 4, crc(b.p, hsize - 4));
	spit(bad, b.p, b.len);
	expect_open_error(bad, -EINVAL, "command line length");
	free(b.p);
}

/* Older minor versions read; a newer minor's extra header fields and
 * chunk types are skipped. */
static void test_minor_versions(void)
{
	const char *good = tpath("good.spt"), *path = tpath("minor.spt");
	struct chunk_info ci[16];
	struct bytes b, out = { 0 };
	struct readback rb;
	uint32_t hsize;
	size_t n, i;
	uint8_t extra[5] = { 1, 2, 3, 4, 5 };

	write_small(good);
	if (!slurp(good, &b))
		abort();
	hsize = le32(b.p + HDR_SIZE_OFF);
	n = walk_chunks(&b, ci, 16);
	CHECK_U64(n, 8);

	/* Version 1.7: 9 more header bytes, and a chunk of type 200 after
	 * every chunk but the footer; seqs and CRCs redone. */
	b_put(&out, b.p, hsize - 4);
	out.p[10] = 7;
	b_put(&out, "new-field", 9);
	set_le32(out.p + HDR_SIZE_OFF, (uint32_t)out.len + 4);
	b_le(&out, crc(out.p, out.len), 4);
	for (i = 0; i < n; i++) {
		size_t at = out.len;

		b_put(&out, b.p + ci[i].off, ci[i].end - ci[i].off);
		set_le32(out.p + at + 8, (uint32_t)(2 * i));
		if (ci[i].type == 3)
			set_le32(out.p + at + FRAME + 16, (uint32_t)(2 * i));
		set_le32(out.p + at + 20, crc(out.p + at + FRAME,
					      ci[i].stored));
		fix_frame_crc(out.p + at);
		if (ci[i].type != 3)
			b_chunk(&out, 200, 0, (uint32_t)(2 * i + 1), extra,
				sizeof(extra));
	}
	spit(path, out.p, out.len);
	if (READ_OK(path, &rb)) {
		CHECK_U64(trace_reader__header(rb.r)->minor, 7);
		CHECK_STR(trace_reader__header(rb.r)->cmdline, "./host");
		CHECK_STR(trace_reader__header(rb.r)->version, "test");
		CHECK_EVENTS(rb.ev, rb.n, small_ev, SMALL_EVENTS);
		CHECK_U64(rb.nwarn, 0);
		CHECK_U64(rb.st.chunks, 14);
		CHECK_U64(rb.st.footer_chunks, 14);
		CHECK_U64(rb.st.bad_chunks, 0);
		rb_free(&rb);
	} else {
		CHECK_STR(rb.msg, "");
	}
	free(out.p);
	free(b.p);
}

/* ----------------------------------------------- damaged contents */

/*
 * What the reader must return for the small file when chunk `lost` (index
 * in ci) is gone: its events dropped if EVENTS, the names it defined
 * replaced by TRACE_NO_STRING if STRINGS. Returns how many.
 */
static size_t expect_without(const struct chunk_info *ci, size_t n,
			     size_t lost, struct trace_event *want,
			     uint64_t *bad_names)
{
	size_t i, k = 0, ev_chunk = 0, j;

	*bad_names = 0;
	for (i = 0; i < n; i++) {
		if (ci[i].type != 2)
			continue;
		for (j = 0; j < 20; j++) {
			struct trace_event e = small_ev[ev_chunk * 20 + j];

			if (i == lost)
				continue;
			if (lost < n && ci[lost].type == 1 &&
			    e.name_id != NO_STR &&
			    e.name_id >= ci[lost].first_id &&
			    e.name_id < ci[lost].first_id + ci[lost].nids) {
				e.name_id = NO_STR;
				(*bad_names)++;
			}
			want[k++] = e;
		}
		ev_chunk++;
	}
	return k;
}

static void test_truncation(void)
{
	const char *good = tpath("good.spt"), *path = tpath("cut.spt");
	struct trace_event want[SMALL_EVENTS];
	struct chunk_info ci[16];
	struct readback rb;
	struct bytes b;
	size_t n, len, i, complete, hsize;
	bool boundary;
	char w[256];

	write_small(good);
	if (!slurp(good, &b))
		abort();
	hsize = le32(b.p + HDR_SIZE_OFF);
	n = walk_chunks(&b, ci, 16);
	for (len = hsize + 1; len < b.len; len++) {
		spit(path, b.p, len);
		if (read_all(path, &rb)) {
			printf("FAIL cut at %zu: %s\n", len, rb.msg);
			check_failed++;
			continue;
		}
		for (i = 0, complete = 0, boundary = false; i < n; i++) {
			if (ci[i].end <= len && ci[i].type == 2)
				complete++;
			boundary |= ci[i].end == len;
		}
		memcpy(want, small_ev, sizeof(want));
		CHECK_EVENTS(rb.ev, rb.n, want, complete * 20);
		CHECK_U64(rb.next_err, 0);
		CHECK(!rb.st.footer);
		CHECK(rb.st.truncated == !boundary);
		CHECK_U64(rb.st.bad_chunks, 0);
		CHECK_U64(rb.st.bad_names, 0);
		snprintf(w, sizeof(w), "%s: offset %zu: no footer: the recording was cut short",
			 path, len);
		CHECK_HAS(rb.warnings, w);
		if (!boundary)
			CHECK_HAS(rb.warnings, "the last chunk is lost");
		CHECK_U64(rb.nwarn, boundary ? 1 : 2);
		rb_free(&rb);
	}

	/* Cut inside the zlib stream of the third EVENTS chunk (ci[4]). */
	len = ci[4].off + FRAME + ci[4].stored / 2;
	spit(path, b.p, len);
	if (READ_OK(path, &rb)) {
		CHECK_U64(rb.n, 40);
		snprintf(w, sizeof(w), "%s: chunk %u at offset %zu: file ends %zu of %u bytes into it: the last chunk is lost",
			 path, ci[4].seq, ci[4].off, len - ci[4].off,
			 FRAME + ci[4].stored);
		CHECK_HAS(rb.warnings, w);
		CHECK_U64(rb.st.bytes_skipped, len - ci[4].off);
		CHECK(rb.st.truncated);
		rb_free(&rb);
	}
	/* Cut inside a frame. */
	len = ci[4].off + 10;
	spit(path, b.p, len);
	if (READ_OK(path, &rb)) {
		CHECK_U64(rb.n, 40);
		CHECK_HAS(rb.warnings, "10 bytes into a chunk header");
		CHECK(rb.st.truncated);
		rb_free(&rb);
	}
	/* Missing footer only: every event, and the one warning. */
	spit(path, b.p, ci[n - 1].off);
	if (READ_OK(path, &rb)) {
		CHECK_EVENTS(rb.ev, rb.n, small_ev, SMALL_EVENTS);
		CHECK(!rb.st.truncated);
		CHECK(!rb.st.footer);
		CHECK_U64(rb.nwarn, 1);
		CHECK_HAS(rb.warnings, "no footer: the recording was cut short");
		rb_free(&rb);
	}
	free(b.p);
}

/* One flipped bit anywhere after the header costs exactly the chunk it
 * is in, whether it hits a frame (resync) or a payload (CRC). */
static void test_bit_flips(void)
{
	const char *good = tpath("good.spt"), *path = tpath("flip.spt");
	struct trace_event want[SMALL_EVENTS];
	struct chunk_info ci[16];
	struct readback rb;
	struct bytes b;
	size_t n, pos, k, nwant, hsize;
	uint64_t bad_names;
	char w[256];

	write_small(good);
	if (!slurp(good, &b))
		abort();
	hsize = le32(b.p + HDR_SIZE_OFF);
	n = walk_chunks(&b, ci, 16);
	CHECK_U64(n, 8);
	for (pos = 0; pos < b.len; pos++) {
		b.p[pos] ^= 0x10;
		spit(path, b.p, b.len);
		b.p[pos] ^= 0x10;
		if (pos < hsize) {
			/* The header has its own CRC: refused. */
			if (!read_all(path, &rb)) {
				printf("FAIL flip at %zu in the header: opened\n",
				       pos);
				check_failed++;
				rb_free(&rb);
			}
			continue;
		}
		if (read_all(path, &rb)) {
			printf("FAIL flip at %zu: %s\n", pos, rb.msg);
			check_failed++;
			continue;
		}
		for (k = 0; k < n && ci[k].end <= pos; k++)
			;
		nwant = expect_without(ci, n, k, want, &bad_names);
		CHECK_EVENTS(rb.ev, rb.n, want, nwant);
		CHECK_U64(rb.st.bad_names, bad_names);
		CHECK(rb.st.footer == (ci[k].type != 3));
		CHECK_U64(rb.st.bad_chunks, 1);
		CHECK_U64(rb.st.chunks, 6 + (ci[k].type == 3));
		CHECK(rb.nwarn >= 1);
		if (pos >= ci[k].off + FRAME) {
			snprintf(w, sizeof(w), "%s: chunk %u at offset %zu: CRC mismatch, skipped",
				 path, ci[k].seq, ci[k].off);
			CHECK_HAS(rb.warnings, w);
			CHECK_U64(rb.st.bytes_skipped, ci[k].end - ci[k].off);
		} else if (ci[k].type != 3) {
			snprintf(w, sizeof(w), "%s: offset %zu: damaged chunk header, %zu bytes skipped to the next chunk at offset %zu",
				 path, ci[k].off, ci[k].end - ci[k].off,
				 ci[k].end);
			CHECK_HAS(rb.warnings, w);
			CHECK_HAS(rb.warnings, "chunks missing");
		}
		rb_free(&rb);
	}
	free(b.p);
}

/* Rewrites one frame field and its frame CRC. */
static void set_frame_field(struct bytes *b, size_t off, int field_off,
			    uint32_t v)
{
	set_le32(b->p + off + field_off, v);
	fix_frame_crc(b->p + off);
}

static void test_huge_lengths(void)
{
	const char *good = tpath("good.spt"), *path = tpath("huge.spt");
	struct trace_event want[SMALL_EVENTS];
	struct chunk_info ci[16];
	struct readback rb;
	struct bytes b;
	size_t n, nwant;
	uint64_t bad_names;
	static const uint32_t lens[] = { 0xffffffff, 0x7fffffff,
					 (64u << 20) + 1 };
	int f;
	size_t i;

	write_small(good);
	if (!slurp(good, &b))
		abort();
	n = walk_chunks(&b, ci, 16);
	nwant = expect_without(ci, n, 3, want, &bad_names);
	/* Beyond the limits, stored or raw, with a valid frame CRC: the frame
	 * is not trusted, the reader resyncs, only chunk 3 is lost. */
	for (f = 12; f <= 16; f += 4) {
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			struct bytes c = { 0 };

			b_put(&c, b.p, b.len);
			set_frame_field(&c, ci[3].off, f, lens[i]);
			spit(path, c.p, c.len);
			free(c.p);
			if (read_all(path, &rb)) {
				CHECK(0);
				continue;
			}
			CHECK_EVENTS(rb.ev, rb.n, want, nwant);
			CHECK_HAS(rb.warnings, "damaged chunk header");
			CHECK(rb.st.footer);
			rb_free(&rb);
		}
	}
	/* Raw size more than zlib can inflate to from this many bytes. */
	set_frame_field(&b, ci[3].off, 16, ci[3].stored * 1033);
	spit(path, b.p, b.len);
	if (READ_OK(path, &rb)) {
		CHECK_EVENTS(rb.ev, rb.n, want, nwant);
		CHECK_HAS(rb.warnings, "damaged chunk header");
		rb_free(&rb);
	}
	/* Raw size wrong either way but plausible: zlib says so. */
	for (i = 0; i < 2; i++) {
		set_frame_field(&b, ci[3].off, 16,
				i ? ci[3].raw - 1 : ci[3].raw + 1);
		spit(path, b.p, b.len);
		if (READ_OK(path, &rb)) {
			CHECK_EVENTS(rb.ev, rb.n, want, nwant);
			CHECK_HAS(rb.warnings, "zlib");
			CHECK_U64(rb.st.bad_chunks, 1);
			rb_free(&rb);
		}
	}
	set_frame_field(&b, ci[3].off, 16, ci[3].raw);
	/* A legal length past the end: the file is cut short there. */
	set_frame_field(&b, ci[3].off, 12, 64u << 20);
	spit(path, b.p, b.len);
	if (READ_OK(path, &rb)) {
		CHECK_U64(rb.n, 20);
		CHECK(rb.st.truncated);
		CHECK_HAS(rb.warnings, "the last chunk is lost");
		rb_free(&rb);
	}
	free(b.p);
}

/* Garbage between chunks, with false sync markers in it. */
static void test_resync(void)
{
	const char *good = tpath("good.spt"), *path = tpath("garbage.spt");
	struct chunk_info ci[16];
	struct bytes b, out = { 0 };
	struct readback rb;
	uint64_t rng = 3;
	size_t n, i;
	char w[256];

	write_small(good);
	if (!slurp(good, &b))
		abort();
	n = walk_chunks(&b, ci, 16);
	b_put(&out, b.p, ci[4].off);
	for (i = 0; i < 100000; i++)
		b_u8(&out, i % 1000 < 28 ? (uint8_t)"SPCK"[i % 4] :
			   (uint8_t)xorshift(&rng));
	b_put(&out, b.p + ci[4].off, b.len - ci[4].off);
	spit(path, out.p, out.len);
	if (READ_OK(path, &rb)) {
		CHECK_EVENTS(rb.ev, rb.n, small_ev, SMALL_EVENTS);
		snprintf(w, sizeof(w), "%s: offset %zu: damaged chunk header, 100000 bytes skipped to the next chunk at offset %zu",
			 path, ci[4].off, ci[4].off + 100000);
		CHECK_HAS(rb.warnings, w);
		CHECK_U64(rb.nwarn, 1);
		CHECK_U64(rb.st.bytes_skipped, 100000);
		CHECK_U64(rb.st.bad_chunks, 1);
		CHECK(rb.st.footer);
		rb_free(&rb);
	}
	/* Garbage to the end: everything before, then nothing. */
	out.len = ci[4].off + 50;
	spit(path, out.p, out.len);
	if (READ_OK(path, &rb)) {
		CHECK_U64(rb.n, 40);
		CHECK_HAS(rb.warnings, "no chunk after it, 50 bytes skipped");
		CHECK_HAS(rb.warnings, "no footer");
		rb_free(&rb);
	}
	/* One stray byte: the next frame is at the very next offset. */
	out.len = 0;
	b_put(&out, b.p, ci[2].off);
	b_u8(&out, 'S');
	b_put(&out, b.p + ci[2].off, b.len - ci[2].off);
	spit(path, out.p, out.len);
	if (READ_OK(path, &rb)) {
		CHECK_EVENTS(rb.ev, rb.n, small_ev, SMALL_EVENTS);
		CHECK_U64(rb.st.bytes_skipped, 1);
		CHECK_U64(rb.nwarn, 1);
		rb_free(&rb);
	}
	/* Bytes after the footer. */
	out.len = 0;
	b_put(&out, b.p, b.len);
	b_put(&out, "trailing", 8);
	spit(path, out.p, out.len);
	if (READ_OK(path, &rb)) {
		CHECK_EVENTS(rb.ev, rb.n, small_ev, SMALL_EVENTS);
		snprintf(w, sizeof(w), "%s: offset %zu: 8 bytes after the footer ignored",
			 path, b.len);
		CHECK_HAS(rb.warnings, w);
		CHECK(rb.st.footer);
		rb_free(&rb);
	}
	(void)n;
	free(out.p);
	free(b.p);
}

/* ------------------------------------------- hostile payloads, framed */

/* One EVENTS payload with a single MARK 42 of thread 9/9, name `name`. */
static void good_events(struct bytes *p, uint32_t name_plus_1)
{
	b_varint(p, 1);
	b_u8(p, SP_EV_MARK | 0x20);
	b_varint(p, 0);
	b_varint(p, 9);
	b_varint(p, 9);
	b_varint(p, 2000);		/* zigzag: +1000 */
	b_varint(p, name_plus_1);
	b_varint(p, 42);
}

/*
 * header, STRINGS {0: "a", 1: "b"}, the chunk under test, a good EVENTS
 * chunk (MARK 42), footer. Returns the reader's view.
 */
static int read_crafted(const char *path, uint8_t type, uint8_t enc,
			const struct bytes *payload, uint32_t as_is_raw_len,
			struct readback *rb)
{
	struct bytes f = { 0 }, s = { 0 }, e = { 0 };

	b_header(&f, 0, 0);
	b_varint(&s, 0);
	b_varint(&s, 2);
	b_varint(&s, 1);
	b_put(&s, "a", 1);
	b_varint(&s, 1);
	b_put(&s, "b", 1);
	b_chunk(&f, 1, 1, 0, s.p, s.len);
	if (as_is_raw_len)
		b_frame(&f, type, enc, 1, payload->p, payload->len,
			as_is_raw_len);
	else
		b_chunk(&f, type, enc, 1, payload->p, payload->len);
	good_events(&e, 2);
	b_chunk(&f, 2, 1, 2, e.p, e.len);
	b_footer(&f, 3, 0, 0, 3);
	spit(path, f.p, f.len);
	free(f.p);
	free(s.p);
	free(e.p);
	return read_all(path, rb);
}

/* The good chunk after the bad one was read, whatever the bad one was. */
static void check_tail_mark(const struct readback *rb)
{
	const struct trace_event *last = rb->n ? &rb->ev[rb->n - 1] : NULL;

	CHECK(last != NULL);
	if (!last)
		return;
	CHECK_U64(last->kind, SP_EV_MARK);
	CHECK_U64(last->arg1, 42);
	CHECK_U64(last->ts_ns, 1000);
	CHECK_U64(last->tid, 9);
	CHECK_U64(last->name_id, 1);
	CHECK(rb->st.footer);
}

static void test_string_ids(void)
{
	const char *path = tpath("ids.spt");
	struct bytes p = { 0 };
	struct readback rb;

	/* Events naming id 0, id 7 (never defined) and no string. */
	b_varint(&p, 3);
	b_u8(&p, SP_EV_QUERY_BEGIN);
	b_varint(&p, 0);
	b_varint(&p, 5);
	b_varint(&p, 6);
	b_varint(&p, 10);
	b_varint(&p, 1);
	b_u8(&p, SP_EV_QUERY_END);
	b_varint(&p, 0);
	b_varint(&p, 3);		/* -2 */
	b_varint(&p, 8);
	b_u8(&p, SP_EV_FREE | 0x40);
	b_varint(&p, 0);
	b_varint(&p, 4);
	b_varint(&p, 0);
	b_varint(&p, 0xdead);
	if (read_crafted(path, 2, 1, &p, 0, &rb)) {
		CHECK_STR(rb.msg, "");
		goto out;
	}
	CHECK_U64(rb.n, 4);
	if (rb.n == 4) {
		CHECK_U64(rb.ev[0].name_id, 0);
		CHECK_U64(rb.ev[0].ts_ns, 5);
		CHECK_U64(rb.ev[0].pid, 5);
		CHECK_U64(rb.ev[0].tid, 6);
		CHECK_U64(rb.ev[1].name_id, NO_STR);
		CHECK_U64(rb.ev[1].ts_ns, 3);
		CHECK_U64(rb.ev[1].kind, SP_EV_QUERY_END);
		CHECK_U64(rb.ev[2].name_id, NO_STR);
		CHECK_U64(rb.ev[2].arg2, 0xdead);
		CHECK_U64(rb.ev[2].arg1, 0);
		CHECK_U64(rb.ev[2].ts_ns, 5);
	}
	check_tail_mark(&rb);
	CHECK_U64(rb.st.bad_names, 1);
	CHECK_U64(rb.st.bad_chunks, 0);
	CHECK_HAS(rb.warnings, "chunk 1 at offset");
	CHECK_HAS(rb.warnings, "1 events name a string the file does not hold");
	rb_free(&rb);

	/* A gap in the ids (a STRINGS chunk was lost): later ids still
	 * resolve, the missing ones do not. */
	p.len = 0;
	b_varint(&p, 5);
	b_varint(&p, 1);
	b_varint(&p, 3);
	b_put(&p, "fiv", 3);
	if (read_crafted(path, 1, 1, &p, 0, &rb)) {
		CHECK_STR(rb.msg, "");
		goto out;
	}
	CHECK_STR(trace_reader__string(rb.r, 5), "fiv");
	CHECK(!trace_reader__string(rb.r, 3));
	CHECK_STR(trace_reader__string(rb.r, 1), "b");
	check_tail_mark(&rb);
	CHECK_U64(rb.nwarn, 0);
	rb_free(&rb);
out:
	free(p.p);
}

struct bad_payload {
	const char *what;
	uint8_t type, enc;
	const char *bytes;		/* the payload */
	size_t len;
	uint32_t as_is_raw_len;		/* framed as is, not compressed */
	const char *warning;
	size_t events_before;		/* delivered before the bad record */
};

/* A payload needs 4 bytes an event after the count, or it is refused
 * whole ("bad count"); most of these pass that check to reach the rest. */
#define BP(t, e, s, raw, w, n) { #s, t, e, s, sizeof(s) - 1, raw, w, n }
static const struct bad_payload bad_payloads[] = {
	/* two events: a good QUERY_BEGIN, then a tag of kind 0 */
	BP(2, 1, "\x02\x01\x00\x01\x02\x03\x00\x00\x00\x00\x00", 0,
	   "bad tag", 1),
	/* the reserved tag bit */
	BP(2, 1, "\x01\x81\x00\x01\x02", 0, "bad tag", 0),
	/* thread index 5 with no threads */
	BP(2, 1, "\x01\x01\x05\x00\x01", 0, "bad thread index", 0),
	/* an 11-byte varint delta */
	BP(2, 1, "\x01\x01\x00\x01\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00",
	   0, "malformed field", 0),
	/* a varint whose tenth byte has more than bit 63 */
	BP(2, 1, "\x01\x01\x00\x01\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02\x00",
	   0, "malformed field", 0),
	/* a name id beyond 32 bits */
	BP(2, 1, "\x01\x01\x00\x01\x02\x00\x80\x80\x80\x80\x10", 0,
	   "malformed field", 0),
	/* a pid beyond 32 bits */
	BP(2, 1, "\x01\x01\x00\x80\x80\x80\x80\x10\x02\x00\x00", 0,
	   "bad thread", 0),
	/* count 3, the payload holds 2 (the first with a 3-byte arg1) */
	BP(2, 1, "\x03\x21\x00\x01\x02\x00\x00\xff\xff\x03\x02\x00\x00\x00", 0,
	   "payload ends early", 2),
	/* a count larger than the payload could hold */
	BP(2, 1, "\xff\xff\x03\x01\x00\x01\x02\x00\x00", 0, "bad count", 0),
	/* arg1 flagged but missing */
	BP(2, 1, "\x01\x29\x00\x01\x02\x00\x01", 0, "malformed field", 0),
	/* bytes after the last event: events kept, warned */
	BP(2, 1, "\x01\x01\x00\x01\x02\x00\x01\xaa\xbb", 0,
	   "2 bytes after the last event ignored", 1),
	/* strings: NUL inside, length past the end, ids defined already,
	 * count larger than the payload, length over 64 KiB, first id over
	 * the limit, bytes after the last */
	BP(1, 1, "\x02\x01\x03" "a\x00" "b", 0, "NUL in a string", 0),
	BP(1, 1, "\x02\x01\x09" "abc", 0, "bad string length", 0),
	BP(1, 1, "\x01\x01\x01" "c", 0, "ids already defined", 0),
	BP(1, 1, "\x02\xff\xff\x03\x01" "c", 0, "too many strings", 0),
	BP(1, 1, "\x02\x01\x81\x80\x04", 0, "bad string length", 0),
	BP(1, 1, "\xff\xff\xff\xff\x0f\x01\x01" "c", 0, "too many strings", 0),
	BP(1, 1, "\x02\x01\x01" "cX", 0, "bytes after the last string", 0),
	/* a footer too short to hold its counts */
	BP(3, 0, "\x01\x02\x03", 0, "footer of 3 bytes", 0),
	/* not zlib, with a good CRC */
	BP(2, 1, "not a zlib stream at all", 100, "zlib: data error", 0),
	/* zlib, then more bytes than the stream */
	BP(2, 1, "\x78\x01\x01\x07\x00\xf8\xff\x01\x01\x00\x01\x02\x00\x01"
	   "\x00\x1f\x00\x07XX", 7, "size differs from the chunk header", 0),
	/* stored, but the frame says it inflates to more: not trusted */
	BP(2, 0, "\x01\x01\x00\x01\x02\x00\x01", 100, "damaged chunk header", 0),
	/* an encoding this reader does not know */
	BP(2, 9, "\x01\x01\x00\x01\x02\x00\x01", 7, "unknown encoding 9", 0),
};

static void test_bad_payloads(void)
{
	const char *path = tpath("payload.spt");
	size_t i;

	for (i = 0; i < sizeof(bad_payloads) / sizeof(bad_payloads[0]); i++) {
		const struct bad_payload *bp = &bad_payloads[i];
		struct bytes p = { 0 };
		struct readback rb;
		unsigned int before = check_failed;

		b_put(&p, bp->bytes, bp->len);
		if (read_crafted(path, bp->type, bp->enc, &p,
				 bp->as_is_raw_len, &rb)) {
			CHECK_STR(rb.msg, "");
			goto next;
		}
		check_tail_mark(&rb);
		CHECK_U64(rb.n, bp->events_before + 1);
		CHECK_HAS(rb.warnings, bp->warning);
		CHECK_U64(rb.st.bad_chunks,
			  !strstr(bp->warning, "after the last event"));
		CHECK_U64(rb.next_err, 0);
		rb_free(&rb);
next:
		if (check_failed != before)
			printf("     ... in bad payload %zu: %s\n", i, bp->what);
		free(p.p);
	}
}

/* A stored (uncompressed) EVENTS chunk is legal. */
static void test_stored_chunk(void)
{
	const char *path = tpath("stored.spt");
	struct bytes p = { 0 };
	struct readback rb;

	good_events(&p, 1);
	if (read_crafted(path, 2, 0, &p, 0, &rb)) {
		CHECK_STR(rb.msg, "");
	} else {
		CHECK_U64(rb.n, 2);
		CHECK_U64(rb.ev[0].name_id, 0);
		CHECK_U64(rb.ev[0].arg1, 42);
		CHECK_U64(rb.nwarn, 0);
		CHECK_U64(rb.st.chunks, 3);
		rb_free(&rb);
	}
	free(p.p);
}

/* A file with 200 bad chunks gives 64 warnings and a count of the rest. */
static void test_warning_cap(void)
{
	const char *path = tpath("many.spt");
	struct bytes f = { 0 };
	struct readback rb;
	uint32_t i;

	b_header(&f, 0, 0);
	for (i = 0; i < 200; i++) {
		b_chunk(&f, 2, 1, i, (const uint8_t *)"x", 1);
		f.p[f.len - 1] ^= 1;	/* CRC mismatch */
	}
	spit(path, f.p, f.len);
	if (READ_OK(path, &rb)) {
		CHECK_U64(rb.nwarn, 65);
		CHECK_HAS(rb.warnings, "137 more warnings not shown");
		CHECK_U64(rb.st.bad_chunks, 200);
		rb_free(&rb);
	}
	free(f.p);
}

/* ------------------------------------------------------- the writer */

static mode_t file_mode(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? 0 : st.st_mode & 07777;
}

/* Opening must fail with `want`; a writer opened anyway is closed. */
static void expect_refused(const char *path, bool force, int want, int line)
{
	struct trace_header h = test_header();
	struct trace_writer *w = NULL;
	int err = trace_writer__open(path, force, &h, &w);

	if (err != want) {
		printf("FAIL line %d: open %s%s: %d, want %d\n", line, path,
		       force ? " (force)" : "", err, want);
		check_failed++;
	}
	if (!err)
		trace_writer__close(w, 0);
}

#define EXPECT_REFUSED(path, force, want) \
	expect_refused(path, force, want, __LINE__)

static void test_refuse_overwrite(void)
{
	const char *exists = tpath("exists.spt"), *link = tpath("link.spt");
	const char *target = tpath("target"), *dangling = tpath("dangling.spt");
	const char *fresh = tpath("fresh.spt");
	struct trace_header h = test_header();
	struct trace_writer *w = NULL;
	struct bytes b;
	mode_t old = umask(022);

	spit(exists, "keep", 4);
	chmod(exists, 0644);
	EXPECT_REFUSED(exists, false, -EEXIST);
	CHECK(slurp(exists, &b) && b.len == 4 && !memcmp(b.p, "keep", 4));
	free(b.p);

	/* A symlink, to an existing file or to nothing, is never followed. */
	spit(target, "keep", 4);
	unlink(link);
	CHECK(!symlink(target, link));
	EXPECT_REFUSED(link, false, -EEXIST);
	EXPECT_REFUSED(link, true, -ELOOP);
	CHECK(slurp(target, &b) && b.len == 4);
	free(b.p);
	unlink(dangling);
	unlink(target);
	CHECK(!symlink(target, dangling));
	EXPECT_REFUSED(dangling, false, -EEXIST);
	EXPECT_REFUSED(dangling, true, -ELOOP);
	CHECK(access(target, F_OK) != 0);

	/* force replaces a regular file, which becomes private. */
	CHECK_U64(trace_writer__open(exists, true, &h, &w), 0);
	if (w)
		CHECK_U64(trace_writer__close(w, 0), 0);
	CHECK_U64(file_mode(exists), 0600);
	CHECK(slurp(exists, &b) && b.len > 4 && b.p[0] == 0x89);
	free(b.p);

	unlink(fresh);
	w = NULL;
	CHECK_U64(trace_writer__open(fresh, false, &h, &w), 0);
	if (w)
		CHECK_U64(trace_writer__close(w, 0), 0);
	CHECK_U64(file_mode(fresh), 0600);
	EXPECT_REFUSED(tpath("no/such/dir.spt"), false, -ENOENT);
	h.npids = TRACE_MAX_PIDS + 1;
	w = NULL;
	CHECK_U64(trace_writer__open(tpath("x.spt"), false, &h, &w),
		  (uint64_t)-EINVAL);
	CHECK(w == NULL);
	CHECK(access(tpath("x.spt"), F_OK) != 0);
	umask(old);
}

/* Every write error reaches the caller and sticks; what was written
 * before it stays readable. */
static void test_write_errors(void)
{
	const char *path = tpath("fsize.spt");
	struct trace_header h = test_header();
	struct trace_writer *w = NULL;
	struct rlimit old, lim;
	struct readback rb;
	uint64_t rng = 5, accepted = 0;
	uint32_t id;
	int err = 0, i;

	/* A full device: the header, written with the first chunk (or at
	 * close), cannot be; output__check() refuses such a device before
	 * anything runs. */
	if (!access("/dev/full", W_OK)) {
		CHECK_U64(trace_writer__open("/dev/full", true, &h, &w), 0);
		if (w)
			CHECK_U64(trace_writer__close(w, 0), (uint64_t)-ENOSPC);
		w = NULL;
	}

	/* A file size limit in the middle of the third chunk or so. */
	unlink(path);
	CHECK_U64(trace_writer__open(path, false, &h, &w), 0);
	if (!w)
		return;
	CHECK_U64(trace_writer__string(w, "q", &id), 0);
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 300000;
	CHECK(!setrlimit(RLIMIT_FSIZE, &lim));
	for (i = 0; i < 1000000 && !err; i++) {
		struct trace_event e = {
			.ts_ns = xorshift(&rng), .arg1 = xorshift(&rng),
			.arg2 = xorshift(&rng), .kind = SP_EV_ALLOC,
			.pid = 1, .tid = (uint32_t)(xorshift(&rng) % 1000),
			.name_id = id,
		};

		err = trace_writer__event(w, &e);
		if (!err)
			accepted++;
	}
	CHECK_U64(err, (uint64_t)-EFBIG);
	CHECK_U64(trace_writer__flush(w), (uint64_t)-EFBIG);
	CHECK_U64(trace_writer__string(w, "r", &id), (uint64_t)-EFBIG);
	CHECK_U64(trace_writer__close(w, 0), (uint64_t)-EFBIG);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);

	/* The partial chunk was cut off: the file ends on a boundary. */
	if (READ_OK(path, &rb)) {
		CHECK(rb.n > 0 && rb.n < accepted);
		CHECK(!rb.st.truncated);
		CHECK(!rb.st.footer);
		CHECK_U64(rb.st.bad_chunks, 0);
		CHECK_U64(rb.nwarn, 1);
		rb_free(&rb);
	}
}

/* More threads in a chunk than the reader accepts: the writer starts a
 * new chunk. */
static void test_many_threads(void)
{
	const char *path = tpath("threads.spt");
	struct trace_header h = test_header();
	struct trace_writer *w;
	struct readback rb;
	uint32_t i, n = 70000;
	bool ok = true;

	CHECK_U64(trace_writer__open(path, false, &h, &w), 0);
	for (i = 0; i < n; i++) {
		struct trace_event e = { .ts_ns = i, .kind = SP_EV_MARK,
					 .pid = 1, .tid = i,
					 .name_id = NO_STR };

		CHECK_U64(trace_writer__event(w, &e), 0);
	}
	CHECK_U64(trace_writer__close(w, 0), 0);
	if (READ_OK(path, &rb)) {
		CHECK_U64(rb.n, n);
		for (i = 0; i < rb.n && ok; i++)
			ok = rb.ev[i].tid == i && rb.ev[i].ts_ns == i;
		CHECK(ok);
		CHECK(rb.st.chunks >= 2);
		CHECK_U64(rb.nwarn, 0);
		rb_free(&rb);
	}
}

/* A chunk defining more threads than the limit is refused from there. */
static void test_thread_limit(void)
{
	const char *path = tpath("thread_limit.spt");
	struct bytes p = { 0 };
	struct readback rb;
	uint32_t i;

	b_varint(&p, 65537);
	for (i = 0; i <= 65536; i++) {
		b_u8(&p, SP_EV_MARK);
		b_varint(&p, i);
		b_varint(&p, 1);
		b_varint(&p, i);
		b_varint(&p, 2);
		b_varint(&p, 0);
	}
	if (read_crafted(path, 2, 1, &p, 0, &rb)) {
		CHECK_STR(rb.msg, "");
	} else {
		CHECK_U64(rb.n, 65536 + 1);
		CHECK_HAS(rb.warnings, "malformed event 65536");
		CHECK_HAS(rb.warnings, "too many threads");
		check_tail_mark(&rb);
		if (rb.n > 65535)
			CHECK_U64(rb.ev[65535].tid, 65535);
		rb_free(&rb);
	}
	free(p.p);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	if (argc == 3 && (!strcmp(argv[1], "--write-golden") ||
			  !strcmp(argv[1], "--write-golden-1.1") ||
			  !strcmp(argv[1], "--write-golden-1.2"))) {
		int err = write_golden(!argv[1][14] ? &golden10 :
				       !strcmp(argv[1] + 14, "-1.1") ? &golden11 :
								      &golden12,
				       argv[2]);

		if (err)
			fprintf(stderr, "%s: %s\n", argv[2], strerror(-err));
		return err ? 1 : 0;
	}
	if (argc > 1)
		golden_path = argv[1];
	if (argc > 2)
		golden11_path = argv[2];
	if (argc > 3)
		golden12_path = argv[3];
	/* FAIL lines must reach a pipe even if a sanitizer ends the run. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_round_trip);
	RUN(test_golden);
	RUN(test_size_realistic);
	RUN(test_flush_visible);
	RUN(test_empty_recording);
	RUN(test_bad_headers);
	RUN(test_minor_versions);
	RUN(test_truncation);
	RUN(test_bit_flips);
	RUN(test_huge_lengths);
	RUN(test_resync);
	RUN(test_string_ids);
	RUN(test_bad_payloads);
	RUN(test_stored_chunk);
	RUN(test_warning_cap);
	RUN(test_refuse_overwrite);
	RUN(test_write_errors);
	RUN(test_many_threads);
	RUN(test_thread_limit);
	RUN(test_strings_alone);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return check_status();
}
