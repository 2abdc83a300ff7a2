/* A gate invocation for one box, from what a command was given: the box found
 * by name, the gate's arguments through the box's shim, --gpu checked against
 * the box's gpus, the timeout (--timeout, else MPK_GATE_TIMEOUT_S through the
 * shim, else the box's), --bar, the holder's tag and the gate_spec gate_run
 * takes; a candidate's baseline run; the worker-count sweep of --num-workers.
 * Nothing connects but gate_args_default_gpus; nothing prints: a refusal is a
 * BG_EUSAGE with its sentence in the bg_err. */
#ifndef BG_MEASURE_GATE_ARGS_H
#define BG_MEASURE_GATE_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "conf/conf.h"
#include "gate/client/agent_install.h"
#include "gate/client/run.h"
#include "remote/remote.h"
#include "shim/shim.h"

#define GATE_SECONDS_MAX (7 * 86400)

/* What the command was given. */
typedef struct gate_args_in {
	const char *cmd;    /* run, explain, validate, campaign: names the refusals */
	const char *box;    /* BOX */
	const char *gpu;    /* --gpu LIST, NULL */
	const char *bar;    /* --bar R, NULL */
	int timeout_s;      /* --timeout S, 0 */
	const char *holder; /* --holder TAG, NULL: names the holder in the slot's lock */
	bool json;
	const gate_agent *agent; /* the agent already found (copied); NULL: found here */
} gate_args_in;

typedef struct gate_args {
	const conf_box *box;
	const char *gpu_opt; /* --gpu, as given */
	char *gpus; /* --gpu checked against the box's gpus ("0,1"), else the default (owned) */
	char *agent_path; /* the agent on the box, quoted, once the command knows it (owned) */
	int timeout_s;    /* --timeout, else MPK_GATE_TIMEOUT_S from the shim, else the box's */
	bool json;
	double bar; /* --bar, 0 = default */
	shim_result shim;
	gate_agent agent;
	char *entry; /* owned */
	char *tag;   /* owned */
	gate_spec spec;
} gate_args;

/* Fills *ga for box in->box of cf with the gate's arguments argv[0..argc).
 * BG_EUSAGE: a refused option, box or flag (the sentence names in->cmd);
 * another code: the agent is not found beside boxgate (in->agent NULL). *ga is to be released
 * either way. */
int gate_args_build(const conf *cf, const gate_args_in *in, char *const *argv, size_t argc,
		    gate_args *ga, bg_err *err);
void gate_args_release(gate_args *ga);

/* The baseline run of the candidate `cand` built with `in`: the candidate's
 * words plus --baseline (*bargv, owned array of borrowed strings, *bargc),
 * on the same slot, agent and lock wait; its command line in *cmdline
 * (owned). *b is to be released either way. */
int gate_args_baseline(const conf *cf, const gate_args_in *in, const gate_args *cand,
		       char *const *argv, size_t argc, char ***bargv, size_t *bargc, gate_args *b,
		       char **cmdline, bg_err *err);

/* The first GPU of the box's gpus ("3" of "3,5"), owned; NULL when it names none. */
char *gate_args_first_gpu(const conf_box *b);
/* The slot when --gpu is not given (owned, NULL for a CPU slot): the box's first
 * GPU; on the local box GPU 0 when the agent finds one here, else a CPU slot. */
char *gate_args_default_gpus(remote_conn *c, const gate_args *ga);

/* A worker-count sweep: `--num-workers 8,64,68` (or --num-workers=LIST) among
 * the gate's arguments runs one invocation per count. */
#define GATE_SWEEP_MAX 64
typedef struct gate_sweep {
	int counts[GATE_SWEEP_MAX];
	size_t n;    /* 0: no --num-workers (or no value after it) */
	size_t at;   /* the index of the word holding the value */
	bool equals; /* that word is "--num-workers=LIST" */
} gate_sweep;

/* Finds the last --num-workers of argv[0..argc) and checks its value: whole
 * numbers 1..GATE_WORKERS_MAX, comma-separated, no duplicates, at most
 * GATE_SWEEP_MAX. BG_EUSAGE naming cmd and the value when it is bad. */
int gate_sweep_read(const char *cmd, char *const *argv, size_t argc, gate_sweep *sw, bg_err *err);
/* argv with the sweep's value replaced by counts[i]: an owned array of argc
 * words (plus a NULL) borrowing all but *word (owned). */
char **gate_sweep_words(char *const *argv, size_t argc, const gate_sweep *sw, size_t i,
			char **word);

#endif
