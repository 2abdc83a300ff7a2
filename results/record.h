/* The schema-1 record of one gate invocation (README "The results store"):
 * provenance, boxgate's verdict, the parsed result and the raw line, built
 * from what `run` knows when the invocation ends, whatever the outcome. */
#ifndef BG_RESULTS_RECORD_H
#define BG_RESULTS_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "gate/client/run.h"

#define RESULTS_SCHEMA 1

typedef struct results_record_in {
	const char *run_id; /* 16 lowercase hex, one per boxgate invocation */
	int seq;            /* the invocation's index within the run */
	const char *version;
	const char *box, *host, *transport; /* transport: "ssh" | "local" */
	const char *gpus;                   /* the slot ("0", "0,1"), NULL for a CPU slot */
	const char *command;                /* the exact remote command line */
	const char *const *gate_args;       /* the user's words after "--" */
	size_t n_gate_args;
	int64_t start_ms, end_ms; /* wall clock, milliseconds since the epoch */
	int exit_code;            /* boxgate's exit code for this invocation */
	const char *why;          /* boxgate's one-line reason ("" or NULL: none) */
	const gate_outcome *outcome;
	const gate_result *last; /* the last result line, NULL when none */
	int repeat_i, repeat_n;  /* run --repeat: "repeat": {"i", "n"}; repeat_n 0: none */
	/* Baseline and candidate measured apart: "role": "candidate" | "baseline"
	 * (a "baseline" record's point.candidate is "baseline"); NULL: no role. */
	const char *role;
	/* run --warmup: a warm-up invocation, "warmup": true, left out of every
	 * point's numbers (results_record_is_warmup) */
	bool warmup;
	/* The box's push manifest as read ("SHA256 TAB EPOCH TAB PATH" lines,
	 * "" when none): "pushed"; NULL: "pushed": null and "pushed_error". */
	const char *pushed;
	const char *pushed_error;
	/* run --kernel/--overlay: overlay_json()'s object, copied as "overlay";
	 * NULL: "overlay": null. */
	const struct cJSON *overlay;
	/* run --pull: the files fetched after the invocation, copied as "pulled";
	 * NULL: no such key. */
	const struct cJSON *pulled;
	/* boxgate campaign: campaign_job_json()'s object, copied as "campaign";
	 * NULL: no such key. */
	const struct cJSON *campaign;
} results_record_in;

/* The record (owned, cJSON_Delete). Pure: reads only `in`. */
struct cJSON *results_record_build(const results_record_in *in);

/* The "pushed" list of a push manifest's text: {"path", "sha256",
 * "pushed_at"} per well-formed line, in the file's order; lines that are
 * not "SHA256 TAB EPOCH TAB PATH" are left out. */
struct cJSON *results_pushed_list(const char *text);

/* "2026-12-03T14:50:01.123Z" for `ms` since the epoch (UTC); buf >= 32 bytes. */
void results_time_iso(int64_t ms, char *buf, size_t n);
/* Wall-clock milliseconds since the epoch. */
int64_t results_now_ms(void);
/* A fresh run id: 16 lowercase hex digits from the kernel's random source. */
void results_new_run_id(char out[17]);

/* boxgate's own verdict for an invocation: from its exit code and the last
 * result's verdict; VERDICT_NONE when there is none (a usage or connection
 * failure, a gate that failed without a result). */
gate_verdict results_verdict_of(int exit_code, const gate_outcome *o);

/* True for a warm-up invocation's record ("warmup": true): no reader counts
 * it in a point's numbers, its verdict or its statistics. */
bool results_record_is_warmup(const struct cJSON *rec);

#endif
