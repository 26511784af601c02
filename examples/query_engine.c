// SPDX-License-Identifier: MIT
/*
 * query_engine: a toy compiler built like rustc's query system, instrumented
 * with sptrace probes so that every column of sptrace's table has data.
 *
 *   query_engine [-j THREADS] [-n ITEMS] [-s SCALE] [-q] [-V]
 *
 *   sudo sptrace -- ./query_engine
 *
 * THE MODEL
 * A "crate" of ITEMS items, grouped in modules of MODULE_ITEMS. Each query
 * computes one value for one key (an item, a module or the whole crate) and
 * may request other queries:
 *
 *   codegen(i)  -> optimize(i), typeck(i)
 *   optimize(i) -> borrowck(i)
 *   borrowck(i) -> typeck(i)
 *   typeck(i)   -> resolve(i), trait_impls(module of i), resolve(i - 1)
 *   trait_impls(m) -> lang_items()
 *   resolve(i)  -> expand(i), lang_items()
 *   expand(i)   -> parse(i)
 *
 * Results are memoised in a hash table shared by the worker threads, guarded
 * by one mutex. Asking for a (query, key) that is
 *   - done:            SP_CACHE_HIT, no BEGIN/END (nothing runs);
 *   - being computed by another thread: wait on a condition variable inside
 *                      SP_BLOCKED_BEGIN/END (crate- and module-level queries
 *                      and the neighbour dependency make this frequent);
 *   - new:             claim it, then load it from the incremental cache
 *                      inside SP_INCR_LOAD_BEGIN/END, or run its provider
 *                      inside SP_QUERY_BEGIN/END.
 *
 * Two compilation sessions run, like two invocations of an incremental
 * compiler: a clean build that ends by writing its persistable results to
 * files in a fresh temporary directory (the "incremental cache"), then a
 * rebuild after editing a quarter of the items, which starts by reading the
 * cache index and then loads (with pread) every persisted result whose inputs
 * did not change instead of recomputing it. -V adds a third, clean build of
 * the edited sources and checks the rebuild produced the same result.
 *
 * No deadlock: every query only requests queries of lower rank (the order of
 * enum query), so a thread waiting for a result waits for a thread that only
 * ever waits for lower-ranked results; the chain ends.
 *
 * Work is deterministic busy computation, so the set of executed queries and
 * incremental loads is the same on every run; only the split of the other
 * requests between cache hits and blocked waits depends on timing. The last
 * line sums what the program did, for comparison with sptrace's table:
 *
 *   items=N queries=Q cache_hits=H incr_loads=L blocked=B
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sp_probe.h>

#define MODULE_ITEMS 16
/* Busy-work rounds in one tick (about 0.1 ms at -O2 on a current x86-64);
 * the default run is about 2 s on two CPUs. */
#define TICK_ROUNDS 75000
#define MAX_THREADS 256
#define MAX_ITEMS 100000

/* In rank order: a query only requests queries listed before it. */
enum query {
	Q_PARSE,
	Q_LANG_ITEMS,
	Q_EXPAND,
	Q_RESOLVE,
	Q_TRAIT_IMPLS,
	Q_TYPECK,
	Q_BORROWCK,
	Q_OPTIMIZE,
	Q_CODEGEN,
	Q__COUNT,
};

enum key_kind { PER_ITEM, PER_MODULE, PER_CRATE };

static const struct query_info {
	const char *name;	/* a string literal: sptrace keys by pointer */
	unsigned int ticks;	/* own work, excluding sub-queries */
	enum key_kind kind;
	bool persisted;		/* saved to, and loaded from, the incr cache */
} queries[Q__COUNT] = {
	[Q_PARSE] = { "parse", 4, PER_ITEM, false },
	[Q_LANG_ITEMS] = { "lang_items", 120, PER_CRATE, true },
	[Q_EXPAND] = { "expand", 4, PER_ITEM, false },
	[Q_RESOLVE] = { "resolve", 4, PER_ITEM, false },
	[Q_TRAIT_IMPLS] = { "trait_impls", 24, PER_MODULE, true },
	[Q_TYPECK] = { "typeck", 12, PER_ITEM, true },
	[Q_BORROWCK] = { "borrowck", 8, PER_ITEM, false },
	[Q_OPTIMIZE] = { "optimize", 10, PER_ITEM, true },
	[Q_CODEGEN] = { "codegen", 6, PER_ITEM, false },
};

/* Results are stored encoded; encoding or decoding one costs this much. */
#define CODEC_TICKS 1

/* Whole-session activities, recorded as queries with SP_SCOPE. They are
 * counted apart so that queries= matches the sum of sptrace's counts. */
enum activity { A_PERSIST, A_LOAD_DEP_GRAPH, A__COUNT };
static const char *const activity_names[A__COUNT] = {
	"persist_result_cache", "load_dep_graph",
};

struct counts {
	uint64_t executed[Q__COUNT];
	uint64_t cache_hits[Q__COUNT];
	uint64_t incr_loads[Q__COUNT];
	uint64_t blocked[Q__COUNT];
	uint64_t activities[A__COUNT];
};

struct options {
	unsigned int threads;
	unsigned int items;
	double scale;
	bool quiet;
	bool verify;
};

/* ---- the incremental cache on disk ---------------------------------------
 * Two files, as rustc keeps them: dep-graph.bin, an index read whole at the
 * start of a session, and query-cache.bin, the results, read one record at a
 * time when a query needs it. Both start with magic + version.
 */
#define CACHE_VERSION 1
#define RESULTS_MAGIC "QEresult"
#define INDEX_MAGIC "QEdepgrf"

struct file_header {
	char magic[8];
	uint32_t version;
	uint32_t count;
};

struct result_record {
	uint32_t query;
	uint32_t key;
	uint64_t encoded;	/* encode(value) */
	uint64_t check;		/* of the value: catches a wrong record */
};

struct index_entry {
	uint32_t query;
	uint32_t key;
	uint64_t offset;	/* of the result_record in query-cache.bin */
};

/* Paths are static so that the signal handler can remove the files. */
static char tmp_dir[PATH_MAX - 32];
static char index_path[PATH_MAX];
static char results_path[PATH_MAX];

/* ---- sessions ------------------------------------------------------------ */
enum memo_state { MEMO_FREE = 0, MEMO_RUNNING, MEMO_DONE };

struct memo_entry {
	uint64_t key;		/* (query << 32 | key) + 1; 0 never appears */
	uint64_t value;
	int state;		/* enum memo_state */
};

struct session {
	const struct options *opt;
	unsigned int modules;
	int generation;		/* 0: original sources; 1: after the edits */
	bool incremental;	/* load green results from the cache */
	unsigned long tick_rounds;

	pthread_mutex_t lock;	/* guards memo[] and nothing else */
	pthread_cond_t done;	/* broadcast when an entry becomes DONE */
	struct memo_entry *memo;
	size_t memo_mask;

	atomic_uint next_item;	/* the work queue: items in order */

	int results_fd;		/* query-cache.bin, incremental sessions */
	int64_t *cache_pos[Q__COUNT];	/* per key: record offset, or -1 */
};

struct worker {
	struct session *s;
	pthread_t thread;
	unsigned int id;
	struct counts c;	/* private to the worker until joined */
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

#define CHURN_MUL 0x9e3779b97f4a7c15ull

/* Deterministic busy work standing in for real computation. Every round is
 * invertible, which makes it the cache's (slow) encoding too. */
static uint64_t churn(uint64_t x, unsigned long rounds)
{
	while (rounds--) {
		x ^= x >> 31;
		x *= CHURN_MUL;
	}
	return x;
}

/* The inverse of churn(x, rounds), so the cache's decoding is real work. */
static uint64_t unchurn(uint64_t x, unsigned long rounds)
{
	uint64_t inv = CHURN_MUL;
	int i;

	for (i = 0; i < 5; i++)		/* Newton: inverse of an odd number */
		inv *= 2 - CHURN_MUL * inv;
	while (rounds--) {
		x *= inv;
		x ^= (x >> 31) ^ (x >> 62);
	}
	return x;
}

static unsigned int key_count(const struct session *s, enum query q)
{
	switch (queries[q].kind) {
	case PER_ITEM:
		return s->opt->items;
	case PER_MODULE:
		return s->modules;
	case PER_CRATE:
		break;
	}
	return 1;
}

/* The rebuild edits a fixed quarter of the items. */
static bool edited(const struct session *s, unsigned int item)
{
	return s->generation > 0 && mix64(item) % 4 == 0;
}

/*
 * Whether a persisted result's inputs are unchanged since the clean build
 * (rustc's "green"): lang_items and trait_impls read no item; typeck(i), and
 * optimize(i) through borrowck(i), read items i and i - 1.
 */
static bool green(const struct session *s, enum query q, unsigned int key)
{
	if (queries[q].kind != PER_ITEM)
		return true;
	return !edited(s, key) && !(key > 0 && edited(s, key - 1));
}

static uint64_t record_check(uint32_t q, uint32_t key, uint64_t value)
{
	return mix64(value ^ mix64(((uint64_t)q << 32) | key));
}

static uint64_t memo_key(enum query q, unsigned int key)
{
	return (((uint64_t)q << 32) | key) + 1;
}

/* Finds the entry of (q, key), or the free slot where it goes. The table
 * never fills: it has twice as many slots as there are (query, key) pairs. */
static struct memo_entry *memo_slot(struct session *s, enum query q,
				    unsigned int key)
{
	uint64_t k = memo_key(q, key);
	size_t i = mix64(k) & s->memo_mask;

	while (s->memo[i].key && s->memo[i].key != k)
		i = (i + 1) & s->memo_mask;
	s->memo[i].key = k;
	return &s->memo[i];
}

/* Reads exactly len bytes at off; 0 or -errno (-EIO on a short file). */
static int pread_exact(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static uint64_t query(struct worker *w, enum query q, unsigned int key);

/* Loads a green persisted result from query-cache.bin. Returns false when
 * the query must run instead (not persisted, red, or not in the cache). */
static bool try_load(struct worker *w, enum query q, unsigned int key,
		     uint64_t *value)
{
	struct session *s = w->s;
	const char *name = queries[q].name;
	struct result_record r;
	bool ok;
	int err;

	if (!s->incremental || !queries[q].persisted || !green(s, q, key) ||
	    s->cache_pos[q][key] < 0)
		return false;

	SP_INCR_LOAD_BEGIN(name);
	err = pread_exact(s->results_fd, &r, sizeof(r), s->cache_pos[q][key]);
	if (!err)
		*value = unchurn(r.encoded, CODEC_TICKS * s->tick_rounds);
	ok = !err && r.query == (uint32_t)q && r.key == key &&
	     r.check == record_check(r.query, r.key, *value);
	SP_INCR_LOAD_END(name);

	w->c.incr_loads[q]++;
	if (!ok)	/* like a compiler, recompute rather than fail */
		fprintf(stderr, "query_engine: %s: bad record for %s(%u)%s%s; recomputing\n",
			results_path, name, key, err ? ": " : "",
			err ? strerror(-err) : "");
	return ok;
}

/* The providers: compute one query, requesting its inputs through query(). */
static uint64_t provide(struct worker *w, enum query q, unsigned int key)
{
	const struct session *s = w->s;
	uint64_t in = 0;

	switch (q) {
	case Q_PARSE:	/* the "source text" of the item */
		in = mix64(((uint64_t)(edited(s, key) ? s->generation : 0) << 32) | key);
		break;
	case Q_LANG_ITEMS:
		in = 0x1a46;
		break;
	case Q_EXPAND:
		in = query(w, Q_PARSE, key);
		break;
	case Q_RESOLVE:
		in = query(w, Q_EXPAND, key) ^ query(w, Q_LANG_ITEMS, 0);
		break;
	case Q_TRAIT_IMPLS:
		in = query(w, Q_LANG_ITEMS, 0) + key;
		break;
	case Q_TYPECK:
		in = query(w, Q_RESOLVE, key);
		in ^= query(w, Q_TRAIT_IMPLS, key / MODULE_ITEMS);
		if (key > 0)
			in += mix64(query(w, Q_RESOLVE, key - 1));
		break;
	case Q_BORROWCK:
		in = query(w, Q_TYPECK, key);
		break;
	case Q_OPTIMIZE:
		in = query(w, Q_BORROWCK, key);
		break;
	case Q_CODEGEN:
		in = query(w, Q_OPTIMIZE, key) ^ query(w, Q_TYPECK, key);
		break;
	case Q__COUNT:
		abort();
	}
	return churn(in ^ ((uint64_t)q << 56), queries[q].ticks * s->tick_rounds);
}

/* Returns the value of q(key): from memory, from another thread, from the
 * incremental cache, or by running the provider. */
static uint64_t query(struct worker *w, enum query q, unsigned int key)
{
	struct session *s = w->s;
	const char *name = queries[q].name;
	struct memo_entry *e;
	uint64_t v;

	pthread_mutex_lock(&s->lock);
	e = memo_slot(s, q, key);
	if (e->state == MEMO_DONE) {
		v = e->value;
		pthread_mutex_unlock(&s->lock);
		SP_CACHE_HIT(name);
		w->c.cache_hits[q]++;
		return v;
	}
	if (e->state == MEMO_RUNNING) {
		/* BEGIN fires under the lock (it is a few hundred ns when
		 * traced, nothing otherwise) so it cannot miss the wake-up. */
		SP_BLOCKED_BEGIN(name);
		do
			pthread_cond_wait(&s->done, &s->lock);
		while (e->state != MEMO_DONE);
		v = e->value;
		pthread_mutex_unlock(&s->lock);
		SP_BLOCKED_END(name);
		w->c.blocked[q]++;
		return v;
	}
	e->state = MEMO_RUNNING;	/* claimed: others asking now wait */
	pthread_mutex_unlock(&s->lock);

	if (!try_load(w, q, key, &v)) {
		SP_QUERY_BEGIN(name);
		v = provide(w, q, key);
		SP_QUERY_END(name);
		w->c.executed[q]++;
	}

	pthread_mutex_lock(&s->lock);
	e->value = v;
	e->state = MEMO_DONE;
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->lock);
	return v;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct session *s = w->s;
	char tname[16];

	snprintf(tname, sizeof(tname), "worker-%u", w->id);
	pthread_setname_np(pthread_self(), tname);
	SP_THREAD_NAME("worker");

	for (;;) {
		unsigned int item = atomic_fetch_add(&s->next_item, 1);

		if (item >= s->opt->items)
			break;
		(void)query(w, Q_CODEGEN, item);
	}
	return NULL;
}

static void counts_add(struct counts *to, const struct counts *from)
{
	int q;

	for (q = 0; q < Q__COUNT; q++) {
		to->executed[q] += from->executed[q];
		to->cache_hits[q] += from->cache_hits[q];
		to->incr_loads[q] += from->incr_loads[q];
		to->blocked[q] += from->blocked[q];
	}
	for (q = 0; q < A__COUNT; q++)
		to->activities[q] += from->activities[q];
}

static int session_init(struct session *s, const struct options *opt,
			int generation)
{
	size_t pairs = 0, cap = 16;
	int q;

	memset(s, 0, sizeof(*s));
	s->opt = opt;
	s->modules = (opt->items + MODULE_ITEMS - 1) / MODULE_ITEMS;
	s->generation = generation;
	s->results_fd = -1;
	s->tick_rounds = (unsigned long)(TICK_ROUNDS * opt->scale);
	if (!s->tick_rounds)
		s->tick_rounds = 1;
	atomic_init(&s->next_item, 0);
	for (q = 0; q < Q__COUNT; q++)
		pairs += key_count(s, q);
	while (cap < 2 * pairs)
		cap *= 2;
	s->memo = calloc(cap, sizeof(*s->memo));
	if (!s->memo) {
		fprintf(stderr, "query_engine: memo table: %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	s->memo_mask = cap - 1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->done, NULL);
	return 0;
}

static void session_fini(struct session *s)
{
	int q;

	for (q = 0; q < Q__COUNT; q++)
		free(s->cache_pos[q]);
	if (s->results_fd >= 0)
		close(s->results_fd);
	free(s->memo);
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->lock);
}

/* Runs the workers over every item; adds their counts to *c. */
static int session_run(struct session *s, struct counts *c)
{
	unsigned int n = s->opt->threads, i, started;
	struct worker *w = calloc(n, sizeof(*w));
	int err = 0;

	if (!w) {
		fprintf(stderr, "query_engine: workers: %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (started = 0; started < n; started++) {
		w[started].s = s;
		w[started].id = started;
		err = pthread_create(&w[started].thread, NULL, worker_main,
				     &w[started]);
		if (err) {
			err = -err;
			break;
		}
	}
	if (err && started > 0) {
		/* With fewer threads than asked the work still completes. */
		fprintf(stderr, "query_engine: started %u of %u threads: %s\n",
			started, n, strerror(-err));
		err = 0;
	} else if (err) {
		fprintf(stderr, "query_engine: pthread_create: %s\n", strerror(-err));
	}
	for (i = 0; i < started; i++) {
		pthread_join(w[i].thread, NULL);
		counts_add(c, &w[i].c);
	}
	free(w);
	return err;
}

/* Combines every item's codegen result, in item order. Call after run. */
static uint64_t session_digest(struct session *s)
{
	uint64_t d = 0;
	unsigned int i;

	for (i = 0; i < s->opt->items; i++)
		d = mix64(d ^ memo_slot(s, Q_CODEGEN, i)->value);
	return d;
}

/* Writes the persisted results of a finished session to the cache files. */
static int persist(struct session *s, struct counts *c)
{
	struct file_header rh = { .magic = RESULTS_MAGIC, .version = CACHE_VERSION };
	struct file_header ih = { .magic = INDEX_MAGIC, .version = CACHE_VERSION };
	struct result_record *rec = NULL;
	struct index_entry *idx = NULL;
	const char *bad = results_path;
	size_t n = 0, i;
	int rfd = -1, ifd = -1, err = 0;

	SP_SCOPE(activity_names[A_PERSIST]);
	c->activities[A_PERSIST]++;

	rec = calloc(s->memo_mask + 1, sizeof(*rec));
	idx = calloc(s->memo_mask + 1, sizeof(*idx));
	if (!rec || !idx) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i <= s->memo_mask; i++) {
		const struct memo_entry *e = &s->memo[i];
		uint32_t q = (uint32_t)((e->key - 1) >> 32);
		uint32_t key = (uint32_t)(e->key - 1);

		if (e->state != MEMO_DONE || !queries[q].persisted)
			continue;
		rec[n] = (struct result_record){
			.query = q, .key = key,
			.encoded = churn(e->value, CODEC_TICKS * s->tick_rounds),
			.check = record_check(q, key, e->value),
		};
		idx[n] = (struct index_entry){
			.query = q, .key = key,
			.offset = sizeof(rh) + n * sizeof(*rec),
		};
		n++;
	}
	rh.count = ih.count = (uint32_t)n;

	rfd = open(results_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (rfd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = write_all(rfd, &rh, sizeof(rh));
	if (!err)
		err = write_all(rfd, rec, n * sizeof(*rec));
	if (!err && close(rfd))
		err = -errno;
	rfd = -1;
	if (err)
		goto cleanup;

	bad = index_path;
	ifd = open(index_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (ifd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = write_all(ifd, &ih, sizeof(ih));
	if (!err)
		err = write_all(ifd, idx, n * sizeof(*idx));
	if (!err && close(ifd))
		err = -errno;
	ifd = -1;
cleanup:
	if (err)
		fprintf(stderr, "query_engine: %s: %s\n", bad, strerror(-err));
	if (rfd >= 0)
		close(rfd);
	if (ifd >= 0)
		close(ifd);
	free(rec);
	free(idx);
	return err;
}

static int check_header(const char *path, const struct file_header *h,
			const char *magic)
{
	if (memcmp(h->magic, magic, sizeof(h->magic))) {
		fprintf(stderr, "query_engine: %s: bad magic (expected %.8s, found %.8s)\n",
			path, magic, h->magic);
		return -EINVAL;
	}
	if (h->version != CACHE_VERSION) {
		fprintf(stderr, "query_engine: %s: version %u, expected %u\n",
			path, h->version, CACHE_VERSION);
		return -EINVAL;
	}
	return 0;
}

/* Opens the incremental cache for session s: reads the whole index into
 * s->cache_pos and keeps query-cache.bin open for the loads. */
static int load_dep_graph(struct session *s, struct counts *c)
{
	struct index_entry *idx = NULL;
	struct file_header ih, rh;
	const char *bad = index_path;
	int ifd, err, q;
	uint32_t i;

	SP_SCOPE(activity_names[A_LOAD_DEP_GRAPH]);
	c->activities[A_LOAD_DEP_GRAPH]++;

	for (q = 0; q < Q__COUNT; q++) {
		unsigned int k, n = key_count(s, q);

		if (!queries[q].persisted)
			continue;
		s->cache_pos[q] = malloc(n * sizeof(int64_t));
		if (!s->cache_pos[q]) {
			err = -ENOMEM;
			goto cleanup;
		}
		for (k = 0; k < n; k++)
			s->cache_pos[q][k] = -1;
	}

	ifd = open(index_path, O_RDONLY | O_CLOEXEC);
	if (ifd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = pread_exact(ifd, &ih, sizeof(ih), 0);
	if (!err)
		err = check_header(index_path, &ih, INDEX_MAGIC);
	if (!err && !(idx = malloc((ih.count ? ih.count : 1) * sizeof(*idx))))
		err = -ENOMEM;
	if (!err)
		err = pread_exact(ifd, idx, ih.count * sizeof(*idx), sizeof(ih));
	close(ifd);
	if (err)
		goto cleanup;

	bad = results_path;
	s->results_fd = open(results_path, O_RDONLY | O_CLOEXEC);
	if (s->results_fd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = pread_exact(s->results_fd, &rh, sizeof(rh), 0);
	if (!err)
		err = check_header(results_path, &rh, RESULTS_MAGIC);
	if (err)
		goto cleanup;

	bad = index_path;
	for (i = 0; i < ih.count; i++) {
		q = (int)idx[i].query;
		if (q >= Q__COUNT || !queries[q].persisted ||
		    idx[i].key >= key_count(s, q)) {
			fprintf(stderr, "query_engine: %s: entry %u: no query %u key %u\n",
				index_path, i, idx[i].query, idx[i].key);
			err = -EINVAL;
			goto cleanup;
		}
		s->cache_pos[q][idx[i].key] = (int64_t)idx[i].offset;
	}
cleanup:
	if (err && err != -EINVAL)	/* -EINVAL: already said why */
		fprintf(stderr, "query_engine: %s: %s\n", bad, strerror(-err));
	free(idx);
	return err;
}

static void remove_cache(void)
{
	/* Only async-signal-safe calls: also run from the signal handler. */
	if (results_path[0])
		unlink(results_path);
	if (index_path[0])
		unlink(index_path);
	if (tmp_dir[0])
		rmdir(tmp_dir);
}

static void on_fatal_signal(int sig)
{
	remove_cache();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int make_cache_dir(void)
{
	const char *base = getenv("TMPDIR");
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;
	size_t i;

	if (!base || !*base)
		base = "/tmp";
	if (snprintf(tmp_dir, sizeof(tmp_dir), "%s/query_engine.XXXXXX", base) >=
	    (int)sizeof(tmp_dir)) {
		fprintf(stderr, "query_engine: TMPDIR too long\n");
		tmp_dir[0] = 0;
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(tmp_dir)) {
		int err = -errno;

		fprintf(stderr, "query_engine: mkdtemp %s: %s\n", tmp_dir, strerror(-err));
		tmp_dir[0] = 0;
		return err;
	}
	snprintf(index_path, sizeof(index_path), "%s/dep-graph.bin", tmp_dir);
	snprintf(results_path, sizeof(results_path), "%s/query-cache.bin", tmp_dir);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t sum(const uint64_t *v, int n)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < n; i++)
		t += v[i];
	return t;
}

/* Runs one session; its counts are added to *total. */
static int build(const struct options *opt, const char *what, int generation,
		 bool incremental, bool save, uint64_t *digest,
		 struct counts *total)
{
	struct counts c;
	struct session s;
	double t0 = now_s();
	int err;

	memset(&c, 0, sizeof(c));
	err = session_init(&s, opt, generation);
	if (err)
		return err;
	s.incremental = incremental;
	if (incremental)
		err = load_dep_graph(&s, &c);
	if (!err)
		err = session_run(&s, &c);
	if (!err)
		*digest = session_digest(&s);
	if (!err && save)
		err = persist(&s, &c);
	session_fini(&s);
	if (err)
		return err;

	counts_add(total, &c);
	if (!opt->quiet)
		printf("%-36s %6llu queries %6llu cache hits %5llu incr loads "
		       "%4llu blocked  %.2f s  digest %016llx\n", what,
		       (unsigned long long)(sum(c.executed, Q__COUNT) +
					    sum(c.activities, A__COUNT)),
		       (unsigned long long)sum(c.cache_hits, Q__COUNT),
		       (unsigned long long)sum(c.incr_loads, Q__COUNT),
		       (unsigned long long)sum(c.blocked, Q__COUNT),
		       now_s() - t0, (unsigned long long)*digest);
	return 0;
}

static void print_table(const struct counts *c)
{
	int q;

	printf("\n%-22s %9s %10s %10s %8s\n", "query", "executed", "cache_hits",
	       "incr_loads", "blocked");
	for (q = 0; q < Q__COUNT; q++)
		printf("%-22s %9llu %10llu %10llu %8llu\n", queries[q].name,
		       (unsigned long long)c->executed[q],
		       (unsigned long long)c->cache_hits[q],
		       (unsigned long long)c->incr_loads[q],
		       (unsigned long long)c->blocked[q]);
	for (q = 0; q < A__COUNT; q++)
		printf("%-22s %9llu %10s %10s %8s\n", activity_names[q],
		       (unsigned long long)c->activities[q], "-", "-", "-");
	printf("\n");
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: query_engine [-j THREADS] [-n ITEMS] [-s SCALE] [-q] [-V]\n"
		"A toy incremental compiler instrumented with sptrace probes: a clean\n"
		"build, then a rebuild after editing a quarter of the items.\n"
		"\n"
		"  -j THREADS  worker threads (default 4, at most %d)\n"
		"  -n ITEMS    items in the crate (default 400, at most %d)\n"
		"  -s SCALE    multiply the work of every query (default 1: about 2 s\n"
		"              on two CPUs; 0.05 for a quick run)\n"
		"  -q          print only the summary line\n"
		"  -V          also build the edited sources from scratch and check\n"
		"              the incremental rebuild produced the same result\n",
		MAX_THREADS, MAX_ITEMS);
}

static int parse_uint(const char *arg, unsigned int max, unsigned int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 || v > (long)max)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct options opt = { .threads = 4, .items = 400, .scale = 1.0 };
	uint64_t clean = 0, rebuilt = 0, fresh = 0;
	struct counts total;
	char *end;
	int ch, err;

	while ((ch = getopt(argc, argv, "j:n:s:qVh")) != -1) {
		switch (ch) {
		case 'j':
			if (parse_uint(optarg, MAX_THREADS, &opt.threads)) {
				fprintf(stderr, "query_engine: -j: expected 1..%d, got '%s'\n",
					MAX_THREADS, optarg);
				return 2;
			}
			break;
		case 'n':
			if (parse_uint(optarg, MAX_ITEMS, &opt.items)) {
				fprintf(stderr, "query_engine: -n: expected 1..%d, got '%s'\n",
					MAX_ITEMS, optarg);
				return 2;
			}
			break;
		case 's':
			errno = 0;
			opt.scale = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(opt.scale > 0) ||
			    opt.scale > 1000) {
				fprintf(stderr, "query_engine: -s: expected a number in (0, 1000], got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'q':
			opt.quiet = true;
			break;
		case 'V':
			opt.verify = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	SP_THREAD_NAME("main");
	memset(&total, 0, sizeof(total));
	err = make_cache_dir();
	if (err)
		return 1;
	if (!opt.quiet)
		printf("query_engine: %u items, %u threads, scale %g, cache in %s\n",
		       opt.items, opt.threads, opt.scale, tmp_dir);

	err = build(&opt, "session 1: clean build", 0, false, true, &clean,
		    &total);
	if (!err)
		err = build(&opt, "session 2: rebuild after edits", 1, true,
			    false, &rebuilt, &total);
	if (!err && opt.verify)
		err = build(&opt, "check: clean build of the edits", 1, false,
			    false, &fresh, &total);
	remove_cache();
	if (err)	/* already reported */
		return 1;
	if (opt.verify && fresh != rebuilt) {
		fprintf(stderr, "query_engine: incremental rebuild digest %016llx differs from a clean build's %016llx\n",
			(unsigned long long)rebuilt, (unsigned long long)fresh);
		return 1;
	}

	if (!opt.quiet)
		print_table(&total);
	printf("items=%u queries=%llu cache_hits=%llu incr_loads=%llu blocked=%llu\n",
	       opt.items,
	       (unsigned long long)(sum(total.executed, Q__COUNT) +
				    sum(total.activities, A__COUNT)),
	       (unsigned long long)sum(total.cache_hits, Q__COUNT),
	       (unsigned long long)sum(total.incr_loads, Q__COUNT),
	       (unsigned long long)sum(total.blocked, Q__COUNT));
	return 0;
}
