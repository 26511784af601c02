// SPDX-License-Identifier: MIT
/*
 * Unit tests of batched events: the ring layout of probes/sp_probe.h is the
 * one include/sptrace/batch_abi.h tells BPF and sptrace, and the flush-time
 * shift of qstack.h (sp_stack_shift) moves exactly the intervals the flush's
 * own record opened.
 */
#include <stddef.h>
#include <stdlib.h>
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
	       offsetof(struct sp__batch, rec) == SP_BATCH_REC_OFF &&
	       sizeof(struct sp__batch) == SP_BATCH_RING_SIZE, "ring layout");
_Static_assert(SP__K_QUERY_BEGIN == SP_BK_QUERY_BEGIN &&
	       SP__K_QUERY_END == SP_BK_QUERY_END &&
	       SP__K_BLOCKED_BEGIN == SP_BK_BLOCKED_BEGIN &&
	       SP__K_BLOCKED_END == SP_BK_BLOCKED_END &&
	       SP__K_INCR_LOAD_BEGIN == SP_BK_INCR_LOAD_BEGIN &&
	       SP__K_INCR_LOAD_END == SP_BK_INCR_LOAD_END &&
	       SP__K_CACHE_HIT == SP_BK_CACHE_HIT && SP__K_PAUSE == SP_BK_PAUSE &&
	       SP__K_TSC == SP_BK_TSC,
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

int main(void)
{
	RUN(test_shift_opened_only);
	RUN(test_shift_after_end);
	return check_status();
}
