/* A campaign: a [campaign NAME] section (in its own file or in boxgate.ini)
 * describing a matrix of gate runs: shapes x worker counts x candidates, each
 * repeated, on a pool's slots. campaign_spec_load reads and checks it (every
 * error names FILE:LINE) before anything connects; campaign_jobs_expand turns it
 * into jobs, each with a key that names it across runs, so a re-run skips what
 * the results file already holds. */
#ifndef BG_CAMPAIGN_SPEC_H
#define BG_CAMPAIGN_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct cJSON;

#define CAMPAIGN_REPEATS_MAX 100
#define CAMPAIGN_JOBS_MAX    10000
/* Names (the campaign's, shapes, candidates) are at most this long, so a job's key
 * always fits whole: two jobs never share a key. */
#define CAMPAIGN_NAME_MAX 64
#define CAMPAIGN_KEY_MAX  (4 * CAMPAIGN_NAME_MAX + 48)
/* A candidate's definition: the first hex digits of the SHA-256 over the
 * campaign's gate_args, the candidate's gate flags and its kernel file's
 * SHA-256. Any edit of those makes new jobs. */
#define CAMPAIGN_DEF_LEN 12

typedef struct campaign_candidate {
	char *name;   /* "baseline", the file's stem, or a candidate.NAME key */
	char *file;   /* the kernel file (absolute), NULL for baseline and flag candidates */
	char *shown;  /* the file as the campaign names it */
	char sha[65]; /* the file's SHA-256, "" when no file */
	char **flags; /* gate flags of a candidate.NAME = ... key (baseline: "--baseline") */
	size_t n_flags;
	char def[CAMPAIGN_DEF_LEN + 1]; /* its definition (set by campaign_spec_load) */
} campaign_candidate;

typedef struct campaign_spec {
	char *name;
	char *file; /* the file it came from (absolute) */
	int line;   /* its section's line */
	char *pool;
	char **gate_args; /* words passed to every job first */
	size_t n_gate_args;
	char **shapes;
	size_t n_shapes;
	int *num_workers; /* none: n_num_workers 0, jobs get no --num-workers */
	size_t n_num_workers;
	campaign_candidate *cands;
	size_t n_cands;
	int repeats;
	int timeout_s;     /* 0: the box's */
	double bar;        /* 0: the gate's */
	double max_cv;     /* percent; < 0: [defaults] max_cv, else 2 */
	double sum_tol;    /* percent, anti-sloughing tolerance (default 10) */
	bool strict_noise; /* a CV over max_cv makes a point NOISY (else only a warning) */
	/* persistent_agent = no: every job in an exec channel of its own, as before
	 * the workers kept a serving agent (default: a serving agent per worker) */
	bool per_job_agent;
	int max_failures; /* a box failing this many times is quarantined (default 2) */
	int lock_wait_s;  /* how long a job waits for its slot's lock (default 30) */
	char **push;      /* local files pushed to every box first (absolute) */
	size_t n_push;
	char *results; /* the results file (absolute) */
} campaign_spec;

/* Reads [campaign NAME] from `path` (name NULL: the file's only campaign).
 * Sections other than [campaign ...] are boxgate.ini's and are skipped.
 * Relative paths (candidates, push, results) are taken from the file's
 * directory. BG_EUSAGE/BG_ECONFIG with FILE:LINE in err. */
int campaign_spec_load(const char *path, const char *name, campaign_spec *out, bg_err *err);
void campaign_spec_release(campaign_spec *s);

typedef struct campaign_job {
	size_t index;               /* in the campaign's order */
	char key[CAMPAIGN_KEY_MAX]; /* NAME/SHAPE/NW/CAND@DEF/REPEAT */
	size_t shape;               /* into spec->shapes */
	int num_workers;            /* -1: none */
	size_t cand;                /* into spec->cands */
	int repeat;
	char **words; /* the gate's arguments (owned, NULL-terminated) */
	size_t n_words;
} campaign_job;

/* The jobs, repeat-major (every point once before any point twice) and, within a
 * repeat, shape, worker count, candidate: the candidates of a point run close
 * together in time. */
int campaign_jobs_expand(const campaign_spec *s, campaign_job **out, size_t *n, bg_err *err);
void campaign_jobs_free(campaign_job *jobs, size_t n);

/* The record's "campaign" object for `job`, attempt `attempt`, `final` false when
 * the attempt was cut and the job goes back in the queue (owned). */
struct cJSON *campaign_job_json(const campaign_spec *s, const campaign_job *job, size_t n_jobs,
				int attempt, bool final);

/* The definition of a candidate given by its parts: `sha` "" or NULL when no
 * file. */
void campaign_def_of(char *const *gate_args, size_t n_gate_args, char *const *flags, size_t n_flags,
		     const char *sha, char out[CAMPAIGN_DEF_LEN + 1]);

/* The definition and the job key a record's "campaign" object stands for,
 * computed from its fields (name, shape, num_workers, candidate, repeat,
 * gate_args, candidate_flags, candidate_sha256), so records written before
 * keys held the definition compare alike. False when a field is missing or
 * of the wrong type. */
bool campaign_record_def(const struct cJSON *camp, char def[CAMPAIGN_DEF_LEN + 1]);
bool campaign_record_key(const struct cJSON *camp, char key[CAMPAIGN_KEY_MAX]);

/* What differs between the definition recorded in `camp` and candidate `c` of
 * `s`: "gate_args", "flags", "kernel file", joined with ", " (owned, "" when
 * nothing). */
char *campaign_def_change(const campaign_spec *s, const campaign_candidate *c,
			  const struct cJSON *camp);

#endif
