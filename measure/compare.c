/* Two sides of results compare read, their points paired, each pair decided
 * (see the header). */
#include "measure/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/xmalloc.h"

/* results_record_fn: a record the side's selector takes, into its point. */
static int add_record(void *vs, const cJSON *rec, size_t line)
{
	measure_side *s = vs;
	(void)line;
	if (!results_selector_match(&s->sel, rec))
		return 0;
	s->matched++;
	size_t bad = 0;
	for (size_t i = 0; i < s->pts.n; i++)
		bad += s->pts.v[i].n_bad;
	results_points_add(&s->pts, rec);
	size_t bad_after = 0;
	for (size_t i = 0; i < s->pts.n; i++)
		bad_after += s->pts.v[i].n_bad;
	s->skipped += bad_after - bad;
	return 0;
}

int measure_side_read(measure_side *s, results_read_stats *st, bg_err *err)
{
	return results_read(s->path, add_record, s, st, err);
}

static bool valid_key(const char *k)
{
	return *k && strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen(k);
}

/* The point field a selector key stands for, NULL when it is no point field. */
static const char *field_of_key(const char *key)
{
	static const char *const not_fields[] = {"run",     "campaign", "box",
						 "verdict", "since",    "until"};
	for (size_t i = 0; i < sizeof(not_fields) / sizeof(not_fields[0]); i++)
		if (strcmp(key, not_fields[i]) == 0)
			return NULL;
	return strcmp(key, "num_workers") == 0 ? "num-workers" : key;
}

int measure_pairing_parse(const char *given, const results_selector *before,
			  const results_selector *after, measure_pairing *pr, bg_err *err)
{
	memset(pr, 0, sizeof(*pr));
	if (given) {
		const char *eq = strchr(given, '=');
		if (eq) {
			if (eq == given || !eq[1] || strchr(eq + 1, '=')) {
				return bg_fail(err, BG_EUSAGE,
					       "--pair '%s': a key (--pair variant) or a mapping "
					       "BEFORE=AFTER of two values (--pair k1=k2)",
					       given);
			}
			pr->from = xstrndup(given, (size_t)(eq - given));
			pr->to = xstrdup(eq + 1);
			return 0;
		}
		if (!valid_key(given)) {
			return bg_fail(err, BG_EUSAGE,
				       "--pair '%s': not a key (device, kind, shape, num-workers, "
				       "candidate, or a gate argument such as variant)",
				       given);
		}
		pr->skip = xstrdup(field_of_key(given) ? field_of_key(given) : given);
		return 0;
	}
	/* Not given: the one point field both selectors name with different values. */
	const char *found = NULL;
	for (size_t i = 0; i < before->n; i++)
		for (size_t j = 0; j < after->n; j++) {
			const results_term *a = &before->t[i], *b = &after->t[j];
			const char *fa = field_of_key(a->key), *fb = field_of_key(b->key);
			if (!fa || !fb || strcmp(fa, fb) != 0 || strcmp(a->value, b->value) == 0)
				continue;
			if (found && strcmp(found, fa) != 0)
				return 0; /* two keys differ: pair on the full key */
			found = fa;
		}
	if (found) {
		pr->skip = xstrdup(found);
		pr->inferred = true;
	}
	return 0;
}

void measure_pairing_release(measure_pairing *pr)
{
	free(pr->skip);
	free(pr->from);
	free(pr->to);
}

const char *measure_row_call_name(int call)
{
	if (call == MEASURE_ONLY_BEFORE)
		return "only in before";
	if (call == MEASURE_ONLY_AFTER)
		return "only in after";
	return stats_call_name((stats_call)call);
}

const char *measure_row_call_key(int call)
{
	if (call == MEASURE_ONLY_BEFORE)
		return "only_before";
	if (call == MEASURE_ONLY_AFTER)
		return "only_after";
	return stats_call_name((stats_call)call);
}

/* The rows: each before point with the after point it pairs with. Two points
 * of one side pairing the same point of the other is a usage error (the
 * samples of different points are never pooled). */
int measure_pair_rows(const results_points *a, const results_points *b, const measure_pairing *pr,
		      measure_row **out, size_t *n_out, bg_err *err)
{
	long *mate = xcalloc(b->n + 1, sizeof(*mate));
	long *mate_a = xcalloc(a->n + 1, sizeof(*mate_a));
	measure_row *rows = xcalloc(a->n + b->n + 1, sizeof(*rows));
	size_t n = 0;
	int rc = 0;
	for (size_t j = 0; j < b->n; j++)
		mate[j] = -1;
	for (size_t i = 0; i < a->n && !rc; i++) {
		mate_a[i] = -1;
		for (size_t j = 0; j < b->n; j++) {
			if (!results_point_pairs(&a->v[i], &b->v[j], pr->skip, pr->from, pr->to))
				continue;
			if (mate[j] >= 0 || mate_a[i] >= 0) {
				/* two of one side pair with one of the other */
				bool two_before = mate[j] >= 0;
				char *l1 = results_point_label(
					     two_before ? &a->v[mate[j]] : &b->v[mate_a[i]], NULL),
				     *l2 = results_point_label(two_before ? &a->v[i] : &b->v[j],
							       NULL),
				     *l3 = results_point_label(two_before ? &b->v[j] : &a->v[i],
							       NULL);
				rc = bg_fail(
					err, BG_EUSAGE,
					"%s points '%s' and '%s' both pair with '%s': narrow "
					"--before/--after (or --pair another key) so each point "
					"has one partner",
					two_before ? "before" : "after", l1, l2, l3);
				free(l1), free(l2), free(l3);
				break;
			}
			mate[j] = (long)i;
			mate_a[i] = (long)j;
		}
		if (rc)
			break;
		measure_row *r = &rows[n++];
		r->p[MEASURE_BEFORE] = &a->v[i];
		r->p[MEASURE_AFTER] = mate_a[i] >= 0 ? &b->v[mate_a[i]] : NULL;
		r->label = results_point_label(&a->v[i], r->p[MEASURE_AFTER] ? pr->skip : NULL);
	}
	for (size_t j = 0; j < b->n && !rc; j++)
		if (mate[j] < 0) {
			measure_row *r = &rows[n++];
			r->p[MEASURE_AFTER] = &b->v[j];
			r->label = results_point_label(&b->v[j], NULL);
		}
	free(mate);
	free(mate_a);
	*out = rows;
	*n_out = n;
	return rc;
}

/* Both sides have samples: the row has a change, an interval and p. */
bool measure_row_has_both(const measure_row *r)
{
	return r->p[MEASURE_BEFORE] && r->p[MEASURE_AFTER] && r->p[MEASURE_BEFORE]->n &&
	       r->p[MEASURE_AFTER]->n;
}

void measure_row_decide(measure_row *r)
{
	const results_point *a = r->p[MEASURE_BEFORE], *b = r->p[MEASURE_AFTER];
	memset(&r->d, 0, sizeof(r->d));
	r->d.lo = r->d.hi = r->d.ratio = NAN;
	if (!b || !b->n)
		r->call = a && a->n ? MEASURE_ONLY_BEFORE : STATS_AMBIGUOUS;
	else if (!a || !a->n)
		r->call = MEASURE_ONLY_AFTER;
	else if (results_delta_decide(a->slow, a->n, b->slow, b->n, &r->d) < 0)
		r->call = STATS_AMBIGUOUS; /* samples are finite and above 0: not reached */
	else
		r->call = (int)r->d.call;
	/* no sample on either side (every record bad): nothing to decide */
	if ((!b || !b->n) && (!a || !a->n))
		r->call = a && b ? STATS_AMBIGUOUS : a ? MEASURE_ONLY_BEFORE : MEASURE_ONLY_AFTER;
}
