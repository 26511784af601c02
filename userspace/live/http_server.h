/* SPDX-License-Identifier: MIT */
/*
 * A small HTTP/1.x server for `sptrace serve`: single-threaded,
 * non-blocking, one epoll fd that the session's wait loop polls. Serves
 * GET/HEAD of one path; everything else gets its 4xx and the connection is
 * closed. Bounded: connections, request size, and the time a client may
 * take to send its request or to take the response.
 */
#ifndef SPTRACE_HTTP_SERVER_H
#define SPTRACE_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define HTTP_MAX_CONNS 256
#define HTTP_MAX_REQUEST 8192
/* A request must be complete this long after the connection opened. */
#define HTTP_REQUEST_TIMEOUT_MS 5000
/* A response must make progress at least this often. */
#define HTTP_SEND_TIMEOUT_MS 10000

/* A response body shared by the connections sending it. */
struct http_body {
	unsigned int refs;
	char *data;			/* freed with the last reference */
	size_t len;
	const char *content_type;	/* static */
};

/* Drops a reference. */
void http_body__put(struct http_body *b);

/* The body of a 200 answer, as a new reference; NULL answers 500. */
typedef struct http_body *(*http_handler_fn)(void *ctx, bool openmetrics);

struct http_conn;

struct http_server {
	int epfd;
	int lfd;
	struct http_conn *conns;	/* HTTP_MAX_CONNS slots */
	unsigned int nconns;
	const char *path;		/* "/metrics" */
	http_handler_fn handler;
	void *ctx;
	uint64_t dropped;		/* timeouts, connection limit */
	uint64_t rejected;		/* 4xx answers */
	char addr[64];			/* what it listens on, "HOST:PORT" */
};

/*
 * Parses "HOST:PORT", "[V6]:PORT" (numeric addresses only, or
 * "localhost"). 0, or -EINVAL with a message in err (len bytes).
 */
int http_server__parse_addr(const char *str, struct sockaddr_storage *ss,
			    socklen_t *len, char *err, size_t errlen);
/* True for 127.0.0.0/8, ::1 and ::ffff:127.x. */
bool http_server__is_loopback(const struct sockaddr_storage *ss);
/* Listens on the address. 0 or -errno (reported). */
int http_server__open(struct http_server *srv,
		      const struct sockaddr_storage *ss, socklen_t len,
		      const char *path, http_handler_fn handler, void *ctx);
/* Handles whatever is ready, without blocking; closes timed-out
 * connections. Call when srv->epfd is readable and periodically. */
void http_server__poll(struct http_server *srv);
void http_server__close(struct http_server *srv);

#endif /* SPTRACE_HTTP_SERVER_H */
