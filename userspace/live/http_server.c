// SPDX-License-Identifier: MIT
/*
 * The HTTP server of `sptrace serve` (http_server.h). One request per
 * connection, answered with "Connection: close": no keep-alive state, and
 * a client that stalls, sends garbage or goes away mid-response costs one
 * slot until its timeout, never the tracing. SIGPIPE is avoided with
 * MSG_NOSIGNAL on every send.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include "http_server.h"
#include "log.h"

struct http_conn {
	int fd;				/* -1: free slot */
	bool writing;
	size_t inlen;
	char in[HTTP_MAX_REQUEST];
	char head[512];
	size_t headlen;
	struct http_body *body;		/* NULL: head only */
	const char *msg;		/* static body of an error answer */
	size_t msglen;
	size_t off;			/* bytes sent, head included */
	uint64_t deadline_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void http_body__put(struct http_body *b)
{
	if (b && !--b->refs) {
		free(b->data);
		free(b);
	}
}

int http_server__parse_addr(const char *str, struct sockaddr_storage *ss,
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

bool http_server__is_loopback(const struct sockaddr_storage *ss)
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

static void conn_close(struct http_server *srv, struct http_conn *c)
{
	epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	http_body__put(c->body);
	c->body = NULL;
	srv->nconns--;
}

int http_server__open(struct http_server *srv,
		      const struct sockaddr_storage *ss, socklen_t len,
		      const char *path, http_handler_fn handler, void *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	char host[INET6_ADDRSTRLEN];
	int one = 1, err, i, port;

	memset(srv, 0, sizeof(*srv));
	srv->epfd = srv->lfd = -1;
	srv->path = path;
	srv->handler = handler;
	srv->ctx = ctx;
	srv->conns = calloc(HTTP_MAX_CONNS, sizeof(*srv->conns));
	if (!srv->conns)
		return -ENOMEM;
	for (i = 0; i < HTTP_MAX_CONNS; i++)
		srv->conns[i].fd = -1;
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
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (srv->epfd < 0 ||
	    epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->lfd, &ev))
		goto fail;
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
	http_server__close(srv);
	return err;
}

void http_server__close(struct http_server *srv)
{
	int i;

	for (i = 0; srv->conns && i < HTTP_MAX_CONNS; i++)
		if (srv->conns[i].fd >= 0)
			conn_close(srv, &srv->conns[i]);
	free(srv->conns);
	srv->conns = NULL;
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->epfd >= 0)
		close(srv->epfd);
	srv->lfd = srv->epfd = -1;
}

/* Sends what it can; closes the connection when done or broken. */
static void conn_send(struct http_server *srv, struct http_conn *c)
{
	size_t blen = c->body ? c->body->len : c->msglen;
	const char *bdata = c->body ? c->body->data : c->msg;

	while (c->off < c->headlen + blen) {
		const char *p;
		size_t n;
		ssize_t w;

		if (c->off < c->headlen) {
			p = c->head + c->off;
			n = c->headlen - c->off;
		} else {
			p = bdata + (c->off - c->headlen);
			n = c->headlen + blen - c->off;
		}
		w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;		/* EPOLLOUT brings us back */
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			conn_close(srv, c);	/* the client went away */
			return;
		}
		c->off += (size_t)w;
		c->deadline_ms = now_ms() + HTTP_SEND_TIMEOUT_MS;
	}
	shutdown(c->fd, SHUT_WR);
	conn_close(srv, c);
}

static void respond(struct http_server *srv, struct http_conn *c, int code,
		    const char *reason, const char *extra, bool head_only,
		    struct http_body *body)
{
	struct epoll_event ev = { .events = EPOLLOUT };
	size_t blen;

	if (code >= 400 && code < 500)
		srv->rejected++;
	if (!body) {
		static char msgbuf[HTTP_MAX_CONNS][64];
		size_t i = (size_t)(c - srv->conns);

		snprintf(msgbuf[i], sizeof(msgbuf[i]), "%d %s\n", code, reason);
		c->msg = msgbuf[i];
		c->msglen = strlen(c->msg);
	}
	blen = body ? body->len : c->msglen;
	c->headlen = (size_t)snprintf(c->head, sizeof(c->head),
		"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
		code, reason,
		body ? body->content_type : "text/plain; charset=utf-8", blen,
		extra ? extra : "");
	c->body = body;
	if (head_only) {
		http_body__put(body);
		c->body = NULL;
		c->msglen = 0;
	}
	c->off = 0;
	c->writing = true;
	c->deadline_ms = now_ms() + HTTP_SEND_TIMEOUT_MS;
	ev.data.u32 = (uint32_t)(c - srv->conns) + 1;
	epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	conn_send(srv, c);
}

static bool is_tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || strchr("!#$%&'*+-.^_`|~", ch);
}

/* The request in c->in (headers complete, NUL-terminated at their end). */
static void handle(struct http_server *srv, struct http_conn *c)
{
	char *line, *save = NULL, *method, *target, *version, *q;
	bool openmetrics = false, head;
	struct http_body *body;
	size_t plen;

	line = strtok_r(c->in, "\n", &save);
	if (!line)
		goto bad;
	line[strcspn(line, "\r")] = 0;
	method = line;
	target = strchr(method, ' ');
	if (!target)
		goto bad;
	*target++ = 0;
	version = strchr(target, ' ');
	if (!version)
		goto bad;
	*version++ = 0;
	if (!*method || strlen(method) > 16 || target[0] != '/' ||
	    (strcmp(version, "HTTP/1.0") && strcmp(version, "HTTP/1.1")))
		goto bad;
	for (q = method; *q; q++)
		if (!is_tchar(*q))
			goto bad;
	for (q = target; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			goto bad;
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *colon, *v;

		line[strcspn(line, "\r")] = 0;
		if (!*line)
			break;
		colon = strchr(line, ':');
		if (!colon || colon == line)
			goto bad;
		for (q = line; q < colon; q++)
			if (!is_tchar(*q))
				goto bad;
		*colon = 0;
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		if (!strcasecmp(line, "Accept") &&
		    strstr(v, "application/openmetrics-text"))
			openmetrics = true;
		if ((!strcasecmp(line, "Content-Length") && strcmp(v, "0")) ||
		    !strcasecmp(line, "Transfer-Encoding")) {
			respond(srv, c, 413, "Content Too Large", NULL, false,
				NULL);
			return;
		}
	}
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		respond(srv, c, 405, "Method Not Allowed",
			"Allow: GET, HEAD\r\n", false, NULL);
		return;
	}
	plen = strcspn(target, "?");
	if (plen != strlen(srv->path) || strncmp(target, srv->path, plen)) {
		respond(srv, c, 404, "Not Found", NULL, head, NULL);
		return;
	}
	body = srv->handler(srv->ctx, openmetrics);
	if (!body) {
		respond(srv, c, 500, "Internal Server Error", NULL, head, NULL);
		return;
	}
	respond(srv, c, 200, "OK", NULL, head, body);
	return;
bad:
	respond(srv, c, 400, "Bad Request", NULL, false, NULL);
}

static void conn_read(struct http_server *srv, struct http_conn *c)
{
	char *end;
	ssize_t n;

	for (;;) {
		if (c->inlen == sizeof(c->in) - 1) {
			respond(srv, c, 431, "Request Header Fields Too Large",
				NULL, false, NULL);
			return;
		}
		n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen,
			 MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_close(srv, c);	/* gone before asking */
			return;
		}
		c->inlen += (size_t)n;
		c->in[c->inlen] = 0;
		if (memchr(c->in, 0, c->inlen)) {
			respond(srv, c, 400, "Bad Request", NULL, false, NULL);
			return;
		}
		end = strstr(c->in, "\r\n\r\n");
		if (!end)
			end = strstr(c->in, "\n\n");
		if (end) {
			end[1] = 0;	/* keeps one '\n' of the last line */
			handle(srv, c);
			return;
		}
	}
}

static void accept_all(struct http_server *srv)
{
	static const char busy[] =
		"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	int fd, i;

	while ((fd = accept4(srv->lfd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct http_conn *c = NULL;

		for (i = 0; srv->nconns < HTTP_MAX_CONNS && i < HTTP_MAX_CONNS; i++)
			if (srv->conns[i].fd < 0) {
				c = &srv->conns[i];
				break;
			}
		if (!c) {
			/* Full: a best-effort answer, never a wait. */
			if (send(fd, busy, sizeof(busy) - 1,
				 MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				errno = 0;
			close(fd);
			srv->dropped++;
			continue;
		}
		ev.data.u32 = (uint32_t)i + 1;
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->writing = false;
		c->inlen = 0;
		c->body = NULL;
		c->off = 0;
		c->deadline_ms = now_ms() + HTTP_REQUEST_TIMEOUT_MS;
		srv->nconns++;
	}
}

void http_server__poll(struct http_server *srv)
{
	struct epoll_event evs[64];
	uint64_t now;
	int n, i, round;

	/* A bounded number of rounds: the session's loop must come back. */
	for (round = 0; round < 16; round++) {
		n = epoll_wait(srv->epfd, evs, 64, 0);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			uint32_t id = evs[i].data.u32;
			struct http_conn *c;

			if (!id) {
				accept_all(srv);
				continue;
			}
			c = &srv->conns[id - 1];
			if (c->fd < 0)
				continue;	/* closed earlier in this batch */
			if (c->writing)
				conn_send(srv, c);
			else
				conn_read(srv, c);
		}
		if (n < 64)
			break;
	}
	now = now_ms();
	for (i = 0; srv->nconns && i < HTTP_MAX_CONNS; i++) {
		struct http_conn *c = &srv->conns[i];

		if (c->fd >= 0 && now > c->deadline_ms) {
			conn_close(srv, c);
			srv->dropped++;
		}
	}
}
