#include "pool/line.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quote.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"

/* A heartbeat every 2 s; the agent leaves the line after 15 s without one. */
#define LINE_HEARTBEAT_MS 2000
#define LINE_HEARTBEAT_S  "15"
#define LINE_PUMP_MS      100

struct pool_line {
	remote_conn *conn;
	remote_exec *exec;
	pthread_t keeper;
	pthread_mutex_t mu;
	pthread_cond_t changed;
	int ahead;         /* -1 until the first "ahead"/"head" */
	bool head, ended;  /* under mu */
	char lost[256];    /* why the line ended early, under mu */
	atomic_bool leave; /* set by pool_line_leave */
};

int pool_line_parse(const char *line, size_t len, int *ahead)
{
	size_t an = strlen(AGENT_QUEUE_AHEAD);
	if (len == strlen(AGENT_QUEUE_HEAD) && memcmp(line, AGENT_QUEUE_HEAD, len) == 0) {
		*ahead = 0;
		return 1;
	}
	if (len > an && len < 64 && memcmp(line, AGENT_QUEUE_AHEAD, an) == 0) {
		/* a count, never taken for less than nothing */
		char num[64], *end;
		memcpy(num, line + an, len - an);
		num[len - an] = '\0';
		errno = 0;
		long k = strtol(num, &end, 10);
		if (end != num && *end == '\0' && errno == 0 && k >= 0 && k <= INT_MAX) {
			*ahead = (int)k;
			return 0;
		}
	}
	return -1;
}

static void on_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	pool_line *l = ctx;
	(void)flags;
	if (s != REMOTE_STDOUT)
		return;
	pthread_mutex_lock(&l->mu);
	if (pool_line_parse(line, len, &l->ahead) == 1)
		l->head = true;
	pthread_cond_broadcast(&l->changed);
	pthread_mutex_unlock(&l->mu);
}

/* Pumps the queue command: heartbeats until asked to leave, then "done" and the
 * wait for its exit (the ticket is gone when it has exited). */
static void *keeper(void *arg)
{
	pool_line *l = arg;
	int64_t next_hb = bg_now_ms() + LINE_HEARTBEAT_MS, give_up = 0;
	bool said_done = false;
	remote_status st;
	bg_err err = {0};
	for (;;) {
		if (atomic_load(&l->leave) && !said_done) {
			remote_exec_write(l->exec, AGENT_QUEUE_DONE "\n",
					  strlen(AGENT_QUEUE_DONE) + 1);
			remote_exec_close_stdin(l->exec);
			said_done = true;
			/* the agent answers "done" within its 50 ms poll; one that does not
			 * (stuck on the box) must not hold the client past its --wait: the
			 * channel closes and the agent leaves on the EOF */
			give_up = bg_now_ms() + 2000;
		}
		if (!said_done && bg_now_ms() >= next_hb) {
			remote_exec_write(l->exec, AGENT_IN_HEARTBEAT "\n",
					  strlen(AGENT_IN_HEARTBEAT) + 1);
			next_hb = bg_now_ms() + LINE_HEARTBEAT_MS;
		}
		int rc = remote_exec_wait(l->exec, bg_now_ms() + LINE_PUMP_MS, &st, &err);
		if (rc != 0 || (said_done && bg_now_ms() >= give_up)) {
			pthread_mutex_lock(&l->mu);
			if (!said_done)
				snprintf(l->lost, sizeof(l->lost), "%s",
					 rc < 0 ? err.msg : "the queue command ended");
			l->ended = true;
			pthread_cond_broadcast(&l->changed);
			pthread_mutex_unlock(&l->mu);
			return NULL;
		}
	}
}

char *pool_line_cmd(const char *agent_path, const char *pool, const char *tag)
{
	strbuf cmd = STRBUF_INIT;
	strbuf_addf(&cmd, "%s %s %s ", agent_path, AGENT_CMD_QUEUE, AGENT_OPT_NAME);
	bg_quote(&cmd, pool);
	strbuf_addf(&cmd, " %s %s", AGENT_OPT_HEARTBEAT, LINE_HEARTBEAT_S);
	if (tag) {
		strbuf_addf(&cmd, " %s ", AGENT_OPT_TAG);
		bg_quote(&cmd, tag);
	}
	return strbuf_detach(&cmd);
}

char *pool_line_list_args(const char *pool)
{
	strbuf cmd = STRBUF_INIT;
	strbuf_addf(&cmd, "%s %s ", AGENT_CMD_QUEUE_LIST, AGENT_OPT_NAME);
	bg_quote(&cmd, pool);
	return strbuf_detach(&cmd);
}

cJSON *pool_line_waiters(const char *out)
{
	cJSON *rows = cJSON_CreateArray();
	int pos = 0;
	for (const char *l = out; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char *line = xstrndup(l, len);
		cJSON *o = cJSON_Parse(line);
		free(line);
		l = e ? e + 1 : NULL;
		if (!cJSON_IsObject(o) ||
		    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "ticket"))) {
			cJSON_Delete(o);
			continue;
		}
		/* the order is the agent's; the position is counted here */
		cJSON_DeleteItemFromObjectCaseSensitive(o, "position");
		cJSON_AddNumberToObject(o, "position", ++pos);
		cJSON_AddItemToArray(rows, o);
	}
	return rows;
}

int pool_line_join(const conf_box *box, const char *pool, const char *tag, const gate_agent *agent,
		   const remote_connect_opts *link, pool_line **out, bg_err *err)
{
	pool_line *l = xcalloc(1, sizeof(*l));
	char *path = NULL;
	gate_agent_how how;
	l->ahead = -1;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->changed, NULL);
	int rc = remote_connect(&box->target, link, &l->conn, err);
	if (rc == 0)
		rc = gate_agent_ensure(l->conn, agent, false, &path, &how, err);
	if (rc == 0) {
		char *cmd = pool_line_cmd(path, pool, tag);
		remote_exec_opts o = {.on_line = on_line, .ctx = l, .killable = true};
		rc = remote_exec_start(l->conn, cmd, &o, &l->exec, err);
		free(cmd);
	}
	free(path);
	if (rc == 0 && pthread_create(&l->keeper, NULL, keeper, l) != 0)
		rc = bg_fail(err, BG_EIO, "%s: cannot start the queue keeper thread", box->name);
	if (rc < 0) {
		if (l->exec)
			remote_exec_free(l->exec);
		remote_close(l->conn);
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->changed);
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

int pool_line_wait_head(pool_line *l, int64_t deadline, volatile sig_atomic_t *stop, int *ahead,
			bg_err *err)
{
	int rc, seen = *ahead;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		*ahead = l->ahead;
		if (!l->head && l->ahead > 0 && l->ahead != seen) {
			rc = 2; /* a new count ahead: the caller says it, then waits on */
			break;
		}
		if (l->head) {
			rc = 1;
			break;
		}
		if (l->ended) {
			bg_fail(err, BG_EREMOTE, "lost the place in line: %s", l->lost);
			rc = -1;
			break;
		}
		if (*stop) {
			rc = -1;
			break;
		}
		if (bg_now_ms() >= deadline) {
			rc = 0;
			break;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L; /* wake to look at *stop and the deadline */
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&l->changed, &l->mu, &ts);
	}
	pthread_mutex_unlock(&l->mu);
	return rc;
}

void pool_line_leave(pool_line *l)
{
	if (l)
		atomic_store(&l->leave, true);
}

void pool_line_free(pool_line *l)
{
	if (!l)
		return;
	pool_line_leave(l);
	pthread_join(l->keeper, NULL);
	remote_exec_free(l->exec);
	remote_close(l->conn);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->changed);
	free(l);
}
