// SPDX-License-Identifier: MIT
/*
 * Two shares of one object's programs verified at once (split_load.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include "split_load.h"

/* Every map of `to` reuses the map of `from` at its place: both were
 * opened from the same object file, so their maps come in one order. */
static int reuse_maps(struct bpf_object *from, struct bpf_object *to)
{
	struct bpf_map *f = NULL, *t = NULL;
	int err;

	for (;;) {
		f = bpf_object__next_map(from, f);
		t = bpf_object__next_map(to, t);
		if (!f || !t)
			return f == t ? 0 : -EINVAL;
		err = bpf_map__reuse_fd(t, bpf_map__fd(f));
		if (err)
			return err;
	}
}

static void *load_thread(void *arg)
{
	struct bpf_object_skeleton *s = arg;

	return (void *)(long)bpf_object__load_skeleton(s);
}

int split_load(struct bpf_object_skeleton *maps, struct bpf_object_skeleton *a,
	       struct bpf_object_skeleton *b)
{
	pthread_t t;
	void *ret;
	int err, err_b;

	err = bpf_object__load_skeleton(maps);
	if (!err)
		err = reuse_maps(*maps->obj, *a->obj);
	if (!err)
		err = reuse_maps(*maps->obj, *b->obj);
	if (err)
		return err;
	/* Without a thread (out of them): one after the other. */
	if (pthread_create(&t, NULL, load_thread, b)) {
		err = bpf_object__load_skeleton(a);
		return err ? err : bpf_object__load_skeleton(b);
	}
	err = bpf_object__load_skeleton(a);
	pthread_join(t, &ret);
	err_b = (int)(long)ret;
	return err ? err : err_b;
}
