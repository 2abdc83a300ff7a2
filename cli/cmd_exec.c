/* boxgate exec: one command on many boxes at once, output prefixed by box. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/json.h"
#include "base/lines.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/exec_input.h"
#include "remote/remote.h"
#include "sync/plan.h"

static const char exec_help[] =
	"usage: boxgate exec [--boxes SPEC | --pool POOL | --all] [--exclude SPEC]\n"
	"                    [--timeout S] [-b] [-n] [--out-dir DIR]\n"
	"                    [--json] [--accept-new] -- CMD [ARGS...]\n"
	"\n"
	"Runs CMD on every selected box at once over one SSH connection per box (the local\n"
	"box runs it with /bin/sh). CMD and ARGS are joined with spaces and run by the box's\n"
	"shell, as ssh(1) does. Each stdout line prints as 'box: line' as it arrives, stderr\n"
	"lines likewise on stderr.\n"
	"\n"
	"A box's connection master (control_persist_s, default 300 s; boxgate disconnect)\n"
	"serves the command when the box has a live one: no handshake. Otherwise the fresh\n"
	"connection is left behind as the box's master once the command ends, as OpenSSH's\n"
	"ControlPersist does.\n"
	"\n"
	"Standard input, when it is not a terminal, goes to CMD on every box, byte for byte,\n"
	"as ssh and clush send it: one box reads it as it streams; several boxes each get\n"
	"the same bytes, read once into a spool (an unlinked file in $TMPDIR, as big as the\n"
	"input) that each box reads at its own pace, so a box that stops reading or ends\n"
	"early holds no other back. End of input closes CMD's stdin. From a terminal, or\n"
	"with -n, CMD's stdin is empty (it reads end of file at once).\n"
	"\n"
	"  --boxes SPEC   names, node sets (b200-[1-8,12]) and @pool, comma separated;\n"
	"                 h[1-8]!h3 leaves h3 out (clush's ! & ^, left to right);\n"
	"                 -w SPEC; repeatable, as clush's -w\n"
	"  --exclude SPEC leave these boxes out (-x SPEC; repeatable)\n"
	"  --pool POOL    every box of a pool\n"
	"  --all          every configured box (the built-in local box only by name)\n"
	"  --timeout S    after S seconds kill the command on the box: its process group and\n"
	"                 every process of the same user whose environment carries the\n"
	"                 command's BOXGATE_EXEC_ID (setsid'd and daemonised children too):\n"
	"                 TERM, then KILL after 2 s. A process that removed BOXGATE_EXEC_ID\n"
	"                 from its environment, or runs as another user, is not found.\n"
	"  -b, --gather   gather identical stdout per group of boxes (like clush -b), printed\n"
	"                 when all are done, groups in box-name order (h2 before h10)\n"
	"  -n, --no-stdin give CMD an empty stdin even when boxgate's is a pipe or file\n"
	"                 (as ssh -n; for loops that read their own input)\n"
	"  --json         one JSON event per line: {box,stream,line} and {box,event,...};\n"
	"                 with -b, stdout comes as one {\"event\":\"group\",\"boxes\":[...],\n"
	"                 \"nodeset\":\"h[1-3]\",\"stdout\":\"...\",\"status\":N} per group of "
	"boxes\n"
	"                 with the same stdout bytes and the same exit (\"signal\":\"KILL\" or\n"
	"                 \"lost\":true instead of status); stderr lines and each box's closing\n"
	"                 event come as without -b\n"
	"  --out-dir DIR  write each box's stdout and stderr, byte for byte, to DIR/BOX.out\n"
	"                 and DIR/BOX.err (DIR is created) instead of printing them (as\n"
	"                 parallel-ssh's -o/-e); each is written as a temporary file\n"
	"                 (DIR/.BOX.out.boxgate-HEX.tmp) renamed over BOX.out when the\n"
	"                 command ends, so a reader never sees half a file (one a killed\n"
	"                 exec left is removed by the next); -b still gathers stdout\n"
	"  --accept-new   record unknown host keys (changed keys are still refused)\n"
	"\n"
	"Lines longer than 1 MiB arrive in pieces, each but the last marked\n"
	"' [boxgate: line continues]' (\"partial\":true in JSON); bytes pass unchanged.\n"
	"The box's login shell must be a POSIX shell (sh, bash, dash, zsh, ksh): boxgate runs\n"
	"CMD in a subshell that reports its exit status as the last bytes on stderr (taken\n"
	"out of the output), so a channel that closes without a status (a lost connection,\n"
	"sshd's ChannelTimeout) is never mistaken for exit 0. A status above 128 is reported\n"
	"as the signal of that number, as the shell's $? shows it.\n"
	"Exit: 0 when every box exited 0; 3 when a box could not be reached, its host key\n"
	"was refused, authentication failed, or no exit status came back (the connection or\n"
	"the channel closed first); 124 when a box timed out; else 1 (reading standard input\n"
	"failing included). A summary of failed boxes, in box-name order, closes the output.\n";

struct exec_job;

struct box_run {
	struct exec_job *job;
	const conf_box *box;
	int rc;
	bg_err err;
	remote_status st;
	strbuf out;               /* gathered stdout (-b) */
	int fd[2];                /* --out-dir: BOX.out, BOX.err (-1: none), written as temp[k] */
	char *temp[2], *final[2]; /* ... renamed to final[k] at the end (owned) */
	int write_errno;
	bool not_run; /* --out-dir: its files could not be opened */
};

struct exec_opts {
	const char *out_dir;
	int timeout_s;
	bool gather, no_stdin;
};

static const cli_opt exec_options[] = {
	CLI_OPT_SELECT,
	CLI_OPT_SECONDS("timeout", struct exec_opts, timeout_s, 1, 7 * 86400),
	{"gather", 'b', CLI_FLAG, false, offsetof(struct exec_opts, gather), 0, 0},
	{"no-stdin", 'n', CLI_FLAG, false, offsetof(struct exec_opts, no_stdin), 0, 0},
	CLI_OPT_STRING("out-dir", struct exec_opts, out_dir),
	CLI_OPT_JSON,
	CLI_OPT_ACCEPT_NEW,
	CLI_OPT_END,
};

struct exec_job {
	const conf_box *const *boxes;
	char *cmdline;
	const char *out_dir; /* NULL: print the lines */
	int timeout_s;
	bool gather, json, accept_new;
	exec_input *input; /* NULL: the command's stdin is empty */
	struct box_run *runs;
};

#define CONTINUES " [boxgate: line continues]"
/* Input queued on a box's channel beyond what it has taken: enough to keep
 * the link busy, little enough that many boxes stay cheap. */
#define INPUT_QUEUE_HIGH (256u << 10)

/* -b: stdout kept per box. JSON keeps the bytes exactly; text marks a cut
 * line and ends every line, as the lines print without -b. */
static void gather_line(struct box_run *r, const char *line, size_t len, int flags)
{
	strbuf_add(&r->out, line, len);
	if (r->job->json)
		strbuf_addstr(&r->out, flags & (LINE_PARTIAL | LINE_NO_EOL) ? "" : "\n");
	else
		strbuf_addstr(&r->out, flags & LINE_PARTIAL ? CONTINUES "\n" : "\n");
}

/* --out-dir: the line's bytes as they came (its newline back unless it had
 * none or continues). */
static void write_line(struct box_run *r, remote_stream s, const char *line, size_t len, int flags)
{
	int fd = r->fd[s == REMOTE_STDOUT ? 0 : 1];
	bool nl = !(flags & (LINE_PARTIAL | LINE_NO_EOL));
	for (size_t off = 0; fd >= 0 && !r->write_errno && off < len + nl;) {
		ssize_t w = off < len ? write(fd, line + off, len - off) : write(fd, "\n", 1);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			r->write_errno = errno;
		else
			off += (size_t)w;
	}
}

static void on_line(void *arg, remote_stream s, const char *line, size_t len, int flags)
{
	struct box_run *r = arg;
	struct exec_job *job = r->job;
	bool partial = flags & LINE_PARTIAL;
	if (job->out_dir) {
		write_line(r, s, line, len, flags);
		if (!job->gather || s != REMOTE_STDOUT)
			return;
	}
	if (job->gather && s == REMOTE_STDOUT) {
		gather_line(r, line, len, flags);
		return;
	}
	if (job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", r->box->name);
		cJSON_AddStringToObject(o, "stream", s == REMOTE_STDOUT ? "stdout" : "stderr");
		bg_json_add_bytes(o, "line", line, len);
		if (partial)
			cJSON_AddBoolToObject(o, "partial", 1);
		if (flags & LINE_NO_EOL)
			cJSON_AddBoolToObject(o, "no_newline", 1);
		cli_print_json(o);
		cJSON_Delete(o);
		return;
	}
	FILE *to = s == REMOTE_STDOUT ? stdout : stderr;
	if (partial) {
		char *piece = xmalloc(len + sizeof(CONTINUES));
		memcpy(piece, line, len);
		memcpy(piece + len, CONTINUES, sizeof(CONTINUES));
		cli_print_line(to, r->box->name, piece, len + sizeof(CONTINUES) - 1);
		free(piece);
	} else {
		cli_print_line(to, r->box->name, line, len);
	}
}

/* remote_feed_fn: moves input to the command as it takes it, until the
 * command ends (1), the deadline passes (0) or the transport fails
 * (negative). At most INPUT_QUEUE_HIGH bytes wait on the channel, so a box
 * that stops reading holds that much and no more. */
static int feed_and_wait(remote_exec *e, int64_t deadline, void *ctx, remote_status *st,
			 bg_err *err)
{
	exec_input_tap *t = ctx;
	char buf[65536];
	bool open = true;
	for (;;) {
		while (open && remote_exec_stdin_queued(e) < INPUT_QUEUE_HIGH) {
			ssize_t n = exec_input_read(t, buf, sizeof(buf));
			if (n > 0) {
				remote_exec_write(e, buf, (size_t)n);
				continue;
			}
			if (n == 0) {
				remote_exec_close_stdin(e);
				exec_input_done(t);
				open = false;
			}
			break;
		}
		bool room = open && remote_exec_stdin_queued(e) < INPUT_QUEUE_HIGH;
		int rc = remote_exec_pump(e, deadline, room ? exec_input_wake_fd(t) : -1, st, err);
		if (rc != 0 || bg_now_ms() >= deadline)
			return rc;
	}
}

static void run_on_box(void *arg, size_t i)
{
	struct exec_job *job = arg;
	struct box_run *r = &job->runs[i];
	exec_input_tap *t = NULL;
	remote_conn *c = NULL;
	r->rc = job->input ? exec_input_tap_open(job->input, i, &t, &r->err) : 0;
	/* Each file is written as a new temporary file beside its final name and
	 * renamed over it at the end: a reader sees the old file or the whole new
	 * one, never half of one, and a killed exec leaves the old one alone. */
	for (int k = 0; k < 2 && job->out_dir && r->rc == 0; k++) {
		const char *ext = k ? "err" : "out";
		r->final[k] = xasprintf("%s/%s.%s", job->out_dir, r->box->name, ext);
		struct stat st;
		if (lstat(r->final[k], &st) == 0 && !S_ISREG(st.st_mode)) {
			/* what is there is not ours to replace: a link is never followed */
			r->not_run = true;
			r->rc = bg_fail(&r->err, BG_EIO, "%s: cannot write %s: %s", r->box->name,
					r->final[k],
					S_ISLNK(st.st_mode) ? "a symbolic link (not followed)"
							    : "not a regular file");
			break;
		}
		for (int tries = 0; r->fd[k] < 0 && tries < 8; tries++) {
			char hex[17];
			sync_random_hex(hex);
			free(r->temp[k]);
			r->temp[k] = xasprintf("%s/.%s.%s.boxgate-%s.tmp", job->out_dir,
					       r->box->name, ext, hex);
			r->fd[k] = open(r->temp[k],
					O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
			if (r->fd[k] < 0 && errno != EEXIST)
				break;
			/* locked while written: the next exec removes it only when a
			 * killed exec left it (its lock free) */
			if (r->fd[k] >= 0 && flock(r->fd[k], LOCK_EX | LOCK_NB) < 0) {
				close(r->fd[k]);
				r->fd[k] = -1;
			}
		}
		if (r->fd[k] < 0 && (r->not_run = true))
			r->rc = bg_fail(&r->err, BG_EIO, "%s: cannot write %s: %s", r->box->name,
					r->temp[k], strerror(errno));
	}
	if (r->rc == 0)
		r->rc = cli_connect_warm(r->box, job->accept_new, &c, &r->err);
	if (r->rc == 0 && t)
		r->rc = remote_run_fed(c, job->cmdline, on_line, r, job->timeout_s * 1000,
				       feed_and_wait, t, &r->st, &r->err);
	else if (r->rc == 0)
		r->rc = remote_run(c, job->cmdline, on_line, r, job->timeout_s * 1000, &r->st,
				   &r->err);
	if (t)
		exec_input_done(t);
	cli_trace_round_trips(r->box->name, c);
	remote_close(c);
	for (int k = 0; k < 2; k++) {
		if (r->fd[k] >= 0 && close(r->fd[k]) < 0 && !r->write_errno)
			r->write_errno = errno;
		r->fd[k] = -1;
	}
	/* both files or neither: a half-written one is never renamed */
	for (int k = 0; k < 2 && r->temp[0] && r->temp[1] && !r->not_run && !r->write_errno; k++)
		if (rename(r->temp[k], r->final[k]) < 0 && !r->write_errno)
			r->write_errno = errno;
	for (int k = 0; k < 2; k++) {
		if (r->temp[k])
			unlink(r->temp[k]); /* gone when renamed; a leftover otherwise */
		free(r->temp[k]);
		free(r->final[k]);
		r->temp[k] = r->final[k] = NULL;
	}
}

/* A name of --out-dir's temporary files: ".BOX.out.boxgate-<16 hex>.tmp" (or .err). */
static bool out_temp_name(const char *name)
{
	size_t n = strlen(name);
	const char *tail = ".boxgate-0123456789abcdef.tmp";
	size_t tl = strlen(tail);
	if (name[0] != '.' || n < tl + 6 || strcmp(name + n - 4, ".tmp") != 0)
		return false;
	const char *m = name + n - tl;
	if (strncmp(m, ".boxgate-", 9) != 0 || strspn(m + 9, "0123456789abcdef") < 16)
		return false;
	return (strncmp(m - 4, ".out", 4) == 0 || strncmp(m - 4, ".err", 4) == 0);
}

/* Removes the temporary files a killed exec left in DIR (their lock free). */
static void clean_out_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!out_temp_name(e->d_name) || (e->d_type != DT_REG && e->d_type != DT_UNKNOWN))
			continue;
		int fd =
			openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dirfd(d), e->d_name, 0);
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
}

static const char *failure_kind(int rc)
{
	switch (rc) {
	case BG_EHOSTKEY: return "host key";
	case BG_EAUTH: return "auth";
	case BG_ETIMEOUT: return "timeout";
	case BG_EUNSUPPORTED: return "unsupported";
	default: return "connect";
	}
}

static int cmp_run(const void *a, const void *b)
{
	const struct box_run *x = *(const struct box_run *const *)a;
	const struct box_run *y = *(const struct box_run *const *)b;
	return cli_box_name_cmp(x->box->name, y->box->name);
}

/* The runs in box-name order (h2 before h10): groups and summaries read
 * the same whichever box finished first. Owned. */
static struct box_run **sorted_runs(struct exec_job *job, size_t n)
{
	struct box_run **v = xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = &job->runs[i];
	qsort(v, n, sizeof(*v), cmp_run);
	return v;
}

/* Whether two boxes land in one -b group: the same stdout, and in JSON,
 * where each group carries one status, the same ending too. */
static bool same_group(const struct exec_job *job, const struct box_run *a, const struct box_run *b)
{
	if (a->out.len != b->out.len ||
	    memcmp(strbuf_str(&a->out), strbuf_str(&b->out), a->out.len) != 0)
		return false;
	return !job->json || (a->st.how == b->st.how && a->st.code == b->st.code &&
			      strcmp(a->st.signal, b->st.signal) == 0);
}

/* {"event":"group","boxes":[...],"nodeset":"h[1-3]","stdout":"...","status":0} */
static void print_group_json(const struct box_run *first, const char *const *names, size_t k,
			     const char *set)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "event", "group");
	cJSON *boxes = cJSON_AddArrayToObject(o, "boxes");
	for (size_t i = 0; i < k; i++)
		cJSON_AddItemToArray(boxes, cJSON_CreateString(names[i]));
	cJSON_AddStringToObject(o, "nodeset", set);
	bg_json_add_bytes(o, "stdout", strbuf_str(&first->out), first->out.len);
	if (first->st.how == REMOTE_EXITED)
		cJSON_AddNumberToObject(o, "status", first->st.code);
	else if (first->st.how == REMOTE_SIGNALED)
		cJSON_AddStringToObject(o, "signal", first->st.signal);
	else
		cJSON_AddBoolToObject(o, "lost", 1);
	cli_print_json(o);
	cJSON_Delete(o);
}

/* Prints each group of boxes whose gathered stdout is identical, groups in
 * the order of their first box. Boxes that never ran are left to the
 * summary. */
static void print_gathered(struct exec_job *job, struct box_run **runs, size_t n)
{
	bool *done = xcalloc(n ? n : 1, sizeof(*done));
	const char **names = xcalloc(n ? n : 1, sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		if (done[i] || runs[i]->rc < 0)
			continue;
		size_t k = 0;
		for (size_t j = i; j < n; j++) {
			if (done[j] || runs[j]->rc < 0 || !same_group(job, runs[i], runs[j]))
				continue;
			done[j] = true;
			names[k++] = runs[j]->box->name;
		}
		char *set = cli_fold_names(names, k);
		if (job->json) {
			print_group_json(runs[i], names, k, set);
		} else {
			cli_printf(stdout, "---------------\n%s (%zu)\n---------------\n", set, k);
			cli_write(stdout, strbuf_str(&runs[i]->out), runs[i]->out.len);
		}
		free(set);
	}
	free(done);
	free(names);
}

/* The closing summary, in box-name order, and the exit code. */
static int summarise(struct exec_job *job, struct box_run **runs, size_t n)
{
	size_t failed = 0;
	int code = BG_EXIT_OK;
	strbuf sum = STRBUF_INIT;
	for (size_t i = 0; i < n; i++) {
		struct box_run *r = runs[i];
		char how[128];
		int box_code = BG_EXIT_OK;
		if (r->rc < 0 && r->st.how == REMOTE_LOST) {
			snprintf(how, sizeof(how), "connection lost");
			box_code = BG_EXIT_CONNECT;
			cli_error("%s", r->err.msg);
		} else if (r->rc == 0 && r->st.how == REMOTE_LOST) {
			/* The channel closed cleanly but no status came with it. */
			snprintf(how, sizeof(how),
				 "no exit status: the channel closed before the command "
				 "ended; it may still run on the box");
			box_code = BG_EXIT_CONNECT;
		} else if (r->not_run) {
			snprintf(how, sizeof(how), "not run: %s", r->err.msg);
			box_code = BG_EXIT_FAIL;
		} else if (r->rc < 0 && r->rc != BG_ETIMEOUT) {
			snprintf(how, sizeof(how), "%s error", failure_kind(r->rc));
			box_code = BG_EXIT_CONNECT;
			cli_error("%s", r->err.msg);
		} else if (r->rc == BG_ETIMEOUT || r->st.how == REMOTE_TIMEDOUT) {
			snprintf(how, sizeof(how), "timed out after %d s", job->timeout_s);
			box_code = BG_EXIT_TIMEOUT;
		} else if (r->write_errno) {
			snprintf(how, sizeof(how), "writing its output to %s failed: %s",
				 job->out_dir, strerror(r->write_errno));
			box_code = BG_EXIT_FAIL;
		} else if (r->st.how == REMOTE_EXITED && r->st.code == 0) {
			;
		} else {
			remote_status_describe(&r->st, how, sizeof(how));
			box_code = BG_EXIT_FAIL;
		}
		if (job->json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "box", r->box->name);
			if (r->rc < 0 && box_code == BG_EXIT_CONNECT) {
				cJSON_AddStringToObject(o, "event", "error");
				cJSON_AddStringToObject(o, "kind", failure_kind(r->rc));
				cJSON_AddStringToObject(o, "error", r->err.msg);
			} else if (box_code == BG_EXIT_TIMEOUT) {
				cJSON_AddStringToObject(o, "event", "timeout");
			} else if (r->st.how == REMOTE_SIGNALED) {
				cJSON_AddStringToObject(o, "event", "signal");
				cJSON_AddStringToObject(o, "signal", r->st.signal);
			} else if (r->st.how == REMOTE_LOST) {
				cJSON_AddStringToObject(o, "event", "lost");
				cJSON_AddStringToObject(o, "error", how);
			} else {
				cJSON_AddStringToObject(o, "event", "exit");
				cJSON_AddNumberToObject(o, "status", r->st.code);
			}
			cli_print_json(o);
			cJSON_Delete(o);
		}
		if (!box_code)
			continue;
		code = bg_exit_merge(code, box_code);
		strbuf_addf(&sum, "%s%s (%s)", failed ? ", " : "", r->box->name, how);
		failed++;
	}
	if (failed)
		cli_error("%zu of %zu boxes failed: %s", failed, n, strbuf_str(&sum));
	strbuf_release(&sum);
	return code;
}

/* Refuses what cannot be honoured rather than dropping it. */
static int open_input(const struct exec_opts *eo, size_t n, exec_input **in)
{
	*in = NULL;
	/* A terminal is the user typing, not input for the boxes: ssh -n's rule. */
	if (eo->no_stdin || isatty(STDIN_FILENO))
		return 0;
	bg_err err = {0};
	if (exec_input_open(STDIN_FILENO, n, in, &err) < 0) {
		cli_error("exec: %s (-n runs without input)", err.msg);
		return BG_EXIT_FAIL;
	}
	return 0;
}

static int run_exec(cli_ctx *ctx, void *opts, const cli_args *args)
{
	const struct exec_opts *eo = opts;
	struct exec_job job = {
		.boxes = ctx->boxes,
		.timeout_s = eo->timeout_s,
		.gather = eo->gather,
		.out_dir = eo->out_dir && *eo->out_dir ? eo->out_dir : NULL,
		.json = ctx->opt.json,
		.accept_new = ctx->opt.accept_new,
	};
	size_t n = ctx->n_boxes;
	if (job.out_dir && mkdir(job.out_dir, 0777) < 0 && errno != EEXIST) {
		cli_error("exec: --out-dir %s: %s", job.out_dir, strerror(errno));
		return BG_EXIT_USAGE;
	}
	if (job.out_dir)
		clean_out_dir(job.out_dir);
	int code = open_input(eo, n, &job.input);
	if (code)
		return code;
	strbuf cmd = STRBUF_INIT;
	for (size_t i = 0; i < args->n; i++) {
		if (i)
			strbuf_addch(&cmd, ' ');
		strbuf_addstr(&cmd, args->v[i]);
	}
	job.cmdline = strbuf_detach(&cmd);
	job.runs = xcalloc(n ? n : 1, sizeof(*job.runs));
	for (size_t i = 0; i < n; i++) {
		job.runs[i].job = &job;
		job.runs[i].box = job.boxes[i];
		job.runs[i].fd[0] = job.runs[i].fd[1] = -1;
	}
	bg_fanout(n, 0, run_on_box, &job);
	struct box_run **runs = sorted_runs(&job, n);
	if (job.gather)
		print_gathered(&job, runs, n);
	code = summarise(&job, runs, n);
	if (job.input && exec_input_error(job.input)[0]) {
		cli_error("exec: %s: the boxes got the input up to there",
			  exec_input_error(job.input));
		code = bg_exit_merge(code, BG_EXIT_FAIL);
	}
	exec_input_free(job.input);
	for (size_t i = 0; i < n; i++)
		strbuf_release(&job.runs[i].out);
	free(runs);
	free(job.runs);
	free(job.cmdline);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_exec = {
	.name = "exec", .summary = "run a command on many boxes at once",
	.help = exec_help, .options = exec_options, .opts_size = sizeof(struct exec_opts),
	.order = CLI_OPTIONS_FIRST, .needs = CLI_NEEDS_BOXES, .arity = CLI_ARGS_REQUIRED,
	.args_missing = "no command given (boxgate exec --all -- CMD ARGS...)", .run = run_exec,
};
/* clang-format on */
