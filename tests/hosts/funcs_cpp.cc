// SPDX-License-Identifier: MIT
// --func host in C++: an exception thrown through two functions every
// iteration, so their return probes never fire.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

NOINLINE void fn_work() { sink++; }

NOINLINE void fn_throw_inner()
{
	sink++;
	throw std::runtime_error("unwind");
}

NOINLINE void fn_throw_outer()
{
	fn_throw_inner();
	sink++;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 10;

	for (int i = 0; i < n; i++) {
		fn_work();
		try {
			fn_throw_outer();
		} catch (const std::exception &) {
			sink++;
		}
	}
	std::printf("done %d\n", n);
	return 0;
}
