/* SPDX-License-Identifier: MIT */
/* The sptrace commands (cmd_*.c) and the small parsing helpers they share. */
#ifndef SPTRACE_COMMANDS_H
#define SPTRACE_COMMANDS_H

/* Each returns the process exit status. argv[0] is the command name. */
int cmd_trace(int argc, char **argv);
int cmd_list(int argc, char **argv);

/* Whole-string numbers within [min, max]: 0 or -EINVAL (-ERANGE out of range). */
int parse_long(const char *s, long min, long max, long *out);
int parse_double(const char *s, double min, double max, double *out);

#endif /* SPTRACE_COMMANDS_H */
