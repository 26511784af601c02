// SPDX-License-Identifier: MIT
// Throws and catches N exceptions (argv[1], default 100): the libstdcxx
// throw and catch probes of libstdc++ fire N times each.
#include <cstdlib>
#include <stdexcept>

static int __attribute__((noinline)) thrower(int i)
{
	if (i >= 0)
		throw std::runtime_error("spec test");
	return i;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 100, caught = 0;

	for (int i = 0; i < n; i++) {
		try {
			thrower(i);
		} catch (const std::exception &) {
			caught++;
		}
	}
	return caught == n ? 0 : 1;
}
