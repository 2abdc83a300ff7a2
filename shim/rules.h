/* What the flag shim needs to know about one box: its allowlist, its env
 * rules and the names its messages use. Plain data with no dependency; every
 * pointer is borrowed (conf/ fills one per box, pointing at the box's own
 * strings). */
#ifndef BG_SHIM_RULES_H
#define BG_SHIM_RULES_H

#include <stdbool.h>
#include <stddef.h>

/* `env --decode-m1 = MPK_GG_DECODE_M1=1`: flag -> NAME=VALUE, `{}` in VALUE
 * stands for the flag's value (then the flag takes a value). */
typedef struct shim_env_rule {
	char *flag;  /* "--decode-m1" */
	char *name;  /* "MPK_GG_DECODE_M1" (validated [A-Za-z_][A-Za-z0-9_]*) */
	char *value; /* "1" or "{}" or "x{}y" */
	char *file;  /* where the rule was written */
	int line;
} shim_env_rule;

typedef struct shim_rules {
	const char *name; /* the box, for messages */
	const char *gate; /* its entry point, for messages; NULL: "the box's gate" */
	/* Where [box NAME] was written, for the hint that says where a
	 * translation would go; `builtin` for a box no file declared. */
	const char *file;
	int line;
	bool builtin;
	char *const *allow; /* flags the entry point accepts */
	size_t n_allow;
	int allow_line;           /* where `allow =` was written in `file`; 0: nowhere */
	const shim_env_rule *env; /* flag -> environment translations */
	size_t n_env;
	const char *num_workers_env; /* e.g. "MPK_TEST_NUM_WORKERS": also export --num-workers */
} shim_rules;

#endif
