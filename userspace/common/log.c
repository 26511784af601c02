// SPDX-License-Identifier: MIT
/* User-facing messages and the libbpf print callback. */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "log.h"

bool sp_verbose;

static void vsay(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void sp_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("sptrace: ", fmt, ap);
	va_end(ap);
}

void sp_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("sptrace: warning: ", fmt, ap);
	va_end(ap);
}

void sp_info(const char *fmt, ...)
{
	va_list ap;

	if (!sp_verbose)
		return;
	va_start(ap, fmt);
	vsay("sptrace: ", fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	(void)level;
	if (!sp_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void sp_log_setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
