/* A detached campaign's process and what looks after it (see the header). */
#include "campaign/detach.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "results/store.h"

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *campaign_liveness(const char *dir, const char *name, const cJSON *st)
{
	const char *said = str_of(st, "state");
	bool says_running = said && (!strcmp(said, "running") || !strcmp(said, "starting"));
	if (campaign_state_running(dir, name))
		return says_running ? said : "ending";
	return says_running || !said ? "died" : said;
}

struct run_count {
	const char *run_id;
	size_t final, cut;
};

static int count_record(void *ctx, const cJSON *rec, size_t line)
{
	(void)line;
	struct run_count *c = ctx;
	const char *id = str_of(rec, "run_id");
	const cJSON *camp = cJSON_GetObjectItemCaseSensitive(rec, "campaign");
	if (!id || strcmp(id, c->run_id) != 0 || !cJSON_IsObject(camp))
		return 0;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(camp, "final")))
		c->final++;
	else
		c->cut++;
	return 0;
}

int campaign_count_run(const char *results, const char *run_id, size_t *final, size_t *cut,
		       bg_err *err)
{
	struct run_count c = {run_id, 0, 0};
	int rc = results_read(results, count_record, &c, NULL, err);
	*final = c.final;
	*cut = c.cut;
	return rc < 0 ? rc : 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int campaign_detach_fork(const char *dir, const char *name, const char *file, const char *results,
			 campaign_detached *d, bg_err *err)
{
	*d = (campaign_detached){.ready_fd = -1};
	int lock_fd, rc = campaign_state_lock(dir, name, &lock_fd, err);
	if (rc < 0)
		return rc;
	char *log = campaign_state_path(dir, name, "log");
	int log_fd =
		open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	int ready[2] = {-1, -1};
	if (log_fd < 0 || pipe2(ready, O_CLOEXEC) != 0) {
		rc = bg_fail(err, BG_EIO, "cannot open its log %s: %s", log, strerror(errno));
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t first = fork();
	if (first < 0) {
		rc = bg_fail(err, BG_EIO, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (first == 0) {
		close(ready[0]);
		if (setsid() < 0)
			_exit(1);
		pid_t second = fork();
		if (second != 0)
			_exit(second < 0);
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul < 0 || dup2(nul, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
		    dup2(log_fd, STDERR_FILENO) < 0)
			_exit(1);
		close(nul);
		close(log_fd);
		setvbuf(stdout, NULL, _IOLBF, 0);
		d->st = campaign_state_new(dir, name, file, results, log);
		d->log = log;
		d->ready_fd = ready[1];
		return 1;
	}
	close(ready[1]);
	ready[1] = -1;
	char buf[24] = "";
	size_t have = 0;
	ssize_t got;
	while (have < sizeof(buf) - 1 &&
	       ((got = read(ready[0], buf + have, sizeof(buf) - 1 - have)) > 0 ||
		(got < 0 && errno == EINTR)))
		have += got > 0 ? (size_t)got : 0;
	buf[have] = '\0';
	int status;
	while (waitpid(first, &status, 0) < 0 && errno == EINTR)
		;
	d->pid = strtol(buf, NULL, 10);
	if (d->pid <= 0) {
		rc = bg_fail(err, BG_EIO, "the detached process did not start; see %s", log);
		goto out;
	}
	d->log = log;
	log = NULL;
	rc = 0;
out:
	if (ready[0] >= 0)
		close(ready[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	if (log_fd >= 0)
		close(log_fd);
	close(lock_fd);
	free(log);
	return rc;
}

void campaign_detach_ready(campaign_detached *d)
{
	if (d->ready_fd < 0)
		return;
	char pid[24];
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (write(d->ready_fd, pid, (size_t)len) != len)
		(void)0; /* the first process then says the start failed */
	close(d->ready_fd);
	d->ready_fd = -1;
}

void campaign_detached_release(campaign_detached *d)
{
	if (d->ready_fd >= 0)
		close(d->ready_fd);
	d->ready_fd = -1;
	free(d->log);
	d->log = NULL;
	/* d->st is the caller's once it runs the campaign */
}

int campaign_log_copy(const char *dir, const char *name, bool follow,
		      void (*out)(void *ctx, const char *buf, size_t n), void *ctx, bg_err *err)
{
	char *path = campaign_state_path(dir, name, "log");
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		int rc = bg_fail(err, e == ENOENT ? BG_ENOTFOUND : BG_EIO, "no log: %s: %s", path,
				 strerror(e));
		free(path);
		return rc;
	}
	free(path);
	char buf[65536];
	for (;;) {
		ssize_t got = read(fd, buf, sizeof(buf));
		if (got > 0) {
			out(ctx, buf, (size_t)got);
			continue;
		}
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 || !follow)
			break;
		/* still running: look again soon; once it is not, read what is left once more */
		if (!campaign_state_running(dir, name)) {
			while ((got = read(fd, buf, sizeof(buf))) > 0)
				out(ctx, buf, (size_t)got);
			break;
		}
		sleep_ms(200);
	}
	close(fd);
	return 0;
}

int campaign_stop(const char *dir, const char *name, long pid, bg_err *err)
{
	if (!campaign_state_running(dir, name))
		return bg_fail(err, BG_ENOTFOUND, "campaign %s is not running", name);
	if (pid <= 1 || kill((pid_t)pid, SIGTERM) != 0)
		return bg_fail(err, BG_EIO, "cannot signal its process %ld: %s", pid,
			       pid <= 1 ? "no pid in its state" : strerror(errno));
	return 0;
}

int campaign_wait_end(const char *dir, const char *name, long timeout_ms)
{
	for (long waited = 0; campaign_state_running(dir, name); waited += 100) {
		if (waited >= timeout_ms)
			return BG_ETIMEOUT;
		sleep_ms(100);
	}
	return 0;
}
