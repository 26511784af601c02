// SPDX-License-Identifier: MIT
/*
 * `sptrace serve`'s HTTP server on libmicrohttpd (serve_http.h).
 *
 * Why this shape:
 * - One thread. MHD runs without threads of its own (no
 *   MHD_USE_INTERNAL_POLLING_THREAD): its epoll fd is polled by the
 *   session's wait loop and MHD_run() is called from it. A scrape then
 *   reads the kernel maps and the fleet's process table in the thread that
 *   also evicts exited processes from them, with no lock; a render holds
 *   the loop as it did with the hand-written server. MHD's epoll mode keeps
 *   the cost of 256 idle connections off each tick.
 * - Every answer closes its connection ("Connection: close"): no
 *   keep-alive state, so a stalled or hostile client costs one slot until
 *   its timeout and nothing else.
 * - The listening socket is ours (MHD_OPTION_LISTEN_SOCKET): the bind error
 *   reaches the user as errno, and the address shown is the bound one.
 * - Limits, and where MHD's semantics differ from the server this replaced:
 *   HTTP_MAX_CONNS: the accept policy callback refuses the 257th
 *     connection and counts it (MHD's own MHD_OPTION_CONNECTION_LIMIT is
 *     one above, a backstop: it would refuse before telling us). MHD closes
 *     a refused connection without an answer; the old server sent a 503.
 *   HTTP_MAX_REQUEST: MHD_OPTION_CONNECTION_MEMORY_LIMIT, the per-connection
 *     pool that holds the request line and headers and later the response
 *     header: with 0.9.75 a 7,968-byte request head is served, from about
 *     8,130 bytes MHD answers 431, and in between it closes unanswered (no
 *     room left for the error answer either).
 *   HTTP_REQUEST_TIMEOUT_S, HTTP_SEND_TIMEOUT_S: MHD_OPTION_CONNECTION_TIMEOUT
 *     and, once an answer is queued, MHD_CONNECTION_OPTION_TIMEOUT. MHD's
 *     timeouts count from the last byte moved, not from the connect: a
 *     client that trickles its request one byte every few seconds holds
 *     its slot longer than 5 s (the connection limit still bounds them).
 * - MHD answers some malformed requests itself (a request line it cannot
 *   parse, headers too large) without calling us; a connection that closes
 *   unanswered is classified when it closes (see conn_closed()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "serve_http.h"

/* What we know of one TCP connection (MHD's socket context). */
struct conn_state {
	uint64_t start_ms;
	bool answered;		/* we queued an answer */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Every answer says what it is and that the connection ends with it. */
static struct serve_body *body_headers(struct MHD_Response *r,
				       const char *content_type)
{
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				    content_type) != MHD_YES ||
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION,
				    "close") != MHD_YES) {
		MHD_destroy_response(r);
		return NULL;
	}
	return (struct serve_body *)r;
}

/* MHD asks for the bytes from pos on, in order: pos is where the last
 * call ended (it asks again only once it has sent what it was given). */
struct stream {
	serve_read_fn read;
	void (*release)(void *ctx);
	void *ctx;
	uint64_t pos;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	size_t n;

	if (pos != st->pos)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = st->read(st->ctx, buf, max);
	if (!n)
		return MHD_CONTENT_READER_END_OF_STREAM;
	st->pos += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;

	st->release(st->ctx);
	free(st);
}

struct serve_body *serve_body__stream(uint64_t len, const char *content_type,
				      serve_read_fn read,
				      void (*release)(void *ctx), void *ctx)
{
	struct MHD_Response *r = NULL;
	struct stream *st;

	st = calloc(1, sizeof(*st));
	if (st) {
		*st = (struct stream){ .read = read, .release = release,
				       .ctx = ctx };
		/* A known size: MHD sends Content-Length. */
		r = MHD_create_response_from_callback(len, SERVE_STREAM_BLOCK,
						      stream_read, st,
						      stream_free);
	}
	if (!r) {
		free(st);
		release(ctx);
		return NULL;
	}
	return body_headers(r, content_type);
}

void serve_body__put(struct serve_body *b)
{
	if (b)
		MHD_destroy_response((struct MHD_Response *)b);
}

int serve_http__parse_addr(const char *str, struct sockaddr_storage *ss,
			    socklen_t *len, char *err, size_t errlen)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char host[64];
	const char *colon, *port;
	size_t hlen;
	char *end;
	long p;

	memset(ss, 0, sizeof(*ss));
	if (str[0] == '[') {
		const char *rb = strchr(str, ']');

		if (!rb || rb[1] != ':') {
			snprintf(err, errlen, "expected [IPV6]:PORT");
			return -EINVAL;
		}
		hlen = (size_t)(rb - str - 1);
		if (hlen >= sizeof(host)) {
			snprintf(err, errlen, "address too long");
			return -EINVAL;
		}
		memcpy(host, str + 1, hlen);
		host[hlen] = 0;
		port = rb + 2;
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1) {
			snprintf(err, errlen, "'%s' is not a numeric IPv6 address", host);
			return -EINVAL;
		}
		in6->sin6_family = AF_INET6;
		*len = sizeof(*in6);
	} else {
		colon = strrchr(str, ':');
		if (!colon) {
			snprintf(err, errlen, "expected HOST:PORT");
			return -EINVAL;
		}
		hlen = (size_t)(colon - str);
		if (!hlen) {
			snprintf(err, errlen, "no address before ':' (name the address to listen on, e.g. 127.0.0.1 or 0.0.0.0)");
			return -EINVAL;
		}
		if (hlen >= sizeof(host)) {
			snprintf(err, errlen, "address too long");
			return -EINVAL;
		}
		memcpy(host, str, hlen);
		host[hlen] = 0;
		port = colon + 1;
		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof(host), "127.0.0.1");
		if (inet_pton(AF_INET, host, &in4->sin_addr) != 1) {
			snprintf(err, errlen, "'%s' is not a numeric IPv4 address (names are not resolved: give the address; IPv6 as [ADDR]:PORT)",
				 host);
			return -EINVAL;
		}
		in4->sin_family = AF_INET;
		*len = sizeof(*in4);
	}
	errno = 0;
	p = strtol(port, &end, 10);
	if (!*port || *end || errno || p < 0 || p > 65535) {
		snprintf(err, errlen, "invalid port '%s' (0..65535)", port);
		return -EINVAL;
	}
	if (ss->ss_family == AF_INET)
		in4->sin_port = htons((uint16_t)p);
	else
		in6->sin6_port = htons((uint16_t)p);
	return 0;
}

bool serve_http__is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;

		return (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

static struct conn_state *conn_state_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* Queues one answer on c; the body NULL gives the "<code> <reason>\n"
 * of an error. Returns MHD_YES, or MHD_NO to have MHD drop c. */
static enum MHD_Result answer(struct serve_http *srv, struct MHD_Connection *c,
			      unsigned int code, const char *reason,
			      const char *allow, struct serve_body *body)
{
	struct MHD_Response *r = (struct MHD_Response *)body;
	struct conn_state *st = conn_state_of(c);
	enum MHD_Result ret;
	char msg[64];
	int n;

	if (code >= 400 && code < 500)
		srv->rejected++;
	if (!r) {
		n = snprintf(msg, sizeof(msg), "%u %s\n", code, reason);
		r = MHD_create_response_from_buffer((size_t)n, msg,
						    MHD_RESPMEM_MUST_COPY);
		if (!r)
			return MHD_NO;
		if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8") != MHD_YES ||
		    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION,
					    "close") != MHD_YES ||
		    (allow && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
						      allow) != MHD_YES)) {
			MHD_destroy_response(r);
			return MHD_NO;
		}
	}
	if (st)
		st->answered = true;
	/* From now on the send timeout: progress at least this often. */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned int)HTTP_SEND_TIMEOUT_S);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);	/* MHD holds its own reference */
	return ret;
}

static bool is_tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool is_token(const char *s, size_t max)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if (!is_tchar(*s))
			return false;
	return n && n <= max;
}

/* What the headers say, gathered by one pass over them. */
struct req_headers {
	bool bad;		/* a field name that is not a token */
	bool body;		/* Content-Length other than 0, Transfer-Encoding */
	bool openmetrics;	/* an Accept that names OpenMetrics */
};

static enum MHD_Result header_cb(void *cls, enum MHD_ValueKind kind,
				 const char *key, const char *value)
{
	struct req_headers *h = cls;

	(void)kind;
	if (!key || !is_token(key, SIZE_MAX))
		h->bad = true;
	else if (!strcasecmp(key, "Accept") && value &&
		 strstr(value, "application/openmetrics-text"))
		h->openmetrics = true;
	else if ((!strcasecmp(key, "Content-Length") &&
		  (!value || strcmp(value, "0"))) ||
		 !strcasecmp(key, "Transfer-Encoding"))
		h->body = true;
	return MHD_YES;
}

/*
 * MHD's access handler. Every request is answered on its first call,
 * before any body is read: a scrape has none, and one that announces a
 * body gets 413 and the connection closed.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **req)
{
	static int first;
	struct serve_http *srv = cls;
	struct req_headers h = { 0 };
	struct serve_body *body;
	const char *q;

	(void)upload;
	if (*req) {
		/* A body arriving after our answer: discard it. */
		*upload_size = 0;
		return MHD_YES;
	}
	*req = &first;
	if (strcmp(version, MHD_HTTP_VERSION_1_0) &&
	    strcmp(version, MHD_HTTP_VERSION_1_1))
		return answer(srv, c, 400, "Bad Request", NULL, NULL);
	if (!is_token(method, 16) || url[0] != '/')
		return answer(srv, c, 400, "Bad Request", NULL, NULL);
	for (q = url; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return answer(srv, c, 400, "Bad Request", NULL, NULL);
	MHD_get_connection_values(c, MHD_HEADER_KIND, header_cb, &h);
	if (h.bad)
		return answer(srv, c, 400, "Bad Request", NULL, NULL);
	if (h.body)
		return answer(srv, c, 413, "Content Too Large", NULL, NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return answer(srv, c, 405, "Method Not Allowed", "GET, HEAD",
			      NULL);
	/* MHD has cut the query string off url. */
	if (strcmp(url, srv->path))
		return answer(srv, c, 404, "Not Found", NULL, NULL);
	body = srv->handler(srv->ctx, h.openmetrics);
	if (!body)
		return answer(srv, c, 500, "Internal Server Error", NULL, NULL);
	return answer(srv, c, 200, "OK", NULL, body);
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr,
				 socklen_t len)
{
	struct serve_http *srv = cls;

	(void)addr;
	(void)len;
	if (srv->nconns >= HTTP_MAX_CONNS) {
		srv->dropped++;
		return MHD_NO;
	}
	return MHD_YES;
}

/*
 * A connection closed without an answer from us was either timed out by
 * MHD (silent for HTTP_REQUEST_TIMEOUT_S: counted dropped) or closed early:
 * refused by MHD itself, answered or not, for a request it could not parse,
 * or left by a client that never asked (counted rejected). MHD does not say
 * which; the connection's age tells a timeout from the rest. (Whether the
 * client or MHD closed first cannot be told reliably: MHD may shut the
 * socket down before this notification, and the client then leaves too.)
 */
static void conn_closed(struct serve_http *srv, const struct conn_state *st)
{
	if (st->answered)
		return;
	if (now_ms() - st->start_ms >= HTTP_REQUEST_TIMEOUT_S * 1000)
		srv->dropped++;
	else
		srv->rejected++;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **sock,
			  enum MHD_ConnectionNotificationCode what)
{
	struct serve_http *srv = cls;
	struct conn_state *st;

	(void)c;
	if (what == MHD_CONNECTION_NOTIFY_STARTED) {
		srv->nconns++;
		st = calloc(1, sizeof(*st));
		if (st)
			st->start_ms = now_ms();
		*sock = st;
		return;
	}
	srv->nconns--;
	st = *sock;
	if (st)
		conn_closed(srv, st);
	free(st);
	*sock = NULL;
}

/* A timeout while MHD was sending our answer. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req,
			 enum MHD_RequestTerminationCode why)
{
	struct serve_http *srv = cls;

	(void)c;
	(void)req;
	if (why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
		srv->dropped++;
}

/* MHD's own messages (a client's protocol error, mostly): with -v only. */
static void on_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	if (!sp_verbose)
		return;
	fputs("sptrace: serve: ", stderr);
	vfprintf(stderr, fmt, ap);
}

int serve_http__open(struct serve_http *srv,
		     const struct sockaddr_storage *ss, socklen_t len,
		     const char *path, serve_http_handler_fn handler,
		     void *ctx)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	char host[INET6_ADDRSTRLEN];
	int one = 1, err, port;

	memset(srv, 0, sizeof(*srv));
	srv->lfd = -1;
	srv->path = path;
	srv->handler = handler;
	srv->ctx = ctx;
	srv->lfd = socket(ss->ss_family,
			  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0)
		goto fail;
	setsockopt(srv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(srv->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
			   sizeof(one));
	if (bind(srv->lfd, (const struct sockaddr *)ss, len) ||
	    listen(srv->lfd, 128) ||
	    getsockname(srv->lfd, (struct sockaddr *)&bound, &blen))
		goto fail;
	srv->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
			(ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, on_accept, srv, on_request, srv,
		MHD_OPTION_EXTERNAL_LOGGER, on_log, srv,
		MHD_OPTION_LISTEN_SOCKET, srv->lfd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_MAX_CONNS + 1,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MAX_REQUEST,
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)HTTP_REQUEST_TIMEOUT_S,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		/* We never raise SIGPIPE: MHD sends with MSG_NOSIGNAL. */
		MHD_OPTION_END);
	if (!srv->mhd) {
		errno = EIO;
		goto fail;
	}
	if (bound.ss_family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&bound;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
		snprintf(srv->addr, sizeof(srv->addr), "%s:%d", host, port);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&bound;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
		snprintf(srv->addr, sizeof(srv->addr), "[%s]:%d", host, port);
	}
	return 0;
fail:
	err = -errno;
	serve_http__close(srv);
	return err;
}

int serve_http__fd(const struct serve_http *srv)
{
	const union MHD_DaemonInfo *di;

	di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	return di ? di->epoll_fd : -1;
}

bool serve_http__poll(struct serve_http *srv)
{
	MHD_UNSIGNED_LONG_LONG ms;
	uint64_t t0 = now_ms();

	/*
	 * MHD_run() never blocks here (external polling) and also expires
	 * timeouts. One run moves one piece per connection (a streamed body:
	 * one SERVE_STREAM_BLOCK); a connection with more to write at once
	 * makes MHD_get_timeout() 0. Its epoll is edge-triggered, and TCP
	 * signals room in a socket only after a send found it full: a
	 * connection left with the client keeping up would wait for the
	 * session's next tick (50 ms). So runs go on while MHD has work,
	 * bounded by about one tick (the session's loop must come back),
	 * and the caller is told to come back at once.
	 */
	do {
		MHD_run(srv->mhd);
		if (MHD_get_timeout(srv->mhd, &ms) != MHD_YES || ms)
			return false;
	} while (now_ms() - t0 < HTTP_POLL_MAX_MS);
	return true;
}

void serve_http__close(struct serve_http *srv)
{
	if (srv->mhd) {
		/* Quiesced first, the listening socket stays ours to close
		 * (MHD_stop_daemon would close it otherwise). */
		MHD_quiesce_daemon(srv->mhd);
		MHD_stop_daemon(srv->mhd);	/* closes every connection */
	}
	srv->mhd = NULL;
	if (srv->lfd >= 0)
		close(srv->lfd);
	srv->lfd = -1;
}
