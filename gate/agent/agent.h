/* What the parts of boxgate-agent share. The parts are never compiled one by
 * one: gate/agent/gen.sh joins them, after the protocol header and the base/
 * files they use, into one C file (libc only, NVML through dlopen). */
#ifndef BG_GATE_AGENT_AGENT_H
#define BG_GATE_AGENT_AGENT_H

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/lines.h"
#include "base/parse.h"
#include "base/quote.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"

#ifndef BOXGATE_AGENT_VERSION
#define BOXGATE_AGENT_VERSION "0.1.0"
#endif

#define PARTIAL_FLUSH_MS 50
#define LINE_KEEP_MAX    (64 * 1024)       /* a longer line is written in pieces */
#define OUTQ_HIGH        (4 * 1024 * 1024) /* stop reading the gate above this */
#define TERM_SCAN_MS     50
#define KILL_SCAN_MS     20
#define KILL_GIVEUP_MS   30000
#define DRAIN_MS         2000
#define GPU_CONFIRM_MS   5000
#define GPU_POLL_MS      100
#define FINAL_FLUSH_MS   10000
#define LOCK_POLL_MS     10 /* a run waiting behind another starts within 10 ms of its end */

/* ---------------------------------------------------------------- output.c */

/* Bytes queued for a non-blocking fd: a strbuf consumed from the front. */
struct byteq {
	strbuf sb;
	size_t off;
};

void bq_add(struct byteq *q, const char *data, size_t n);
size_t bq_used(const struct byteq *q);
const char *bq_data(const struct byteq *q);
void bq_consume(struct byteq *q, size_t n);
void bq_release(struct byteq *q);

/* The agent's stdout and stderr. Everything written there goes through these queues so
 * that the gate's lines and the agent's own lines keep their order and stay whole, and so
 * that a reader that stops reading never blocks the watchdog. */
struct outq {
	int fd;
	struct byteq q;
	int dead;    /* the fd failed: output is dropped */
	int midline; /* the last queued byte was not a newline */
};

extern struct outq g_out[2];
extern int g_output_gone; /* a write failed with EPIPE or the like */
/* Framing (--nonce-stdin): AGENT_FRAME NONCE " " before each stdout line of the agent's
 * own, empty when not framed; the end line's "why" and extra fields. */
extern char g_frame[96];
extern const char *g_end_why;
extern char g_end_extra[96];
/* The client's liveness as the final flush sees it: stdin still watched, the heartbeat
 * timeout, and when bytes last came in on stdin. */
extern int g_watch_stdin;
extern long long g_hb_ms, g_alive_ms;

void out_add(struct outq *o, const char *data, size_t n);
/* Queues one whole line of the agent's own, starting a fresh line when needed. */
void out_line(struct outq *o, const char *line, size_t n);
/* A line "boxgate-agent: ..." on stderr. */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line on stdout. */
void print_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int out_write_some(struct outq *o);
void out_flush(long long deadline);
/* The framed end line (when framed), the final flush, exit. */
void agent_exit(int rc) __attribute__((noreturn));
void usage_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void json_escape(strbuf *b, const char *s);

/* ---------------------------------------------------------------- options.c */

long long parse_secs(const char *s);
int parse_gpus(const char *s, int **out, int *count);
const char *opt_value(int argc, char **argv, int *i, const char *name);
void fmt_secs(char *out, size_t n, long long ms);

/* ---------------------------------------------------------------- nvml.c */

typedef int nvml_ret;
typedef void *nvml_dev;
#define NVML_SUCCESS                 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7

struct nvml {
	void *lib;
	int ok;
	char why[256];
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	const char *(*errstr)(nvml_ret);
	nvml_ret (*count)(unsigned *);
	nvml_ret (*by_index)(unsigned, nvml_dev *);
	nvml_ret (*name)(nvml_dev, char *, unsigned);
	nvml_ret (*uuid)(nvml_dev, char *, unsigned);
	nvml_ret (*procname)(unsigned, char *, unsigned);
	nvml_ret (*procs[3])(nvml_dev, unsigned *, void *);
	size_t stride[3];
	char *fake; /* BOXGATE_AGENT_FAKE_NVML's file, when set: NVML is not loaded */
};

struct gpu_proc {
	unsigned pid;
	int gpu;
	long long mem_mib; /* -1: unknown */
	char name[128];
};

void nvml_open(struct nvml *nv);
void nvml_close(struct nvml *nv);
int nvml_count(struct nvml *nv, unsigned *n);
int nvml_list(struct nvml *nv, int idx, struct gpu_proc **v, int *n, char *why, size_t whyn);
int cmd_gpus(int argc, char **argv);
int cmd_procs(int argc, char **argv);

/* ---------------------------------------------------------------- the run */

enum phase { PH_LOCK, PH_RUN, PH_TERM, PH_KILL, PH_DRAIN, PH_GPU, PH_DONE };
enum why {
	W_NONE,
	W_EXITED,  /* the gate exited by itself */
	W_TIMEOUT, /* watchdog */
	W_EOF,     /* stdin EOF */
	W_HB,      /* heartbeat silence */
	W_HUP,     /* SIGHUP */
	W_OUTGONE, /* stdout/stderr closed */
	W_KILLREQ, /* "kill" on stdin */
	W_SIGINT,  /* SIGINT */
	W_SIGTERM, /* SIGTERM, SIGQUIT */
};

struct instream {
	int fd; /* -1 at EOF */
	struct byteq part;
	long long last_ms;
	struct outq *to;
};

struct killed {
	pid_t pid;
	int termed;
};

struct run {
	/* options */
	int *gpus, ngpus;
	char *gpulist; /* normalised, "" when no slot */
	const char *lock_dir;
	const char *tag;
	long long lock_wait_ms, timeout_ms, grace_ms, hb_ms;
	int no_stdin, require_gpu, nonce_stdin;
	const char *cwd;
	char **envs;
	int nenvs;
	char **cmd;

	/* state */
	pid_t self;
	int sfd;
	int *lock_fds;
	int nlocks;
	struct nvml nv;
	int have_nvml;
	pid_t gate;
	int gate_status, gate_reaped;
	struct instream in[2];
	int stdin_open;
	lines stdin_lines;
	int stdin_long; /* inside a stdin line longer than the protocol's */
	long long start_ms, hb_last_ms, trigger_ms, kill_at_ms, giveup_ms, next_scan_ms,
		drain_until_ms;
	long long gpu_until_ms, gpu_next_ms, reaped_ms;
	enum phase ph;
	enum why why;
	struct killed *killed;
	int nkilled;
	int unreaped;
	int gpu_freed; /* -1 null, 0 false, 1 true */
	int leftovers;
};

extern const char *const why_text[];

/* options.c */
void parse_run(struct run *r, int argc, char **argv);
/* heartbeat.c */
void stdin_init(struct run *r);
void read_stdin(struct run *r);
void read_nonce(struct run *r);
/* lock.c */
void lock_slot(struct run *r);
void lock_release(struct run *r);
/* $HOME/.cache/boxgate/locks (HOME from the password entry when unset); static. */
const char *agent_default_lock_dir(void);
/* mkdir -p with mode 0700 for the missing parts; -1 when `dir` is not a directory after. */
int agent_mkdir_p(const char *dir);

/* ---------------------------------------------------------------- slots.c */

/* 1 with "REASON (disabled by WHO since TIME)" in why when LOCK_DIR/NAME.disabled exists. */
int slot_disabled(const char *lock_dir, const char *name, char *why, size_t n);
int cmd_slots(int argc, char **argv);
int cmd_slot_disable(int argc, char **argv);
int cmd_slot_enable(int argc, char **argv);

/* ---------------------------------------------------------------- queue.c */

int cmd_queue(int argc, char **argv);
/* serve.c: jobs over stdin; main.c: no other process of the user may read this one */
int cmd_serve(int argc, char **argv);
/* main.c: the signals every wait of the agent polls for, through a signalfd */
int agent_signalfd(void);
void guard_memory(void);
int cmd_queue_list(int argc, char **argv);
/* Whether some process holds a flock on `path`, read from /proc/locks (looking
 * takes no lock). */
int agent_flock_held(const char *path);
/* exclusive.c */
void check_exclusive(struct run *r);
int gpu_free_now(struct run *r, strbuf *why);
/* proctree.c */
void killed_note(struct run *r, pid_t pid, int sig);
int killed_has(const struct run *r, pid_t pid);
void reap(struct run *r);
size_t tree_scan(struct run *r, int sig, size_t *live, strbuf *list);
/* child.c */
void start_gate(struct run *r);
void in_flush_part(struct instream *s);
void read_gate(struct instream *s);
/* watchdog.c */
int why_exit(const struct run *r);
void trigger(struct run *r, enum why why);
void loop_once(struct run *r, long long deadline);
long long step(struct run *r);
void finish_run(struct run *r) __attribute__((noreturn));

#endif
