// SPDX-License-Identifier: MIT
/* One traced and stored run of `sptrace bench` (bench_run.h). */
#include <string.h>
#include <time.h>
#include "bench_run.h"
#include "log.h"
#include "query_provider.h"
#include "summary.h"

int bench_run__once(const struct session_opts *o, struct history_db *db,
		    const char *label, struct bench_result *r)
{
	struct query_provider qp;
	struct session_provider p;
	struct session ss;
	struct summary s;
	int64_t started;
	int err;

	memset(r, 0, sizeof(*r));
	summary__init(&s);
	session__init(&ss, o);
	query_provider__init(&qp, &p);
	err = session__add(&ss, &p);
	if (!err)
		err = session__start(&ss);
	started = (int64_t)time(NULL);
	if (!err)
		err = session__run(&ss, -1, NULL, NULL);
	if (!err)
		err = query_provider__check(&qp, session__command(&ss));
	if (!err)
		err = query_provider__read(&qp, &ss, &s);
	if (!err && !ss.sites && !s.nrows)
		sp_warn("'%s' has no sp probes in its executable or libraries (instrument it with probes/sp_probe.h)",
			session__command(&ss));
	if (!err) {
		summary__finish(&s);
		r->duration_ns = s.duration_ns;
		r->queries = s.nrows;
		r->interrupted = ss.stop_signal != 0;
		r->status = session__exit_status(&ss, 0);
		if (!r->interrupted && !r->status)
			err = session__store(&ss, db, label, "bench", started,
					     &s, NULL, &r->id);
	}
	session__destroy(&ss);
	/* The command's status as session__destroy() last saw it. */
	if (!err && !r->id)
		r->status = session__exit_status(&ss, 0);
	summary__free(&s);
	return err;
}
