/* A detached campaign's lock, state file and log names (see state.h). */
#include "campaign/state.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"

static int make_private_dir(const char *path, bg_err *err)
{
	struct stat st;
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return bg_fail(err, BG_EIO, "cannot create %s: %s", path, strerror(errno));
	if (lstat(path, &st) != 0)
		return bg_fail(err, BG_EIO, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return bg_fail(err, BG_EIO, "%s is not a directory", path);
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return bg_fail(err, BG_EIO,
			       "%s belongs to another user or others can write it; boxgate keeps "
			       "campaign state only in a directory of your own",
			       path);
	return 0;
}

/* mkdir -p of PATH's missing levels below an existing one (0700 each). */
static void make_parents(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		(void)mkdir(p, 0700); /* an error shows when the last level is checked */
		*s = '/';
	}
	free(p);
}

char *campaign_state_dir(bg_err *err)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char *base;
	if (xdg && xdg[0] == '/')
		base = xasprintf("%s/boxgate", xdg);
	else if (home && home[0] == '/')
		base = xasprintf("%s/.local/state/boxgate", home);
	else {
		bg_fail(err, BG_EUSAGE,
			"no place for campaign state: set XDG_STATE_HOME or HOME to an absolute "
			"path");
		return NULL;
	}
	make_parents(base);
	char *dir = xasprintf("%s/campaigns", base);
	int rc = make_private_dir(base, err);
	if (rc == 0)
		rc = make_private_dir(dir, err);
	free(base);
	if (rc < 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

char *campaign_state_dir_peek(void)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char *dir = xdg && xdg[0] == '/'     ? xasprintf("%s/boxgate/campaigns", xdg)
		    : home && home[0] == '/' ? xasprintf("%s/.local/state/boxgate/campaigns", home)
					     : NULL;
	struct stat st;
	if (dir && (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())) {
		free(dir);
		dir = NULL;
	}
	return dir;
}

char *campaign_state_path(const char *dir, const char *name, const char *ext)
{
	return xasprintf("%s/%s.%s", dir, name, ext);
}

int campaign_state_lock(const char *dir, const char *name, int *fd, bg_err *err)
{
	char *path = campaign_state_path(dir, name, "lock");
	int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (f < 0) {
		int rc = bg_fail(err, BG_EIO, "cannot open %s: %s", path, strerror(errno));
		free(path);
		return rc;
	}
	if (flock(f, LOCK_EX | LOCK_NB) != 0) {
		int rc =
			errno == EWOULDBLOCK
				? bg_fail(err, BG_EBUSY, "campaign %s is already running detached",
					  name)
				: bg_fail(err, BG_EIO, "cannot lock %s: %s", path, strerror(errno));
		close(f);
		free(path);
		return rc;
	}
	free(path);
	*fd = f;
	return 0;
}

bool campaign_state_running(const char *dir, const char *name)
{
	char *path = campaign_state_path(dir, name, "lock");
	int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	free(path);
	if (f < 0)
		return false;
	bool held = flock(f, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(f);
	return held;
}

typedef struct running_job {
	char *slot, *job;
	int64_t since_ms;
} running_job;

struct campaign_state {
	pthread_mutex_t mu;
	char *dir, *name, *file, *results, *log, *run_id;
	char *how, *why;
	int code;
	size_t jobs, before, slots, ran, cut, left;
	double secs_sum; /* over final jobs: the ETA's mean */
	running_job *running;
	size_t n_running, cap_running;
	char **quarantined;
	size_t n_quarantined;
	int64_t started_ms;
};

/* Wall-clock milliseconds: the state file's times are read by other processes. */
static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

campaign_state *campaign_state_new(const char *dir, const char *name, const char *file,
				   const char *results, const char *log)
{
	campaign_state *st = xcalloc(1, sizeof(*st));
	pthread_mutex_init(&st->mu, NULL);
	st->dir = xstrdup(dir);
	st->name = xstrdup(name);
	st->file = xstrdup(file);
	st->results = xstrdup(results);
	st->log = xstrdup(log);
	st->how = xstrdup("starting");
	st->code = -1;
	st->started_ms = wall_ms();
	return st;
}

static void iso_time(int64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *to_json(const campaign_state *st)
{
	char t[32];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "schema", 1);
	cJSON_AddStringToObject(o, "name", st->name);
	cJSON_AddNumberToObject(o, "pid", (double)getpid());
	cJSON_AddStringToObject(o, "state", st->how);
	if (st->code >= 0)
		cJSON_AddNumberToObject(o, "exit", st->code);
	else
		cJSON_AddNullToObject(o, "exit");
	if (st->why)
		cJSON_AddStringToObject(o, "why", st->why);
	cJSON_AddStringToObject(o, "file", st->file);
	cJSON_AddStringToObject(o, "results", st->results);
	cJSON_AddStringToObject(o, "log", st->log);
	if (st->run_id)
		cJSON_AddStringToObject(o, "run_id", st->run_id);
	iso_time(st->started_ms, t);
	cJSON_AddStringToObject(o, "started", t);
	int64_t now = wall_ms();
	iso_time(now, t);
	cJSON_AddStringToObject(o, "updated", t);
	cJSON_AddNumberToObject(o, "updated_ms", (double)now);
	cJSON_AddNumberToObject(o, "jobs", (double)st->jobs);
	cJSON_AddNumberToObject(o, "recorded_before", (double)st->before);
	cJSON_AddNumberToObject(o, "ran", (double)st->ran);
	cJSON_AddNumberToObject(o, "cut", (double)st->cut);
	cJSON_AddNumberToObject(o, "slots", (double)st->slots);
	if (st->ran)
		cJSON_AddNumberToObject(o, "mean_job_s", st->secs_sum / (double)st->ran);
	if (!strcmp(st->how, "running") || !strcmp(st->how, "starting"))
		cJSON_AddNullToObject(o, "left");
	else
		cJSON_AddNumberToObject(o, "left", (double)st->left);
	cJSON *run = cJSON_AddArrayToObject(o, "running");
	for (size_t i = 0; i < st->n_running; i++) {
		cJSON *r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "slot", st->running[i].slot);
		cJSON_AddStringToObject(r, "job", st->running[i].job);
		cJSON_AddNumberToObject(r, "since_ms", (double)st->running[i].since_ms);
		cJSON_AddItemToArray(run, r);
	}
	cJSON *q = cJSON_AddArrayToObject(o, "quarantined");
	for (size_t i = 0; i < st->n_quarantined; i++)
		cJSON_AddItemToArray(q, cJSON_CreateString(st->quarantined[i]));
	return o;
}

/* Under st->mu. */
static int write_locked(campaign_state *st, bg_err *err)
{
	cJSON *o = to_json(st);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	char *path = campaign_state_path(st->dir, st->name, "json");
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t len = strlen(text);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
	    close(fd) != 0 || rename(tmp, path) != 0) {
		rc = bg_fail(err, BG_EIO, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			unlink(tmp);
	}
	free(text);
	free(tmp);
	free(path);
	return rc;
}

int campaign_state_write(campaign_state *st, bg_err *err)
{
	pthread_mutex_lock(&st->mu);
	int rc = write_locked(st, err);
	pthread_mutex_unlock(&st->mu);
	return rc;
}

/* Event writes cannot stop a campaign: a full disk shows in the log, once. */
static void write_quietly(campaign_state *st)
{
	bg_err err = {0};
	static bool said;
	if (write_locked(st, &err) < 0 && !said) {
		said = true;
		fprintf(stderr, "boxgate: campaign %s: %s\n", st->name, err.msg);
	}
}

void campaign_state_begin(campaign_state *st, const char *run_id, size_t jobs,
			  size_t recorded_before, size_t slots)
{
	pthread_mutex_lock(&st->mu);
	free(st->run_id);
	st->run_id = xstrdup(run_id);
	st->jobs = jobs;
	st->before = recorded_before;
	st->slots = slots;
	free(st->how);
	st->how = xstrdup("running");
	write_quietly(st);
	pthread_mutex_unlock(&st->mu);
}

void campaign_state_job_start(campaign_state *st, const char *slot, const char *job)
{
	pthread_mutex_lock(&st->mu);
	st->running = xgrow(st->running, &st->cap_running, st->n_running + 1, sizeof(*st->running));
	st->running[st->n_running++] = (running_job){xstrdup(slot), xstrdup(job), wall_ms()};
	write_quietly(st);
	pthread_mutex_unlock(&st->mu);
}

void campaign_state_job_end(campaign_state *st, const char *job, bool final, double secs)
{
	pthread_mutex_lock(&st->mu);
	for (size_t i = 0; i < st->n_running; i++) {
		if (strcmp(st->running[i].job, job) != 0)
			continue;
		free(st->running[i].slot);
		free(st->running[i].job);
		st->running[i] = st->running[--st->n_running];
		break;
	}
	if (final) {
		st->ran++;
		st->secs_sum += secs;
	} else {
		st->cut++;
	}
	write_quietly(st);
	pthread_mutex_unlock(&st->mu);
}

void campaign_state_quarantined(campaign_state *st, const char *box)
{
	pthread_mutex_lock(&st->mu);
	st->quarantined = xrealloc(st->quarantined, (st->n_quarantined + 1) * sizeof(char *));
	st->quarantined[st->n_quarantined++] = xstrdup(box);
	write_quietly(st);
	pthread_mutex_unlock(&st->mu);
}

void campaign_state_end(campaign_state *st, const char *how, int code, size_t left, const char *why)
{
	pthread_mutex_lock(&st->mu);
	free(st->how);
	st->how = xstrdup(how);
	st->code = code;
	st->left = left;
	free(st->why);
	st->why = why && *why ? xstrdup(why) : NULL;
	for (size_t i = 0; i < st->n_running; i++) {
		free(st->running[i].slot);
		free(st->running[i].job);
	}
	st->n_running = 0;
	write_quietly(st);
	pthread_mutex_unlock(&st->mu);
}

void campaign_state_free(campaign_state *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n_running; i++) {
		free(st->running[i].slot);
		free(st->running[i].job);
	}
	free(st->running);
	for (size_t i = 0; i < st->n_quarantined; i++)
		free(st->quarantined[i]);
	free(st->quarantined);
	free(st->dir);
	free(st->name);
	free(st->file);
	free(st->results);
	free(st->log);
	free(st->run_id);
	free(st->how);
	free(st->why);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

int campaign_state_read(const char *dir, const char *name, cJSON **out, bg_err *err)
{
	char *path = campaign_state_path(dir, name, "json");
	FILE *f = fopen(path, "re");
	if (!f) {
		int rc = errno == ENOENT ? bg_fail(err, BG_ENOTFOUND,
						   "no detached campaign %s (no %s)", name, path)
					 : bg_fail(err, BG_EIO, "cannot read %s: %s", path,
						   strerror(errno));
		free(path);
		return rc;
	}
	strbuf b = STRBUF_INIT;
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < (1u << 24))
		strbuf_add(&b, chunk, got);
	fclose(f);
	*out = cJSON_Parse(b.buf ? b.buf : "");
	strbuf_release(&b);
	int rc = 0;
	if (!*out || !cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		rc = bg_fail(err, BG_EPROTO, "%s is not a campaign state file", path);
	}
	free(path);
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int campaign_state_list(const char *dir, char ***names, size_t *n, bg_err *err)
{
	*names = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return bg_fail(err, BG_EIO, "cannot read %s: %s", dir, strerror(errno));
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.')
			continue;
		*names = xgrow(*names, &cap, *n + 1, sizeof(char *));
		(*names)[(*n)++] = xstrndup(e->d_name, len - 5);
	}
	closedir(d);
	if (*n > 1) /* *names is NULL when there are none */
		qsort(*names, *n, sizeof(char *), name_cmp);
	return 0;
}
