/* What earlier runs of a campaign recorded (see the header). */
#include "campaign/recorded.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/xmalloc.h"

/* The jobs the results file already holds final: 1 in done[] for each; and
 * the jobs whose cell has records of an earlier definition: 1 in changed[]. */
struct done_scan {
	const campaign_spec *sp;
	const campaign_job *jobs;
	size_t n;
	size_t *by_key; /* job indices sorted by key */
	bool *done, *changed;
	char **why; /* per candidate: what changed (owned), NULL when nothing */
	size_t count;
};

static int key_cmp(const void *a, const void *b, void *jobs_)
{
	const campaign_job *jobs = jobs_;
	return strcmp(jobs[*(const size_t *)a].key, jobs[*(const size_t *)b].key);
}

/* The index of the job with key `key`, -1 when none. */
static long job_by_key(const struct done_scan *d, const char *key)
{
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(d->jobs[d->by_key[mid]].key, key);
		if (c == 0)
			return (long)d->by_key[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int scan_record(void *ctx, const cJSON *rec, size_t line)
{
	struct done_scan *d = ctx;
	(void)line;
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(rec, "campaign");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
	const cJSON *job = cJSON_GetObjectItemCaseSensitive(c, "job");
	const cJSON *cand = cJSON_GetObjectItemCaseSensitive(c, "candidate");
	char key[CAMPAIGN_KEY_MAX], def[CAMPAIGN_DEF_LEN + 1];
	if (!cJSON_IsString(name) || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "final")) ||
	    strcmp(name->valuestring, d->sp->name) != 0)
		return 0;
	/* the key its fields define (gate_args, flags and kernel file included): a
	 * record of an earlier definition of the job does not count for it */
	const char *k = campaign_record_key(c, key) ? key
			: cJSON_IsString(job)       ? job->valuestring
						    : NULL;
	long i = k ? job_by_key(d, k) : -1;
	if (i >= 0 && !d->done[i]) {
		d->done[i] = true;
		d->count++;
	}
	if (i >= 0 || !cJSON_IsString(cand) || !campaign_record_def(c, def))
		return 0;
	for (size_t ci = 0; ci < d->sp->n_cands; ci++) {
		const campaign_candidate *cd = &d->sp->cands[ci];
		if (strcmp(cd->name, cand->valuestring) != 0 || strcmp(cd->def, def) == 0)
			continue;
		/* the same cell under the current definition */
		cJSON *now = cJSON_Duplicate(c, 1);
		cJSON_ReplaceItemInObjectCaseSensitive(
			now, "gate_args",
			cJSON_CreateStringArray((const char *const *)d->sp->gate_args,
						(int)d->sp->n_gate_args));
		cJSON_ReplaceItemInObjectCaseSensitive(
			now, "candidate_flags",
			cd->n_flags ? cJSON_CreateStringArray((const char *const *)cd->flags,
							      (int)cd->n_flags)
				    : cJSON_CreateNull());
		cJSON_ReplaceItemInObjectCaseSensitive(now, "candidate_sha256",
						       cd->sha[0] ? cJSON_CreateString(cd->sha)
								  : cJSON_CreateNull());
		long j = campaign_record_key(now, key) ? job_by_key(d, key) : -1;
		cJSON_Delete(now);
		if (j >= 0) {
			/* what changed since the latest earlier definition */
			d->changed[j] = true;
			free(d->why[ci]);
			d->why[ci] = campaign_def_change(d->sp, cd, c);
		}
	}
	return 0;
}

int campaign_recorded_scan(const campaign_spec *sp, const campaign_job *jobs, size_t n,
			   const char *results, campaign_recorded *r, results_read_stats *st,
			   bg_err *err)
{
	*r = (campaign_recorded){0};
	r->done = xcalloc(n ? n : 1, sizeof(bool));
	r->changed = xcalloc(n ? n : 1, sizeof(bool));
	r->why = xcalloc(sp->n_cands ? sp->n_cands : 1, sizeof(char *));
	r->n_cands = sp->n_cands;
	size_t *by_key = xcalloc(n ? n : 1, sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		by_key[i] = i;
	qsort_r(by_key, n, sizeof(*by_key), key_cmp, (void *)jobs);
	struct done_scan ds = {sp, jobs, n, by_key, r->done, r->changed, r->why, 0};
	results_read_stats mine = {0};
	int rc = results_read(results, scan_record, &ds, st ? st : &mine, err);
	free(by_key);
	r->count = ds.count;
	return rc == BG_ENOTFOUND ? 0 : rc < 0 ? rc : 0;
}

size_t campaign_recorded_changed_cells(const campaign_spec *sp, const campaign_job *jobs, size_t n,
				       const campaign_recorded *r, bool *cand_changed)
{
	size_t nnw = sp->n_num_workers ? sp->n_num_workers : 1;
	size_t cells = sp->n_shapes * nnw * sp->n_cands, count = 0;
	for (size_t cell = 0; cell < cells && cell < n; cell++) {
		bool changed = false, recorded = false;
		for (size_t i = cell; i < n; i += cells) {
			changed |= r->changed[i];
			recorded |= r->done[i];
		}
		if (changed && !recorded) {
			count++;
			cand_changed[jobs[cell].cand] = true;
		}
	}
	return count;
}

void campaign_recorded_release(campaign_recorded *r)
{
	free(r->done);
	free(r->changed);
	for (size_t i = 0; r->why && i < r->n_cands; i++)
		free(r->why[i]);
	free(r->why);
	*r = (campaign_recorded){0};
}

int campaign_results_lock(const campaign_spec *sp, volatile sig_atomic_t *stop,
			  void (*waiting)(void *ctx), void *ctx, int *fd, bool *stopped,
			  bg_err *err)
{
	struct stat st;
	*stopped = false;
	if (stat(sp->results, &st) == 0 && !S_ISREG(st.st_mode))
		return bg_fail(err, BG_EIO,
			       "campaign %s: the results file %s is not a regular file", sp->name,
			       sp->results);
	*fd = open(sp->results, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		   0600);
	if (*fd < 0)
		return bg_fail(err, BG_EIO, "campaign %s: cannot open the results file %s: %s",
			       sp->name, sp->results, strerror(errno));
	if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode))
		return bg_fail(err, BG_EIO,
			       "campaign %s: the results file %s is not a regular file", sp->name,
			       sp->results);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (fcntl(*fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	if (errno != EAGAIN && errno != EACCES)
		return bg_fail(err, BG_EIO, "campaign %s: cannot lock the results file %s: %s",
			       sp->name, sp->results, strerror(errno));
	if (waiting)
		waiting(ctx);
	while (fcntl(*fd, F_OFD_SETLKW, &fl) != 0) {
		if (errno != EINTR || *stop) {
			*stopped = *stop != 0;
			if (errno == EINTR)
				return bg_fail(
					err, BG_EIO,
					"campaign %s: stopped while waiting for the other run; "
					"nothing was run",
					sp->name);
			return bg_fail(err, BG_EIO,
				       "campaign %s: cannot lock the results file %s: %s", sp->name,
				       sp->results, strerror(errno));
		}
	}
	return 0;
}
