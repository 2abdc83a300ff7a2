/* Private to conf/: the raw layers the INI parser fills, and small helpers
 * shared by the loader, the resolver and the selector. Nothing outside conf/
 * includes this. */
#ifndef BG_CONF_INTERNAL_H
#define BG_CONF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/parse.h"
#include "conf/conf.h"

/* GPU indices accepted in `gpus` and pool slots. */
#define CONF_MAX_GPUS BG_MAX_GPUS

/* The keys of [defaults] and [box NAME] (env rules are kept apart). */
enum conf_key {
	K_HOST,
	K_USER,
	K_PORT,
	K_IDENTITY,
	K_KNOWN_HOSTS,
	K_HOST_KEY_CHECK,
	K_CONNECT_TIMEOUT,
	K_KEEPALIVE,
	K_CONTROL_PERSIST,
	K_GATE_TIMEOUT,
	K_HEARTBEAT_TIMEOUT,
	K_KILL_GRACE,
	K_LOCK_WAIT,
	K_REPO,
	K_GATE,
	K_PYTHON,
	K_GPUS,
	K_REQUIRE_GPU,
	K_NO_BASELINE,
	K_ALLOW,
	K_NUM_WORKERS_ENV,
	K_VALIDATE_STUB,
	K_VALIDATE_DROP,
	K_KERNEL_PATHS,
	K_OVERLAY_ENV,
	K_TRANSPORT,
	K_JUMP,
	K_SCHEDULER,
	K_PARTITION,
	K_GRES,
	K_SRUN_ARGS,
	K_SLURM_CONF,
	K_MAX_JOBS,
	K_SSH_CONFIG,
	K_RESULTS,
	K_MAX_CV,
	K_N
};

/* A value as written (already validated) and the line it came from. */
typedef struct conf_kv {
	char *value; /* NULL when not set */
	int line;
} conf_kv;

/* One [defaults] (all of them merged) or one [box NAME]. */
typedef struct conf_layer {
	char *name; /* box name; NULL for [defaults] */
	int line;   /* the section line */
	conf_kv kv[K_N];
	conf_env_rule *env;
	size_t n_env, cap_env;
} conf_layer;

typedef struct conf_raw_pool {
	char *name;
	int line;    /* the section line */
	char *slots; /* NULL when no `slots` key */
	int slots_line;
	char *disabled, *disabled_why; /* NULL when not given */
	int disabled_line, disabled_why_line;
} conf_raw_pool;

/* Everything one file said, before defaults and ssh_config are applied. */
typedef struct conf_raw {
	char *file;
	conf_layer defaults;
	conf_layer *boxes;
	size_t n_boxes, cap_boxes;
	conf_raw_pool *pools;
	size_t n_pools, cap_pools;
	conf_verify *verify;
	size_t n_verify, cap_verify;
} conf_raw;

void conf_raw_release(conf_raw *raw);

/* Parses `path` into `raw` (raw->file is set from path). */
int conf_parse_file(conf_raw *raw, const char *path, bg_err *err);

/* Builds the resolved conf (c->path, c->root already set) from raw; `env`
 * may be NULL. */
int conf_resolve(conf *c, conf_raw *raw, const conf_env *env, bg_err *err);

/* --- helpers (conf/util.c) --- */

/* [A-Za-z_][A-Za-z0-9_]* */
bool conf_env_name_ok(const char *s);
/* Free n rules and the array itself; NULL with n == 0 is fine. */
void conf_env_rules_free(conf_env_rule *r, size_t n);
void conf_verify_free(conf_verify *v, size_t n);

/* env's $HOME, else the password database, else "/" (borrowed, static
 * storage refreshed on each call). `env` may be NULL. */
const char *conf_home(const conf_env *env);
/* env's $USER, else the password database name, else "unknown" (same lifetime). */
const char *conf_local_user(const conf_env *env);

/* The password database's home directory and user name (what ssh takes
 * for `~`, %d and %u), else $HOME / $USER; same lifetime as above. */
const char *conf_pw_home(const conf_env *env);
const char *conf_pw_name(const conf_env *env);

/* "~" and "~/x" become home-relative; a relative path becomes relative to
 * `base` when base is non-NULL. Owned result. */
char *conf_expand_path(const char *path, const char *home, const char *base);

/* A path relative to the repo: not absolute, no empty or '..' component. */
bool conf_rel_path_ok(const char *p);

/* Frees what one box owns (not the box itself); its hops too. */
void conf_box_release_one(conf_box *b);

#endif
