/* boxgate exec: one command on many boxes at once, output prefixed by box. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/json.h"
#include "base/lines.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/remote.h"

static const char exec_help[] =
	"usage: boxgate exec [--boxes SPEC | --pool POOL | --all] [--exclude SPEC]\n"
	"                    [--timeout S] [-b] [--json] [--accept-new] -- CMD [ARGS...]\n"
	"\n"
	"Runs CMD on every selected box at once over one SSH connection per box (the local\n"
	"box runs it with /bin/sh). CMD and ARGS are joined with spaces and run by the box's\n"
	"shell, as ssh(1) does. Each stdout line prints as 'box: line' as it arrives, stderr\n"
	"lines likewise on stderr.\n"
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
	"  -b, --gather   gather identical stdout per group of boxes (like clush -b)\n"
	"  --json         one JSON event per line: {box,stream,line} and {box,event,...}\n"
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
	"the channel closed first); 124 when a box timed out; else 1. A summary of failed\n"
	"boxes closes the output.\n";

struct exec_job;

struct box_run {
	struct exec_job *job;
	const conf_box *box;
	int rc;
	bg_err err;
	remote_status st;
	strbuf out; /* gathered stdout (-b) */
};

struct exec_opts {
	int timeout_s;
	bool gather;
};

static const cli_opt exec_options[] = {
	CLI_OPT_SELECT,
	CLI_OPT_SECONDS("timeout", struct exec_opts, timeout_s, 1, 7 * 86400),
	{"gather", 'b', CLI_FLAG, false, offsetof(struct exec_opts, gather), 0, 0},
	CLI_OPT_JSON,
	CLI_OPT_ACCEPT_NEW,
	CLI_OPT_END,
};

struct exec_job {
	const conf_box *const *boxes;
	char *cmdline;
	int timeout_s;
	bool gather, json, accept_new;
	struct box_run *runs;
};

#define CONTINUES " [boxgate: line continues]"

static void on_line(void *arg, remote_stream s, const char *line, size_t len, int flags)
{
	struct box_run *r = arg;
	struct exec_job *job = r->job;
	bool partial = flags & LINE_PARTIAL;
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
	if (job->gather && s == REMOTE_STDOUT) {
		strbuf_add(&r->out, line, len);
		strbuf_addstr(&r->out, partial ? CONTINUES "\n" : "\n");
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

static void run_on_box(void *arg, size_t i)
{
	struct exec_job *job = arg;
	const conf_box *box = job->boxes[i];
	struct box_run *r = &job->runs[i];
	remote_conn *c = NULL;
	r->job = job;
	r->box = box;
	r->rc = cli_connect(box, job->accept_new, &c, &r->err);
	if (r->rc == 0)
		r->rc = remote_run(c, job->cmdline, on_line, r, job->timeout_s * 1000, &r->st,
				   &r->err);
	remote_close(c);
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

/* Prints each group of boxes whose gathered stdout is identical. */
static void print_gathered(struct exec_job *job, size_t n)
{
	bool *done = xcalloc(n, sizeof(*done));
	const char **names = xcalloc(n, sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		if (done[i] || job->runs[i].rc < 0)
			continue;
		size_t k = 0;
		for (size_t j = i; j < n; j++) {
			struct box_run *a = &job->runs[i], *b = &job->runs[j];
			if (done[j] || b->rc < 0 || a->out.len != b->out.len ||
			    memcmp(strbuf_str(&a->out), strbuf_str(&b->out), a->out.len) != 0)
				continue;
			done[j] = true;
			names[k++] = b->box->name;
		}
		char *set = cli_fold_names(names, k);
		cli_printf(stdout, "---------------\n%s (%zu)\n---------------\n", set, k);
		cli_write(stdout, strbuf_str(&job->runs[i].out), job->runs[i].out.len);
		free(set);
	}
	free(done);
	free(names);
}

/* The closing summary and the exit code. */
static int summarise(struct exec_job *job, size_t n)
{
	size_t failed = 0;
	int code = BG_EXIT_OK;
	strbuf sum = STRBUF_INIT;
	for (size_t i = 0; i < n; i++) {
		struct box_run *r = &job->runs[i];
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
		} else if (r->rc < 0 && r->rc != BG_ETIMEOUT) {
			snprintf(how, sizeof(how), "%s error", failure_kind(r->rc));
			box_code = BG_EXIT_CONNECT;
			cli_error("%s", r->err.msg);
		} else if (r->rc == BG_ETIMEOUT || r->st.how == REMOTE_TIMEDOUT) {
			snprintf(how, sizeof(how), "timed out after %d s", job->timeout_s);
			box_code = BG_EXIT_TIMEOUT;
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

static int run_exec(cli_ctx *ctx, void *opts, const cli_args *args)
{
	const struct exec_opts *eo = opts;
	struct exec_job job = {
		.boxes = ctx->boxes,
		.timeout_s = eo->timeout_s,
		.gather = eo->gather,
		.json = ctx->opt.json,
		.accept_new = ctx->opt.accept_new,
	};
	size_t n = ctx->n_boxes;
	strbuf cmd = STRBUF_INIT;
	for (size_t i = 0; i < args->n; i++) {
		if (i)
			strbuf_addch(&cmd, ' ');
		strbuf_addstr(&cmd, args->v[i]);
	}
	job.cmdline = strbuf_detach(&cmd);
	job.runs = xcalloc(n, sizeof(*job.runs));
	bg_fanout(n, 0, run_on_box, &job);
	if (job.gather)
		print_gathered(&job, n);
	int code = summarise(&job, n);
	for (size_t i = 0; i < n; i++)
		strbuf_release(&job.runs[i].out);
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
