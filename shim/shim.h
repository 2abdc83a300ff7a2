/* The flag shim.
 *
 * A box's entry point accepts only allowlisted flags; flags with an env rule
 * become `NAME=value` environment assignments of the remote command; any
 * other flag is refused before anything connects. Pure functions: shim/ never
 * talks to the network. */
#ifndef BG_SHIM_H
#define BG_SHIM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/quote.h"
#include "base/strbuf.h"
#include "shim/rules.h"

/* Where one user argument went. */
typedef enum { SHIM_PASS, SHIM_ENV, SHIM_VALUE } shim_route;

typedef struct shim_word {
	char *arg; /* the user's argument, verbatim */
	shim_route route;
	char *env; /* "NAME=value" for SHIM_ENV (and for a PASS word also exported via
		      num_workers_env) */
	const shim_env_rule *rule; /* the rule that translated it (borrowed) */
} shim_word;

typedef struct shim_result {
	char **env; /* NAME=value assignments, in order (owned) */
	size_t n_env;
	char **argv; /* arguments passed to the entry point (owned) */
	size_t n_argv;
	shim_word *words; /* one per user argument, for `boxgate explain` */
	size_t n_words;
} shim_result;

/* Translates the user's gate arguments under one box's `rules` (borrowed:
 * the result's words point at its env rules). Refuses (BG_EUSAGE, with a
 * message naming the box, the flag and the config line that would translate
 * it) a flag that is neither allowed nor translated, and enforces the gate
 * policy: --configs must equal --shape (one shape per invocation). */
int shim_translate(const shim_rules *rules, const char *const *args, size_t n_args,
		   shim_result *out, bg_err *err);
void shim_result_release(shim_result *r);

/* The remote command: `env NAME=value ... ENTRY ARGS...`, every word quoted. */
char *shim_command_line(const shim_result *r, const char *entry);
/* The same with an entry of several words (`python3 scripts/gate.py`), each
 * quoted. Both return an owned string, or NULL when an env name is invalid,
 * the entry is empty, or (with env) its first word contains `=` (env(1) would
 * take it for an assignment). An entry starting with `%` also goes through
 * env(1): bash would take it for a job spec. */
char *shim_command_line_argv(const shim_result *r, const char *const *entry, size_t n_entry);

#endif
