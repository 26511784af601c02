/* SPDX-License-Identifier: MIT */
/*
 * The growable array: an element pointer, a count and a capacity kept by
 * the caller, grown by doubling (amortized O(1) appends) with the size
 * arithmetic checked once, here.
 */
#ifndef SPTRACE_VEC_H
#define SPTRACE_VEC_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes room for `need` elements of `elem` bytes in *v, whose capacity is
 * *cap elements: doubles it (at least `min`) until need fits. 0, or
 * -ENOMEM with *v and *cap unchanged. */
static inline int vec__reserve(void **v, size_t *cap, size_t need,
			       size_t elem, size_t min)
{
	size_t ncap = *cap ? *cap : min;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*v, ncap * elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

/* Room for n elements in the array `v` (any pointer lvalue) of capacity
 * `cap` (a size_t lvalue), starting at `min` elements: 0 or -ENOMEM. */
#define VEC_RESERVE_MIN(v, cap, n, min)                                        \
	({                                                                     \
		void *p_ = (v);                                                \
		int e_ = vec__reserve(&p_, &(cap), (n), sizeof(*(v)), (min));  \
		(v) = p_;                                                      \
		e_;                                                            \
	})
#define VEC_RESERVE(v, cap, n) VEC_RESERVE_MIN(v, cap, n, 8)

#endif /* SPTRACE_VEC_H */
