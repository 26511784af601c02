/* SPDX-License-Identifier: MIT */
/*
 * store/ layer: trace files, the history database, JSON summaries, run
 * loading and storing; uses model/ and below (docs/architecture.md).
 *
 * The sptrace trace file (.spt): one library to write and read it, used by
 * every command (record, summarize, diff, export). docs/trace-file.md is the
 * specification; this header is its API.
 */
#ifndef SPTRACE_TRACE_FORMAT_H
#define SPTRACE_TRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sptrace/record_abi.h>
#include "trace_event.h"

#define TRACE_MAX_PIDS 256

/* Metadata at the start of a file. */
struct trace_header {
	uint16_t major, minor;		/* format version (reader fills) */
	uint64_t start_realtime_ns;	/* CLOCK_REALTIME at start */
	uint64_t start_mono_ns;		/* CLOCK_MONOTONIC at start (event base) */
	uint32_t npids;
	uint32_t pids[TRACE_MAX_PIDS];	/* as the operator typed them */
	char *cmdline;			/* owned; "" if none */
	char *version;			/* sptrace version that wrote it */
};


struct trace_writer;
struct trace_reader;

/*
 * Creates `path` (O_CREAT|O_EXCL|O_NOFOLLOW, 0600; with force, O_TRUNC
 * instead of O_EXCL, never through a symlink). The header is written with
 * the first chunk (or at close), so that its start can be set once known.
 * 0 or -errno (the caller reports).
 */
int trace_writer__open(const char *path, bool force,
		       const struct trace_header *h, struct trace_writer **out);
/* The instant the recording starts, replacing the header's: the moment
 * counting was armed, not the moment the file was opened (the BPF load
 * in between is no traced time). 0, or -EALREADY once the header is
 * written. */
int trace_writer__set_start(struct trace_writer *w, uint64_t realtime_ns,
			    uint64_t mono_ns);
/* Interns a string (any bytes but NUL; content-deduplicated); its id is
 * stable for the file. Written before the first chunk of events using it. */
int trace_writer__string(struct trace_writer *w, const char *s, uint32_t *id);
/* Buffers one event; a full chunk is compressed and written. */
int trace_writer__event(struct trace_writer *w, const struct trace_event *ev);
/* Ends the current chunk now (compressed, CRC'd, written): what a crash
 * can lose is bounded by how often this is called. */
int trace_writer__flush(struct trace_writer *w);
/* Flushes, writes the footer (events written, `lost`, chunks) and closes.
 * Frees w whatever the result. 0 or -errno. */
int trace_writer__close(struct trace_writer *w, uint64_t lost);
/* Events written so far (for progress and tests). */
uint64_t trace_writer__events(const struct trace_writer *w);

/* What the reader saw, for warnings and for `summarize` to report. */
struct trace_stats {
	uint64_t events;		/* events decoded */
	uint64_t chunks;		/* chunks decoded */
	uint64_t bad_chunks;		/* chunks skipped (CRC, zlib, framing) */
	uint64_t bytes_skipped;
	bool footer;			/* a valid footer was found */
	bool truncated;			/* the file ends inside a chunk */
	uint64_t footer_events;		/* from the footer, if any */
	uint64_t footer_lost;		/* events lost while recording */
	uint64_t footer_chunks;
	uint64_t bad_names;		/* events whose name id was not in the
					 * string table (now TRACE_NO_STRING) */
};

/*
 * Opens and validates the header. Errors (-errno) with a one-line message
 * in `err` (naming the file, the expected and the found value): -ENOENT,
 * -EINVAL (empty, header only/short, wrong magic, bad header size),
 * -EPROTONOSUPPORT (newer major version).
 */
int trace_reader__open(const char *path, struct trace_reader **out,
		       char *err, size_t errlen);
const struct trace_header *trace_reader__header(const struct trace_reader *r);
/*
 * The next event in file order: 1 and *ev filled, 0 at the end, or -errno on
 * an I/O error. Damaged chunks are skipped (stats), never fatal; an event
 * that names a string id out of range gets name_id TRACE_NO_STRING.
 */
int trace_reader__next(struct trace_reader *r, struct trace_event *ev);
#define TRACE_NO_STRING UINT32_MAX
/* The string with this id, or NULL (out of range / not yet read). */
const char *trace_reader__string(const struct trace_reader *r, uint32_t id);
void trace_reader__stats(const struct trace_reader *r, struct trace_stats *st);
/* Human-readable warnings about what was recovered (NULL-terminated list,
 * valid until close): "f.spt: chunk 7 at offset 123: CRC mismatch, skipped". */
const char *const *trace_reader__warnings(const struct trace_reader *r);
void trace_reader__close(struct trace_reader *r);

#endif /* SPTRACE_TRACE_FORMAT_H */
