/* status and rollback report their boxes once all are done, in box-name
 * order (h2 before h10), so two runs over the same boxes read the same
 * whatever order the boxes answered in. */
#include "cli/sync_driver.h"

#include <stdlib.h>

#include "base/xmalloc.h"

static int by_name(const void *a, const void *b)
{
	const sync_box *const *x = a, *const *y = b;
	return cli_box_name_cmp((*x)->box->name, (*y)->box->name);
}

void cli_sync_report_in_order(cli_sync_job *job)
{
	const sync_box **order = xcalloc(job->n ? job->n : 1, sizeof(*order));
	for (size_t i = 0; i < job->n; i++)
		order[i] = &job->boxes[i];
	qsort(order, job->n, sizeof(*order), by_name);
	for (size_t i = 0; i < job->n; i++)
		cli_sync_report(job, order[i]);
	free(order);
}
