#include "results/record.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/random.h"
#include "base/exit.h"
#include "base/json.h"

static void add_str_or_null(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static void add_int_or_null(cJSON *o, const char *key, bool have, int v)
{
	if (have)
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* The string member `key` of `obj`, NULL when absent or not a string. */
static const char *str_of(const cJSON *obj, const char *key)
{
	const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The value of gate flag `flag` ("--kind X" or "--kind=X"); the last one
 * wins, as with most option parsers. *present says the flag was given at all. */
static const char *arg_value(const results_record_in *in, const char *flag, bool *present)
{
	const char *val = NULL;
	size_t fl = strlen(flag);
	if (present)
		*present = false;
	for (size_t i = 0; i < in->n_gate_args; i++) {
		const char *a = in->gate_args[i];
		if (strncmp(a, flag, fl) != 0)
			continue;
		if (a[fl] == '=') {
			val = a + fl + 1;
		} else if (a[fl] == '\0') {
			if (present)
				*present = true;
			if (i + 1 < in->n_gate_args)
				val = in->gate_args[i + 1];
			continue;
		} else {
			continue;
		}
		if (present)
			*present = true;
	}
	return val;
}

/* A whole decimal count, else -1. */
static int parse_count(const char *s)
{
	if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9)
		return -1;
	return atoi(s);
}

static cJSON *point_of(const results_record_in *in, const cJSON *res)
{
	cJSON *p = cJSON_CreateObject();
	const char *kind = str_of(res, "kind"), *shape = str_of(res, "shape");
	add_str_or_null(p, "kind", kind ? kind : arg_value(in, "--kind", NULL));
	add_str_or_null(p, "shape", shape ? shape : arg_value(in, "--shape", NULL));
	const cJSON *nw = res ? cJSON_GetObjectItemCaseSensitive(res, "num_workers") : NULL;
	int n = -1;
	if (cJSON_IsNumber(nw) && nw->valuedouble >= 0 && nw->valuedouble <= 1e9 &&
	    nw->valuedouble == (double)(int)nw->valuedouble)
		n = (int)nw->valuedouble;
	else
		n = parse_count(arg_value(in, "--num-workers", NULL));
	add_int_or_null(p, "num_workers", n >= 0, n);
	bool baseline;
	const char *cand = arg_value(in, "--kernel", NULL);
	if (!cand)
		cand = arg_value(in, "--candidate", NULL);
	arg_value(in, "--baseline", &baseline);
	if ((!cand && baseline) || (in->role && strcmp(in->role, "baseline") == 0))
		cand = "baseline";
	if (!cand && res)
		cand = str_of(cJSON_GetObjectItemCaseSensitive(res, "candidate"), "variant");
	add_str_or_null(p, "candidate", cand);
	return p;
}

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

/* 9999-12-31T23:59:59Z */
#define LAST_EPOCH_OF_9999 253402300799LL

cJSON *results_pushed_list(const char *text)
{
	cJSON *a = cJSON_CreateArray();
	for (const char *l = text; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		const char *t1 = memchr(l, '\t', len);
		const char *t2 = t1 ? memchr(t1 + 1, '\t', len - (size_t)(t1 + 1 - l)) : NULL;
		size_t elen = t2 ? (size_t)(t2 - t1 - 1) : 0,
		       plen = t2 ? len - (size_t)(t2 + 1 - l) : 0;
		/* the epoch must fit a four-digit year: ISO 8601 times in records are fixed width
		 */
		if (t2 && t1 - l == 64 && all_of(l, 64, "0123456789abcdef") && elen >= 1 &&
		    elen <= 12 && all_of(t1 + 1, elen, "0123456789") && plen > 0 &&
		    strtoll(t1 + 1, NULL, 10) <= LAST_EPOCH_OF_9999) {
			char sha[65], iso[32];
			memcpy(sha, l, 64);
			sha[64] = '\0';
			results_time_iso((int64_t)strtoll(t1 + 1, NULL, 10) * 1000, iso,
					 sizeof(iso));
			cJSON *o = cJSON_CreateObject();
			bg_json_add_bytes(o, "path", t2 + 1, plen);
			cJSON_AddStringToObject(o, "sha256", sha);
			cJSON_AddStringToObject(o, "pushed_at", iso);
			cJSON_AddItemToArray(a, o);
		}
		l += len + (e ? 1 : 0);
	}
	return a;
}

gate_verdict results_verdict_of(int exit_code, const gate_outcome *o)
{
	switch (exit_code) {
	case BG_EXIT_OK:
		return o && o->verdict == VERDICT_MEASURED ? VERDICT_MEASURED : VERDICT_PASS_GATE;
	case BG_EXIT_TIMEOUT: return VERDICT_TIMEOUT_HANG;
	case BG_EXIT_INVALID: return VERDICT_INVALID;
	case BG_EXIT_FAIL:
		return o && o->verdict == VERDICT_BELOW_BAR ? VERDICT_BELOW_BAR : VERDICT_NONE;
	default: return VERDICT_NONE;
	}
}

bool results_record_is_warmup(const cJSON *rec)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "warmup"));
}

cJSON *results_record_build(const results_record_in *in)
{
	const gate_outcome *o = in->outcome;
	const gate_result *last = in->last;
	const cJSON *res = last && last->json ? last->json : NULL;
	char t[32];
	cJSON *r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "schema", RESULTS_SCHEMA);
	cJSON_AddStringToObject(r, "run_id", in->run_id);
	cJSON_AddNumberToObject(r, "seq", in->seq);
	if (in->repeat_n > 0) {
		cJSON *rp = cJSON_AddObjectToObject(r, "repeat");
		cJSON_AddNumberToObject(rp, "i", in->repeat_i);
		cJSON_AddNumberToObject(rp, "n", in->repeat_n);
	}
	if (in->role)
		cJSON_AddStringToObject(r, "role", in->role);
	if (in->warmup)
		cJSON_AddBoolToObject(r, "warmup", 1);
	cJSON_AddStringToObject(r, "boxgate", in->version);
	cJSON_AddStringToObject(r, "box", in->box);
	cJSON_AddStringToObject(r, "host", in->host);
	cJSON_AddStringToObject(r, "transport", in->transport);
	add_str_or_null(r, "gpus", in->gpus);
	add_str_or_null(r, "gpu_name", str_of(res, "device_name"));
	add_str_or_null(r, "device", str_of(res, "device"));
	add_str_or_null(r, "command", in->command);
	cJSON *ga = cJSON_AddArrayToObject(r, "gate_args");
	for (size_t i = 0; i < in->n_gate_args; i++)
		cJSON_AddItemToArray(ga, cJSON_CreateString(in->gate_args[i]));
	results_time_iso(in->start_ms, t, sizeof(t));
	cJSON_AddStringToObject(r, "start", t);
	results_time_iso(in->end_ms, t, sizeof(t));
	cJSON_AddStringToObject(r, "end", t);
	cJSON_AddNumberToObject(r, "exit", in->exit_code);
	cJSON *ag = cJSON_AddObjectToObject(r, "agent");
	bool end = o && o->agent_end;
	add_int_or_null(ag, "rc", end, end ? o->agent_rc : 0);
	add_str_or_null(ag, "why", end && o->agent_why[0] ? o->agent_why : NULL);
	add_int_or_null(ag, "gate_exit", end && o->gate_exit >= 0, end ? o->gate_exit : 0);
	add_int_or_null(ag, "gate_signal", end && o->gate_signal > 0, end ? o->gate_signal : 0);
	if (end && o->slurm_job[0]) {
		cJSON *sl = cJSON_AddObjectToObject(r, "slurm");
		cJSON_AddStringToObject(sl, "job", o->slurm_job);
		add_str_or_null(sl, "step", o->slurm_step[0] ? o->slurm_step : NULL);
		add_str_or_null(sl, "node", o->slurm_node[0] ? o->slurm_node : NULL);
	}
	gate_verdict v = results_verdict_of(in->exit_code, o);
	add_str_or_null(r, "verdict", v == VERDICT_NONE ? NULL : gate_verdict_name(v));
	gate_verdict st = last ? last->stated : VERDICT_NONE;
	add_str_or_null(r, "stated", st == VERDICT_NONE ? NULL : gate_verdict_name(st));
	add_str_or_null(r, "why", in->why && in->why[0] ? in->why : NULL);
	cJSON_AddItemToObject(r, "point", point_of(in, res));
	if (in->pulled)
		cJSON_AddItemToObject(r, "pulled", cJSON_Duplicate(in->pulled, 1));
	if (in->overlay)
		cJSON_AddItemToObject(r, "overlay", cJSON_Duplicate(in->overlay, 1));
	else
		cJSON_AddNullToObject(r, "overlay");
	if (in->campaign)
		cJSON_AddItemToObject(r, "campaign", cJSON_Duplicate(in->campaign, 1));
	if (in->pushed) {
		cJSON_AddItemToObject(r, "pushed", results_pushed_list(in->pushed));
	} else {
		cJSON_AddNullToObject(r, "pushed");
		add_str_or_null(r, "pushed_error", in->pushed_error);
	}
	if (res && last->raw && gate_is_result_line(last->raw, strlen(last->raw)))
		/* The object's text exactly as the gate printed it (it passed the strict
		 * check): cJSON's doubles would round a 64-bit seed or reprint 1.50. */
		cJSON_AddItemToObject(r, "result",
				      cJSON_CreateRaw(last->raw + strlen(RESULT_PREFIX)));
	else if (res)
		cJSON_AddItemToObject(r, "result", cJSON_Duplicate(res, 1));
	else
		cJSON_AddNullToObject(r, "result");
	if (last && last->raw)
		bg_json_add_bytes(r, "raw", last->raw, strlen(last->raw));
	else
		cJSON_AddNullToObject(r, "raw");
	return r;
}

void results_time_iso(int64_t ms, char *buf, size_t n)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	char d[24];
	strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%03dZ", d, (int)(ms % 1000));
}

int64_t results_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void results_new_run_id(char out[17])
{
	bg_random_hex(out, 8);
}
