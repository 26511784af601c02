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
#include <string.h>

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

/* In the array `v` of `n` elements sorted by their member `field`: the
 * index of the first whose field is not below `key` (n if none), i.e.
 * where key is, or where it goes. */
#define VEC_LOWER_BOUND(v, n, field, key)                                      \
	({                                                                     \
		size_t lo_ = 0, hi_ = (n);                                     \
		while (lo_ < hi_) {                                            \
			size_t mid_ = lo_ + (hi_ - lo_) / 2;                   \
			if ((v)[mid_].field < (key))                           \
				lo_ = mid_ + 1;                                \
			else                                                   \
				hi_ = mid_;                                    \
		}                                                              \
		lo_;                                                           \
	})

/* A zeroed element at index `at` of the array `v` (count `n`, capacity
 * `cap`: lvalues), those from `at` on moved up one: its address, or NULL
 * with the array unchanged (-ENOMEM). */
#define VEC_INSERT_AT(v, n, cap, at)                                           \
	({                                                                     \
		size_t at_ = (at);                                             \
		__typeof__(&(v)[0]) el_ = NULL;                                \
		if (!VEC_RESERVE(v, cap, (n) + 1)) {                           \
			memmove(&(v)[at_ + 1], &(v)[at_],                      \
				((n) - at_) * sizeof(*(v)));                   \
			(n)++;                                                 \
			el_ = &(v)[at_];                                       \
			memset(el_, 0, sizeof(*el_));                          \
		}                                                              \
		el_;                                                           \
	})

#endif /* SPTRACE_VEC_H */
