// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the trace reader (userspace/store/trace_reader.c): the
 * input becomes a file (a memfd), which is opened and read to the end, with
 * stats and warnings. Besides crashes, hangs and leaks, it traps when the
 * reader breaks a promise of its API (see check_event, check_warnings).
 *
 * A mutated .spt file almost never gets past a CRC, so most of the reader
 * would go unfuzzed. Inputs therefore come in two kinds:
 *
 *  - starting with the file magic (0x89 'S' 'P' 'T' ...): the file as is.
 *    This fuzzes header checks, framing, resync and truncation.
 *  - anything else: a recipe the harness turns into a file with valid
 *    CRCs, so mutations reach the STRINGS and EVENTS decoders:
 *
 *      u8   minor version for the header
 *      u16  n, then n bytes: the header from offset 20 (times, pids,
 *           command line, version...), CRC added by the harness
 *      then records until the input ends:
 *      u8 type, u8 encoding, u16 len, len bytes: one chunk, framed with
 *           seq = its index; encoding 1 is compressed here (zlib), any
 *           other is stored as is
 *      bytes left over that do not make a record are appended raw.
 *
 *   All u16 are little-endian. The seeds in corpus_trace/ are real files
 *   (golden, damaged in each way the reader recovers from) and recipes
 *   built from the golden file's payloads.
 *
 * Build (libclang-rt-14-dev):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -I include \
 *     -I userspace/store -I userspace/model -I userspace/common \
 *     userspace/store/trace_reader.c tests/fuzz/fuzz_trace_reader.c -lz
 * Run: tests/fuzz/run_fuzz.sh FUZZER tests/fuzz/corpus_trace SECONDS
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memfd_create */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include "trace_format.h"

#define FRAME 28

static const uint8_t magic[8] = { 0x89, 'S', 'P', 'T', '\r', '\n', 0x1a, '\n' };

struct out {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (!n)
		return;
	if (o->len + n > o->cap) {
		o->cap = (o->len + n) * 2;
		o->p = realloc(o->p, o->cap);
		if (!o->p)
			abort();
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
}

static void put_le(struct out *o, uint64_t v, int n)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(o, b, (size_t)n);
}

static void set_le32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_chunk(struct out *o, uint8_t type, uint8_t enc, uint32_t seq,
		      const uint8_t *data, size_t len)
{
	uLongf clen = compressBound((uLong)len);
	uint8_t *z = malloc(clen + 1), f[FRAME];
	const uint8_t *stored = data;

	if (!z)
		abort();
	if (enc == 1 && compress2(z, &clen, data, (uLong)len, 1) == Z_OK)
		stored = z;
	else
		clen = (uLongf)len;
	memcpy(f, "SPCK", 4);
	f[4] = type;
	f[5] = enc;
	f[6] = f[7] = 0;
	set_le32(f + 8, seq);
	set_le32(f + 12, (uint32_t)clen);
	set_le32(f + 16, (uint32_t)len);
	set_le32(f + 20, (uint32_t)crc32(0, stored, (uInt)clen));
	set_le32(f + 24, (uint32_t)crc32(0, f, 24));
	put(o, f, FRAME);
	put(o, stored, clen);
	free(z);
}

/* The file a recipe describes (see the top of this file). */
static void build(const uint8_t *in, size_t len, struct out *o)
{
	size_t i = 3, n, hstart;
	uint32_t seq = 0;

	if (len < 3) {
		put(o, in, len);
		return;
	}
	n = in[1] | (size_t)in[2] << 8;
	if (n > len - 3)
		n = len - 3;
	hstart = o->len;
	put(o, magic, sizeof(magic));
	put_le(o, 1, 2);
	put_le(o, in[0], 2);
	put_le(o, 20 + n + 4, 4);
	put_le(o, 0x0a0b0c0d, 4);
	put(o, in + i, n);
	put_le(o, crc32(0, o->p + hstart, (uInt)(o->len - hstart)), 4);
	i += n;
	while (len - i >= 4) {
		size_t rlen = in[i + 2] | (size_t)in[i + 3] << 8;

		if (rlen > len - i - 4)
			break;
		put_chunk(o, in[i], in[i + 1], seq++, in + i + 4, rlen);
		i += 4 + rlen;
	}
	put(o, in + i, len - i);
}

/* What trace_reader__next promises about each event it returns. */
static void check_event(const struct trace_reader *r,
			const struct trace_event *ev)
{
	if (ev->kind == 0 || ev->kind > 31)
		__builtin_trap();
	if (ev->name_id != TRACE_NO_STRING &&
	    !trace_reader__string(r, ev->name_id))
		__builtin_trap();
}

/* One line each, naming the file; at most 64 and a summary line. */
static void check_warnings(const struct trace_reader *r, const char *path)
{
	const char *const *w = trace_reader__warnings(r);
	size_t n = 0, plen = strlen(path);

	for (; *w; w++, n++)
		if (strchr(*w, '\n') || strncmp(*w, path, plen))
			__builtin_trap();
	if (n > 65)
		__builtin_trap();
}

static void read_file(const char *path)
{
	const struct trace_header *h;
	struct trace_reader *r;
	struct trace_event ev;
	struct trace_stats st;
	uint64_t n = 0;
	char err[512];
	int ret;

	if (trace_reader__open(path, &r, err, sizeof(err))) {
		if (!err[0] || strchr(err, '\n'))
			__builtin_trap();
		return;
	}
	h = trace_reader__header(r);
	if (!h->cmdline || !h->version || h->npids > TRACE_MAX_PIDS)
		__builtin_trap();
	while ((ret = trace_reader__next(r, &ev)) > 0) {
		check_event(r, &ev);
		n++;
	}
	if (ret < 0 || trace_reader__next(r, &ev) != 0)
		__builtin_trap();
	trace_reader__stats(r, &st);
	if (st.events != n)
		__builtin_trap();
	check_warnings(r, path);
	trace_reader__close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct out file = { 0 };
	char path[64];
	int fd;

	if (size >= sizeof(magic) && !memcmp(data, magic, sizeof(magic)))
		put(&file, data, size);
	else
		build(data, size, &file);
	fd = memfd_create("fuzz.spt", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (file.len && write(fd, file.p, file.len) != (ssize_t)file.len)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	read_file(path);
	close(fd);
	free(file.p);
	return 0;
}
