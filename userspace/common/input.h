/* SPDX-License-Identifier: MIT */
/*
 * common/ layer: opening the files sptrace reads (trace files, summaries,
 * spec files, ELF files): regular files only. open() of a FIFO waits for a
 * writer, and a device or a socket may never end: each is refused at once,
 * without blocking, in one place for every reader.
 */
#ifndef SPTRACE_INPUT_H
#define SPTRACE_INPUT_H

/* The errno (negated) input__open() returns for a file that is not a
 * regular file nor a directory; input__strerror() words it. */
#define EINPUT_NOTREG EMEDIUMTYPE

/* Opens path read-only (O_CLOEXEC): an fd, or -errno: the errors of
 * open(), -EISDIR for a directory, -EINPUT_NOTREG for a FIFO, a device
 * or a socket. Never blocks. */
int input__open(const char *path);
/* strerror(-err), but for -EINPUT_NOTREG what that means. */
const char *input__strerror(int err);

#endif /* SPTRACE_INPUT_H */
