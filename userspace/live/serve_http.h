/* SPDX-License-Identifier: MIT */
/*
 * The HTTP side of `sptrace serve`, on libmicrohttpd: GET/HEAD of one path,
 * every other request its 4xx, every answer "Connection: close". MHD runs
 * in the caller's thread (external epoll): the session's wait loop polls
 * serve_http__fd() and calls serve_http__poll(), so a scrape reads the maps
 * in the thread that owns them. Bounded: connections, request size, and the
 * time a client may take to send its request or to take the response.
 */
#ifndef SPTRACE_SERVE_HTTP_H
#define SPTRACE_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define HTTP_MAX_CONNS 256
/* Request line and headers; MHD's per-connection memory pool. */
#define HTTP_MAX_REQUEST 8192
/* Seconds a client may stay silent while it sends its request ... */
#define HTTP_REQUEST_TIMEOUT_S 5
/* ... and while it takes the response. */
#define HTTP_SEND_TIMEOUT_S 10
/* Milliseconds one serve_http__poll() may send for (the session's tick). */
#define HTTP_POLL_MAX_MS 50

/* The body of one answer (an MHD response). */
struct serve_body;

/* Copies the next bytes of a body into buf (up to max); 0 at its end. */
typedef size_t (*serve_read_fn)(void *ctx, char *buf, size_t max);

/* MHD's buffer per answer sent from a serve_read_fn: bytes per call. */
#define SERVE_STREAM_BLOCK (256 * 1024)

/*
 * A body of len bytes (sent as its Content-Length), read in order by
 * read(ctx) while the connection sends it, never held whole in memory.
 * release(ctx) is called once the connection is done with it (or here,
 * on failure). NULL if out of memory.
 */
struct serve_body *serve_body__stream(uint64_t len, const char *content_type,
				      serve_read_fn read,
				      void (*release)(void *ctx), void *ctx);
/* Drops the caller's reference. NULL is a no-op. */
void serve_body__put(struct serve_body *b);

/* The body of a 200 answer, given (serve_http drops it once queued);
 * NULL answers 500. */
typedef struct serve_body *(*serve_http_handler_fn)(void *ctx,
						    bool openmetrics);

struct MHD_Daemon;

struct serve_http {
	struct MHD_Daemon *mhd;
	int lfd;
	const char *path;		/* "/metrics" */
	serve_http_handler_fn handler;
	void *ctx;
	unsigned int nconns;
	uint64_t dropped;		/* timeouts, connection limit */
	uint64_t rejected;		/* 4xx answers */
	char addr[64];			/* what it listens on, "HOST:PORT" */
};

/*
 * Parses "HOST:PORT", "[V6]:PORT" (numeric addresses only, or
 * "localhost"). 0, or -EINVAL with a message in err (len bytes).
 */
int serve_http__parse_addr(const char *str, struct sockaddr_storage *ss,
			   socklen_t *len, char *err, size_t errlen);
/* True for 127.0.0.0/8, ::1 and ::ffff:127.x. */
bool serve_http__is_loopback(const struct sockaddr_storage *ss);
/* Listens on the address. 0 or -errno. */
int serve_http__open(struct serve_http *srv,
		     const struct sockaddr_storage *ss, socklen_t len,
		     const char *path, serve_http_handler_fn handler,
		     void *ctx);
/* The descriptor to poll for readability (MHD's epoll fd). */
int serve_http__fd(const struct serve_http *srv);
/* Handles whatever is ready, without blocking, and expires timed-out
 * connections. Call when the fd is readable and periodically. True when
 * it stopped with more to send at once: call again without waiting for
 * the fd (its readiness is edge-triggered). */
bool serve_http__poll(struct serve_http *srv);
void serve_http__close(struct serve_http *srv);

#endif /* SPTRACE_SERVE_HTTP_H */
