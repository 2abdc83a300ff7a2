/* Detached campaigns and the commands that look after them (see the header). */
#include "cli/campaign_detach.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "campaign/detach.h"
#include "campaign/spec.h"
#include "cli/cli.h"
#include "conf/conf.h"

static const char *const subcommands[] = {"status", "logs", "cancel", "list"};

bool campaign_is_subcommand(const char *word)
{
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(*subcommands); i++)
		if (strcmp(word, subcommands[i]) == 0)
			return true;
	return false;
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void add_duration(strbuf *b, double s)
{
	if (s < 0)
		s = 0;
	long t = (long)(s + 0.5);
	if (t < 60)
		strbuf_addf(b, "%ld s", t);
	else if (t < 3600)
		strbuf_addf(b, "%ld min %ld s", t / 60, t % 60);
	else
		strbuf_addf(b, "%ld h %ld min", t / 3600, (t % 3600) / 60);
}

static double now_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
}

static int read_state(const char *dir, const char *name, cJSON **st)
{
	bg_err err = {0};
	int rc = campaign_state_read(dir, name, st, &err);
	if (rc < 0) {
		cli_error("campaign %s: %s", name, err.msg);
		return rc == BG_ENOTFOUND ? BG_EXIT_USAGE : BG_EXIT_FAIL;
	}
	return 0;
}

struct run_count {
	size_t final, cut;
};

static void status_json(const char *dir, const char *name, cJSON *st, const struct run_count *rc)
{
	cJSON *o = cJSON_Duplicate(st, true);
	cJSON_ReplaceItemInObjectCaseSensitive(
		o, "state", cJSON_CreateString(campaign_liveness(dir, name, st)));
	if (rc) {
		cJSON *r = cJSON_AddObjectToObject(o, "recorded_this_run");
		cJSON_AddNumberToObject(r, "final", (double)rc->final);
		cJSON_AddNumberToObject(r, "cut", (double)rc->cut);
	}
	cli_print_json(o);
	cJSON_Delete(o);
}

static int status_one(const char *dir, const char *name, bool json)
{
	cJSON *st = NULL;
	int code = read_state(dir, name, &st);
	if (code)
		return code;
	const char *how = campaign_liveness(dir, name, st), *run_id = str_of(st, "run_id");
	const char *results = str_of(st, "results");
	struct run_count rc = {0, 0};
	bool counted = false;
	if (run_id && results) {
		bg_err err = {0};
		counted = campaign_count_run(results, run_id, &rc.final, &rc.cut, &err) == 0;
	}
	if (json) {
		status_json(dir, name, st, counted ? &rc : NULL);
		cJSON_Delete(st);
		return 0;
	}
	double jobs = num_of(st, "jobs", 0), before = num_of(st, "recorded_before", 0);
	double ran = num_of(st, "ran", 0), cut = num_of(st, "cut", 0);
	double now = now_wall_ms();
	strbuf b = STRBUF_INIT;
	strbuf_addf(&b, "campaign %s: %s, pid %.0f, started %s", name, how, num_of(st, "pid", 0),
		    str_of(st, "started") ? str_of(st, "started") : "?");
	if (!strcmp(how, "died"))
		strbuf_addstr(&b, " (it ended without saying how: killed? its log may say; "
				  "run the campaign again to finish it)");
	if (str_of(st, "why"))
		strbuf_addf(&b, " (%s)", str_of(st, "why"));
	strbuf_addf(&b,
		    "\n  progress     %.0f of %.0f jobs recorded: %.0f before this run, %.0f "
		    "this run",
		    before + ran, jobs, before, ran);
	if (cut)
		strbuf_addf(&b, ", %.0f attempt%s cut and requeued", cut, cut == 1 ? "" : "s");
	if (counted)
		strbuf_addf(&b, " (the results file holds %zu final and %zu cut of run %s)",
			    rc.final, rc.cut, run_id);
	strbuf_addch(&b, '\n');
	const cJSON *running = cJSON_GetObjectItemCaseSensitive(st, "running"), *r;
	cJSON_ArrayForEach(r, running)
	{
		strbuf_addf(&b, "  running      %s  %s  ",
			    str_of(r, "slot") ? str_of(r, "slot") : "?",
			    str_of(r, "job") ? str_of(r, "job") : "?");
		add_duration(&b, (now - num_of(r, "since_ms", now)) / 1000);
		strbuf_addch(&b, '\n');
	}
	double mean = num_of(st, "mean_job_s", -1), slots = num_of(st, "slots", 0);
	double todo = jobs - before - ran;
	if (!strcmp(how, "running") && mean > 0 && slots > 0 && todo > 0) {
		strbuf_addstr(&b, "  ETA          about ");
		add_duration(&b, todo * mean / slots);
		strbuf_addf(&b, " (%.0f jobs left, %.1f s a job over %.0f slot%s)\n", todo, mean,
			    slots, slots == 1 ? "" : "s");
	}
	if (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(st, "left")) &&
	    num_of(st, "left", 0) > 0)
		strbuf_addf(&b,
			    "  left         %.0f jobs (run the campaign again to finish them)\n",
			    num_of(st, "left", 0));
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(st, "quarantined");
	if (cJSON_GetArraySize(q) > 0) {
		strbuf_addstr(&b, "  quarantined ");
		cJSON_ArrayForEach(r, q)
			strbuf_addf(&b, " %s", cJSON_IsString(r) ? r->valuestring : "?");
		strbuf_addch(&b, '\n');
	}
	strbuf_addf(&b, "  file         %s\n  results      %s\n  log          %s\n",
		    str_of(st, "file") ? str_of(st, "file") : "?", results ? results : "?",
		    str_of(st, "log") ? str_of(st, "log") : "?");
	cli_write(stdout, b.buf, b.len);
	strbuf_release(&b);
	cJSON_Delete(st);
	return 0;
}

static int list_all(const char *dir, bool json, bool detailed)
{
	char **names;
	size_t n;
	bg_err err = {0};
	if (campaign_state_list(dir, &names, &n, &err) < 0) {
		cli_error("campaign: %s", err.msg);
		return BG_EXIT_FAIL;
	}
	int code = 0;
	if (!n && !json)
		cli_printf(stderr, "boxgate: no detached campaign (state in %s)\n", dir);
	if (!detailed && !json && n)
		cli_printf(stdout, "%-24s %-10s %-11s %-21s %s\n", "NAME", "STATE", "RECORDED",
			   "STARTED", "PID");
	for (size_t i = 0; i < n; i++) {
		cJSON *st = NULL;
		if (detailed) {
			if (i && !json)
				cli_write(stdout, "\n", 1);
			int c = status_one(dir, names[i], json);
			code = code ? code : c;
		} else if (campaign_state_read(dir, names[i], &st, &err) == 0) {
			if (json) {
				status_json(dir, names[i], st, NULL);
			} else {
				char rec[40];
				snprintf(rec, sizeof(rec), "%.0f/%.0f",
					 num_of(st, "recorded_before", 0) + num_of(st, "ran", 0),
					 num_of(st, "jobs", 0));
				cli_printf(stdout, "%-24s %-10s %-11s %-21s %.0f\n", names[i],
					   campaign_liveness(dir, names[i], st), rec,
					   str_of(st, "started") ? str_of(st, "started") : "?",
					   num_of(st, "pid", 0));
			}
			cJSON_Delete(st);
		} else {
			cli_warn("%s", err.msg);
		}
		free(names[i]);
	}
	free(names);
	return code;
}

static void log_out(void *ctx, const char *buf, size_t n)
{
	bool follow = *(const bool *)ctx;
	cli_write(stdout, buf, n);
	if (follow)
		fflush(stdout);
}

/* Copies the log to stdout; with follow, until the campaign ends. */
static int show_logs(const char *dir, const char *name, bool follow)
{
	bg_err err = {0};
	int rc = campaign_log_copy(dir, name, follow, log_out, &follow, &err);
	if (rc < 0) {
		cli_error("campaign %s: %s", name, err.msg);
		return rc == BG_ENOTFOUND ? BG_EXIT_USAGE : BG_EXIT_FAIL;
	}
	return 0;
}

static int cancel(const char *dir, const char *name, bool json)
{
	cJSON *st = NULL;
	int code = read_state(dir, name, &st);
	if (code)
		return code;
	bg_err err = {0};
	long pid = (long)num_of(st, "pid", 0);
	int rc = campaign_stop(dir, name, pid, &err);
	if (rc == BG_ENOTFOUND) {
		cli_error("campaign %s is not running (%s); nothing to cancel", name,
			  campaign_liveness(dir, name, st));
		cJSON_Delete(st);
		return BG_EXIT_FAIL;
	}
	cJSON_Delete(st);
	if (rc < 0) {
		cli_error("campaign %s: %s", name, err.msg);
		return BG_EXIT_FAIL;
	}
	if (!json)
		cli_printf(stderr,
			   "boxgate: campaign %s (pid %ld): stopping its scheduling and its "
			   "running gates on every box\n",
			   name, pid);
	/* It ends as Ctrl-C ends a campaign: each running gate is stopped by its
	 * agent (the box's kill grace), then the attempt is recorded. */
	if (campaign_wait_end(dir, name, 600 * 1000L) < 0) {
		cli_error("campaign %s (pid %ld) still runs after 10 minutes; see 'boxgate "
			  "campaign logs %s'",
			  name, pid, name);
		return BG_EXIT_FAIL;
	}
	if ((code = read_state(dir, name, &st)))
		return code;
	if (json) {
		status_json(dir, name, st, NULL);
	} else {
		double left = num_of(st, "left", 0);
		cli_printf(stdout,
			   "campaign %s %s: %.0f jobs recorded this run, %.0f attempts cut, %.0f "
			   "left%s\n",
			   name, campaign_liveness(dir, name, st), num_of(st, "ran", 0),
			   num_of(st, "cut", 0), left,
			   left > 0 ? " (run the campaign again to finish them)" : "");
	}
	cJSON_Delete(st);
	return 0;
}

int campaign_subcommand(const char *word, const char *name, bool follow, bool json)
{
	if (follow && strcmp(word, "logs") != 0) {
		cli_error("campaign %s: --follow is for 'campaign logs NAME'", word);
		return BG_EXIT_USAGE;
	}
	bool needs_name = !strcmp(word, "logs") || !strcmp(word, "cancel");
	if (needs_name && !name) {
		cli_error("campaign %s: give the campaign's name (see 'boxgate campaign list')",
			  word);
		return BG_EXIT_USAGE;
	}
	if (name && !strcmp(word, "list")) {
		cli_error("campaign list takes no name (see 'boxgate campaign status %s')", name);
		return BG_EXIT_USAGE;
	}
	if (name && (!conf_box_name_ok(name) || strlen(name) > CAMPAIGN_NAME_MAX)) {
		cli_error("campaign %s: bad campaign name '%s' (letters, digits, '.', '_' and '-' "
			  "only, at most %d)",
			  word, name, CAMPAIGN_NAME_MAX);
		return BG_EXIT_USAGE;
	}
	bg_err err = {0};
	char *dir = campaign_state_dir(&err);
	if (!dir) {
		cli_error("campaign %s: %s", word, err.msg);
		return BG_EXIT_FAIL;
	}
	int code;
	if (!strcmp(word, "list"))
		code = list_all(dir, json, false);
	else if (!strcmp(word, "status"))
		code = name ? status_one(dir, name, json) : list_all(dir, json, true);
	else if (!strcmp(word, "logs"))
		code = show_logs(dir, name, follow);
	else
		code = cancel(dir, name, json);
	free(dir);
	return code;
}

int campaign_detach(const char *name, const char *file, const char *results, bool json,
		    campaign_state **st)
{
	bg_err err = {0};
	char *dir = campaign_state_dir(&err);
	if (!dir) {
		cli_error("campaign %s: %s", name, err.msg);
		return BG_EXIT_FAIL;
	}
	campaign_detached d;
	int rc = campaign_detach_fork(dir, name, file, results, &d, &err);
	if (rc == BG_EBUSY) {
		cli_error("campaign %s is already running detached; see 'boxgate campaign "
			  "status %s', or stop it with 'boxgate campaign cancel %s'",
			  name, name, name);
	} else if (rc < 0) {
		cli_error("campaign %s: %s", name, err.msg);
	} else if (rc == 1) {
		char now[32];
		time_t t = time(NULL);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
		cli_printf(stderr, "boxgate: campaign %s detached at %s, pid %ld (file %s)\n", name,
			   now, (long)getpid(), file);
		if (campaign_state_write(d.st, &err) < 0)
			cli_warn("%s", err.msg);
		campaign_detach_ready(&d);
		*st = d.st;
	} else if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "detached");
		cJSON_AddStringToObject(o, "campaign", name);
		cJSON_AddNumberToObject(o, "pid", (double)d.pid);
		cJSON_AddStringToObject(o, "log", d.log);
		char *state = campaign_state_path(dir, name, "json");
		cJSON_AddStringToObject(o, "state", state);
		free(state);
		cli_print_json(o);
		cJSON_Delete(o);
	} else {
		cli_printf(stdout, "%s\n", name);
		cli_printf(stderr,
			   "boxgate: campaign %s runs detached (pid %ld, log %s): 'boxgate "
			   "campaign status %s', 'boxgate campaign logs %s -f', 'boxgate campaign "
			   "cancel %s'\n",
			   name, d.pid, d.log, name, name, name);
	}
	if (rc >= 0)
		campaign_detached_release(&d);
	free(dir);
	/* the detached process goes on (0); the first one is done (-1) */
	return rc == 1 ? 0 : rc == 0 ? -1 : BG_EXIT_FAIL;
}
