// SPDX-License-Identifier: MIT
/*
 * Unit tests of batched events: the ring layout of probes/sp_probe.h is the
 * one include/sptrace/batch_abi.h tells BPF and sptrace, and the flush-time
 * shift of qstack.h (sp_stack_shift) moves exactly the intervals the flush's
 * own record opened, and the header's ring setup (sp__batch_get) never
 * restarts a ring that a signal handler's probes are using.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sp_probe.h>
#include <sptrace/batch_abi.h>
#include <sptrace/qstack.h>
#include "check.h"

#if SP__BATCH
_Static_assert(SP__BATCH_CAP == SP_BATCH_CAP, "ring capacity");
_Static_assert(SP__BATCH_MAGIC == SP_BATCH_MAGIC, "ring magic");
_Static_assert(sizeof(struct sp__batch_rec) == sizeof(struct sp_batch_rec),
	       "record size");
_Static_assert(offsetof(struct sp__batch_rec, ts) == offsetof(struct sp_batch_rec, ts) &&
	       offsetof(struct sp__batch_rec, name) == offsetof(struct sp_batch_rec, name) &&
	       offsetof(struct sp__batch_rec, arg) == offsetof(struct sp_batch_rec, arg) &&
	       offsetof(struct sp__batch_rec, kind) == offsetof(struct sp_batch_rec, kind) &&
	       offsetof(struct sp__batch_rec, commit) == offsetof(struct sp_batch_rec, commit),
	       "record fields");
_Static_assert(offsetof(struct sp__batch, magic) == offsetof(struct sp_batch_hdr, magic) &&
	       offsetof(struct sp__batch, seq) == offsetof(struct sp_batch_hdr, seq) &&
	       offsetof(struct sp__batch, owner) == offsetof(struct sp_batch_hdr, owner) &&
	       offsetof(struct sp__batch, slot) == offsetof(struct sp_batch_hdr, slot) &&
	       offsetof(struct sp__batch, rec) == SP_BATCH_REC_OFF &&
	       sizeof(struct sp__batch) == SP_BATCH_RING_SIZE, "ring layout");
_Static_assert(SP__K_QUERY_BEGIN == SP_BK_QUERY_BEGIN &&
	       SP__K_QUERY_END == SP_BK_QUERY_END &&
	       SP__K_BLOCKED_BEGIN == SP_BK_BLOCKED_BEGIN &&
	       SP__K_BLOCKED_END == SP_BK_BLOCKED_END &&
	       SP__K_INCR_LOAD_BEGIN == SP_BK_INCR_LOAD_BEGIN &&
	       SP__K_INCR_LOAD_END == SP_BK_INCR_LOAD_END &&
	       SP__K_CACHE_HIT == SP_BK_CACHE_HIT && SP__K_PAUSE == SP_BK_PAUSE &&
	       SP__K_TSC == SP_BK_TSC && SP__K_KEY == SP_BK_KEY &&
	       SP__K_KEY_TEXT == SP_BK_KEY_TEXT,
	       "record kinds");
#endif

/* outer begins at 100, inner at 200; a flush fired by inner's BEGIN record
 * (stamped 200) took 50 ns: inner starts at 250, outer stays at 100. */
static void test_shift_opened_only(void)
{
	struct sp_thread_stack *st = calloc(1, sizeof(*st));
	struct sp_closed c = { 0 };

	sp_stack_push(st, 1, SP_FRAME_QUERY, 100);
	sp_stack_push(st, 2, SP_FRAME_QUERY, 200);
	sp_stack_shift(st, 200, 50);
	CHECK_U64(st->frames[0].start_ns, 100);
	CHECK_U64(st->frames[1].start_ns, 250);
	CHECK_U64(sp_stack_pop(st, 2, SP_FRAME_QUERY, 300, &c), SP_POP_OK);
	CHECK_U64(c.total_ns, 50);
	CHECK_U64(sp_stack_pop(st, 1, SP_FRAME_QUERY, 400, &c), SP_POP_OK);
	CHECK_U64(c.total_ns, 300);	/* the flush stays in the parent */
	CHECK_U64(c.self_ns, 250);
	free(st);
}

/* A flush fired by an END (stamped 300, after both began) moves nothing. */
static void test_shift_after_end(void)
{
	struct sp_thread_stack *st = calloc(1, sizeof(*st));

	sp_stack_push(st, 1, SP_FRAME_QUERY, 100);
	sp_stack_push(st, 2, SP_FRAME_QUERY, 200);
	sp_stack_shift(st, 300, 50);
	CHECK_U64(st->frames[0].start_ns, 100);
	CHECK_U64(st->frames[1].start_ns, 200);
	sp_stack_shift(st, 300, 50);	/* empty stack: nothing to do */
	free(st);
}

#if SP__BATCH
/* With batching on (the flush semaphore up; no tracer, so the flush site is
 * a nop), a probe appends to this thread's ring. */
static struct sp__batch *ring_with_pair(void)
{
	sp_flush_semaphore = 1;
	SP_QUERY_BEGIN("sig");
	SP_QUERY_END("sig");
	return sp__batch_tls;
}

/*
 * A probe read TLS (empty), then a signal handler's probes made the ring
 * and appended to it, then the probe's slow path ran: it must take the
 * handler's ring as it is. It restarted it (seq 0) as if a fork had wiped
 * it, losing the handler's undrained records (e2e_batch's signal test,
 * once in 40 runs under ASan).
 */
static void test_get_keeps_live_ring(void)
{
	struct sp__batch *b = ring_with_pair();
	unsigned long long seq;

	CHECK(b && b != SP__BATCH_GONE && b != SP__BATCH_SETUP);
	if (!b || b == SP__BATCH_GONE || b == SP__BATCH_SETUP)
		return;
	seq = b->seq;
	/* BEGIN, the PAUSE of its registering flush, END */
	CHECK_U64(seq, 3);
	CHECK(sp__batch_get() == b);
	CHECK_U64(b->seq, seq);
	CHECK_U64(b->rec[2].commit, 3);
	CHECK_U64(b->rec[2].kind & ~(unsigned int)SP__K_TSC, SP__K_QUERY_END);
}

/* A handler's probe during the setup fires its per-event site, TLS kept. */
static void test_setup_falls_back(void)
{
	struct sp__batch *b = ring_with_pair();
	unsigned long long seq = b ? b->seq : 0;

	sp__batch_tls = SP__BATCH_SETUP;
	CHECK(sp__batch_get() == NULL);
	CHECK(sp__batch_add(SP__K_QUERY_BEGIN, "sig", 0) == -1);
	CHECK(sp__batch_tls == SP__BATCH_SETUP);
	sp__batch_tls = b;
	if (b)
		CHECK_U64(b->seq, seq);
}

/* A ring wiped by a fork (zeroed) is restarted in place. */
static void test_get_restarts_wiped(void)
{
	struct sp__batch *b = ring_with_pair();

	if (!b)
		return;
	memset(b, 0, offsetof(struct sp__batch, rec));
	b->seq = 7;	/* a half-done append the wipe did not clear */
	CHECK(sp__batch_get() == b);
	CHECK_U64(b->magic, SP__BATCH_MAGIC);
	CHECK_U64(b->seq, 0);
	CHECK(b->owner == (void *)&sp__batch_tls);
	CHECK(sp__batch_tls == b);
}
#endif

int main(void)
{
	RUN(test_shift_opened_only);
	RUN(test_shift_after_end);
#if SP__BATCH
	RUN(test_get_keeps_live_ring);
	RUN(test_setup_falls_back);
	RUN(test_get_restarts_wiped);
#endif
	return check_status();
}
