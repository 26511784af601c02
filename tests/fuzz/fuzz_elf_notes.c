// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for ELF/USDT discovery: the input is an ELF file given
 * to usdt_file__open_fd() (notes, program headers, section headers all
 * hostile), and also, as a string, an argument spec for usdt_args__parse()
 * and attach__cookie_from_args()'s parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elf_notes.h"
#include "usdt_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usdt_arg args[USDT_ARGS_MAX];
	struct usdt_file *f = NULL;
	unsigned int bad = 0;
	char *spec;
	int fd;

	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size &&
	    !usdt_file__open_fd(fd, "fuzz.elf", &f, &bad)) {
		size_t i;

		/* Touch every field a caller would use. */
		for (i = 0; i < f->nsites; i++)
			if (f->sites[i].args)
				usdt_args__parse(f->sites[i].args, args,
						 USDT_ARGS_MAX);
		usdt_file__count(f, "sp");
		usdt_file__free(f);
	}
	close(fd);

	spec = malloc(size + 1);
	if (spec) {
		memcpy(spec, data, size);
		spec[size] = 0;
		usdt_args__parse(spec, args, USDT_ARGS_MAX);
		free(spec);
	}
	return 0;
}
