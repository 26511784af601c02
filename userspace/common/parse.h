/* SPDX-License-Identifier: MIT */
/* Numbers from the command line and from /proc: the whole string, errno
 * checked, within a range. */
#ifndef SPTRACE_PARSE_H
#define SPTRACE_PARSE_H

/* Whole-string numbers within [min, max]: 0 or -EINVAL (-ERANGE out of range). */
int parse_long(const char *s, long min, long max, long *out);
int parse_double(const char *s, double min, double max, double *out);

#endif /* SPTRACE_PARSE_H */
