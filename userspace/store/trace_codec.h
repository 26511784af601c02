/* SPDX-License-Identifier: MIT */
/*
 * The .spt trace file's encoding, shared by its writer (trace_writer.c) and
 * its reader (trace_reader.c) and private to them: the constants of format
 * 1.x, the limits both sides hold to, and the byte-level codec. The public
 * API is trace_format.h; docs/trace-file.md specifies the bytes.
 *
 * Why the bytes are laid out the way they are:
 *
 * A recording must survive the recorder being killed or the disk filling up.
 * So the file is a header followed by self-contained chunks, each framed by
 * a sync marker, its type, its lengths and two CRC32s (one over the frame,
 * one over the payload), and compressed on its own. A chunk refers to nothing
 * in an earlier chunk except string ids: in every EVENTS chunk timestamps
 * restart from zero and the thread table restarts empty. Losing a chunk (cut
 * short, flipped bits) therefore loses its own events and nothing else;
 * losing a STRINGS chunk loses names, which the reader turns into
 * TRACE_NO_STRING. The frame CRC tells a damaged frame, whose length cannot
 * be trusted (scan forward for the next sync marker), from a damaged
 * payload (skip exactly that chunk and go on).
 *
 * Events are small because recording must be cheap in disk and CPU: a tag
 * byte (kind, and which args follow), a varint index into the chunk's thread
 * table, a zigzag varint time delta (signed: the ring buffer does not order
 * the events of different CPUs exactly), a varint name id, and each arg only
 * if it is not zero. A realistic query workload takes about 6 raw bytes an
 * event and 4.8 on disk with zlib level 1; level 6 saves 0.5% for twice the
 * CPU (tests/unit/test_trace_format.c measures it), so level 1 it is.
 *
 * The file is hostile input to the reader, which is fuzzed
 * (tests/fuzz/fuzz_trace_reader.c). Every length read from the file is
 * checked against what is left of the file and a fixed limit before it is
 * used or anything is allocated for it. The writer refuses what the reader
 * would refuse (string length, count and bytes), and its chunks are too
 * small to hold more threads than a reader accepts. Integers are encoded
 * byte by byte, little-endian, never by copying structs. Damage is never
 * fatal: it becomes a warning naming the file and the offset, and the
 * reader goes on with the next chunk it can trust.
 */
#ifndef SPTRACE_TRACE_CODEC_H
#define SPTRACE_TRACE_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>
#include "trace_format.h"

#ifndef SPTRACE_VERSION
#define SPTRACE_VERSION "unknown"
#endif
/* zlib level for chunks; 1 meets the size target at the lowest CPU cost. */
#ifndef TRACE_ZLIB_LEVEL
#define TRACE_ZLIB_LEVEL 1
#endif

#define TRACE_MAJOR 1
#define TRACE_MINOR 2	/* 1.1: SP_EV_PROCESS_TITLE; 1.2: SP_EV_PAUSE */

static const uint8_t trace_magic[8] = {
	0x89, 'S', 'P', 'T', '\r', '\n', 0x1a, '\n'
};
#define BYTE_ORDER_MARK 0x0a0b0c0du

/* Header: magic, version, header size, byte-order mark, two start times and
 * npids are fixed; pids, command line, version and CRC follow. */
#define HDR_FIXED 40
#define HDR_MIN (HDR_FIXED + 4 + 4 + 4)
#define HDR_MAX (1u << 20)

static const uint8_t chunk_sync[4] = { 'S', 'P', 'C', 'K' };
#define FRAME_SIZE 28

enum chunk_type {
	CHUNK_STRINGS = 1,
	CHUNK_EVENTS = 2,
	CHUNK_FOOTER = 3,
};

enum chunk_encoding {
	ENC_STORED = 0,
	ENC_ZLIB = 1,
};

#define CHUNK_MAX (64u << 20)		/* stored and raw payload bytes */
#define ZLIB_MAX_RATIO 1032		/* deflate cannot do better */
#define FOOTER_SIZE 24
#define STRING_MAX 65536		/* bytes in one string */
#define STRINGS_MAX (1u << 20)		/* strings in a file */
#define STRING_BYTES_MAX (64u << 20)	/* their bytes, all together */
#define CHUNK_THREADS_MAX 65536		/* threads in one EVENTS chunk */
#define EVENT_MIN_RAW 4			/* tag, thread, delta, name */

/* Raw bytes after which the writer ends a chunk. */
#define CHUNK_TARGET (64u << 10)
/* Room for the varints a payload starts with (two at most). */
#define HEADROOM 20
/* Most raw bytes one event takes: tag, new thread, delta, name, args. */
#define EVENT_MAX_RAW (1 + 5 + 5 + 5 + 10 + 5 + 10 + 10)

#define TAG_KIND 0x1f
#define TAG_ARG1 0x20
#define TAG_ARG2 0x40
#define TAG_RESERVED 0x80

#define MAX_WARNINGS 64

_Static_assert(SP_EV__MAX <= TAG_KIND + 1, "event kinds must fit the tag");
/* An event that defines a thread takes 6 raw bytes at least, so a chunk
 * the writer ends at CHUNK_TARGET never has more threads than a reader
 * accepts. */
_Static_assert((CHUNK_TARGET + EVENT_MAX_RAW) / 6 < CHUNK_THREADS_MAX,
	       "a chunk could define more threads than readers accept");

/* Little-endian and varint encoding, shared by writer and reader. */

static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return get_le16(p) | (uint32_t)get_le16(p + 2) << 16;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static inline size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline uint64_t zigzag(uint64_t delta)
{
	return (delta << 1) ^ (0 - (delta >> 63));
}

static inline uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

static inline uint32_t crc(const uint8_t *p, size_t len)
{
	return (uint32_t)crc32(0, p, (uInt)len);
}

/* A chunk frame, decoded. */
struct frame {
	uint8_t type, encoding;
	uint32_t seq;
	uint32_t stored_len, raw_len;
	uint32_t payload_crc;
};

#endif /* SPTRACE_TRACE_CODEC_H */
