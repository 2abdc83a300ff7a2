/* The slot lock: one flock'ed file per GPU, all or none, with a holder
 * record that a refused run names. */
#include "gate/agent/options.h"
#include "gate/agent/watchdog.h"
#include "gate/agent/slots.h"

static void iso_now(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

const char *agent_default_lock_dir(void)
{
	static char dir[PATH_MAX];
	const char *home = getenv("HOME");
	if (!home || !*home) {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : "/tmp";
	}
	snprintf(dir, sizeof dir, "%s/.cache/boxgate/locks", home);
	return dir;
}

int agent_mkdir_p(const char *dir)
{
	char *p = xstrdup(dir);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;
			*s = 0;
			if (mkdir(p, 0700) < 0 && errno != EEXIST) {
				rc = -1;
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	struct stat st;
	if (rc == 0 && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		rc = -1;
	return rc;
}

static void lock_name(const struct run *r, int i, char *out, size_t n)
{
	if (r->ngpus)
		snprintf(out, n, "gpu%d", r->gpus[i]);
	else
		snprintf(out, n, "cpu");
}

/* "held by TAG pid N since TIME" from a lock file's holder record. */
static void holder_text(int fd, char *out, size_t n)
{
	char b[1024], tag[256] = "?", pid[32] = "?", since[64] = "?";
	ssize_t k = pread(fd, b, sizeof b - 1, 0);
	b[k > 0 ? k : 0] = 0;
	for (char *line = strtok(b, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strncmp(line, "tag=", 4))
			snprintf(tag, sizeof tag, "%s", line + 4);
		else if (!strncmp(line, "pid=", 4))
			snprintf(pid, sizeof pid, "%s", line + 4);
		else if (!strncmp(line, "since=", 6))
			snprintf(since, sizeof since, "%s", line + 6);
	}
	snprintf(out, n, "held by %s pid %s since %s", tag, pid, since);
}

/* Try every lock of the slot once; all or none. Returns 0, or -1 with the busy one
 * described in busy. Exits on a system error. */
static int lock_try(struct run *r, char *busy, size_t busyn)
{
	for (int i = 0; i < r->nlocks; i++) {
		char name[32], path[PATH_MAX];
		lock_name(r, i, name, sizeof name);
		snprintf(path, sizeof path, "%s/%s.lock", r->lock_dir, name);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			msg("cannot open lock %s: %s", path, strerror(errno));
			agent_exit(AGENT_EXIT_SYSERR);
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int e = errno;
			if (e != EWOULDBLOCK) {
				msg("cannot lock %s: %s", path, strerror(e));
				agent_exit(AGENT_EXIT_SYSERR);
			}
			char h[512];
			holder_text(fd, h, sizeof h);
			snprintf(busy, busyn, "slot %s busy: %s", name, h);
			close(fd);
			for (int j = 0; j < i; j++) {
				close(r->lock_fds[j]);
				r->lock_fds[j] = -1;
			}
			return -1;
		}
		r->lock_fds[i] = fd;
	}
	char since[64], rec[512];
	iso_now(since, sizeof since);
	int n = snprintf(rec, sizeof rec, "tag=%s\npid=%d\nsince=%s\n", r->tag, (int)r->self,
			 since);
	for (int i = 0; i < r->nlocks; i++) {
		if (pwrite(r->lock_fds[i], rec, (size_t)n, 0) != n ||
		    ftruncate(r->lock_fds[i], n) < 0)
			msg("cannot write the holder record into the lock file: %s",
			    strerror(errno));
	}
	return 0;
}

void lock_release(struct run *r)
{
	for (int i = 0; i < r->nlocks; i++)
		if (r->lock_fds[i] >= 0) {
			if (ftruncate(r->lock_fds[i], 0) < 0) {
				/* a stale record is harmless: it is only read while locked */
			}
			close(r->lock_fds[i]);
			r->lock_fds[i] = -1;
		}
}

void lock_slot(struct run *r)
{
	char busy[768];
	if (agent_mkdir_p(r->lock_dir) < 0) {
		msg("cannot create lock directory %s: %s", r->lock_dir, strerror(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	r->nlocks = r->ngpus ? r->ngpus : 1;
	r->lock_fds = xrealloc(NULL, sizeof(int) * (size_t)r->nlocks);
	for (int i = 0; i < r->nlocks; i++)
		r->lock_fds[i] = -1;
	long long deadline = bg_now_ms() + r->lock_wait_ms;
	int said = 0;
	r->ph = PH_LOCK;
	for (;;) {
		if (lock_try(r, busy, sizeof busy) == 0) {
			/* a disabled slot is refused while its lock is held, so a disable
			 * that lands before this check is never run over */
			for (int i = 0; i < r->nlocks; i++) {
				char name[32], why[1400];
				lock_name(r, i, name, sizeof name);
				if (slot_disabled(r->lock_dir, name, why, sizeof why)) {
					lock_release(r);
					msg("slot %s disabled: %s", name, why);
					snprintf(g_end_extra, sizeof g_end_extra,
						 ",\"" AGENT_END_SLOT
						 "\":\"%s\",\"" AGENT_END_DISABLED "\":true",
						 name);
					agent_exit(AGENT_EXIT_BUSY);
				}
			}
			if (g_frame[0]) {
				char name[32];
				lock_name(r, 0, name, sizeof name);
				print_line("%s" AGENT_LOCKED "{\"slot\":\"%s\"}", g_frame, name);
			}
			return;
		}
		long long now = bg_now_ms();
		if (now >= deadline || r->why != W_NONE) {
			if (r->why != W_NONE)
				msg("gave up waiting for the slot: %s", why_text[r->why]);
			msg("%s", busy);
			if (r->why == W_NONE && r->nlocks == 1) {
				char name[32];
				lock_name(r, 0, name, sizeof name);
				snprintf(g_end_extra, sizeof g_end_extra,
					 ",\"" AGENT_END_SLOT "\":\"%s\"", name);
			}
			agent_exit(r->why != W_NONE ? why_exit(r) : AGENT_EXIT_BUSY);
		}
		if (!said) {
			char t[32];
			fmt_secs(t, sizeof t, r->lock_wait_ms);
			msg("%s; waiting up to %s s", busy, t);
			said = 1;
		}
		long long until = now + LOCK_POLL_MS;
		if (r->hb_ms && r->stdin_open && r->hb_last_ms + r->hb_ms < until)
			until = r->hb_last_ms + r->hb_ms;
		loop_once(r, until < deadline ? until : deadline);
		if (r->hb_ms && r->stdin_open && bg_now_ms() >= r->hb_last_ms + r->hb_ms)
			trigger(r, W_HB);
		if (g_output_gone)
			trigger(r, W_OUTGONE);
	}
}
