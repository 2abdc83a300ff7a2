/* The configuration model: [defaults], [box NAME], [pool NAME], [verify].
 *
 * conf_load() finds the file (--config, $BOXGATE_CONFIG, boxgate.ini in the
 * working directory or the nearest directory above it up to the repository
 * root, $XDG_CONFIG_HOME/boxgate/config.ini, ~/.config/boxgate/config.ini), parses it
 * with inih, resolves every ssh box through ssh_config and validates. Errors
 * name file:line. A built-in box `local` (transport local) always exists. The
 * conf owns every string in it; conf_release() frees them. conf/ never opens a
 * network connection and never reads the environment: the caller hands it a
 * conf_env. */
#ifndef BG_CONF_H
#define BG_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "remote/target.h"
#include "shim/rules.h"

typedef enum { CONF_TRANSPORT_SSH, CONF_TRANSPORT_LOCAL } conf_transport;
typedef enum { CONF_HKC_STRICT, CONF_HKC_ACCEPT_NEW } conf_hostkey_check;
typedef enum { CONF_GPU_REQUIRED, CONF_GPU_OPTIONAL } conf_gpu_policy;

/* `env --decode-m1 = MPK_GG_DECODE_M1=1` (shim/rules.h). */
typedef shim_env_rule conf_env_rule;

typedef struct conf_box {
	char *name;
	conf_transport transport;
	/* ssh: `host` as written, then resolved through ssh_config. */
	char *host;
	char *hostname;    /* HostName, else host */
	char *user;        /* box key, else ssh_config User, else $USER/pw_name */
	int port;          /* box key, else ssh_config Port, else 22 */
	char **identities; /* expanded paths: box `identity`, else ssh_config IdentityFile(s) */
	size_t n_identities;
	/* User known_hosts files, expanded: box key (a list), else ssh_config's
	 * UserKnownHostsFile (every file of it), else [defaults], else
	 * ~/.ssh/known_hosts ~/.ssh/known_hosts2 (ssh's default). All are read;
	 * a new key is recorded in the first. */
	char **known_hosts;
	size_t n_known_hosts;
	/* GlobalKnownHostsFile, else /etc/ssh/ssh_known_hosts{,2}: read, never written. */
	char **global_known_hosts;
	size_t n_global_known_hosts;
	conf_hostkey_check host_key_check;
	int connect_timeout_s; /* box/defaults, else ssh_config ConnectTimeout (not 0), else 10 */
	/* ConnectTimeout as ssh_config set it (what `ssh -G` prints; 0 is "no
	 * timeout" to ssh, which boxgate never uses), -1 when it set none. */
	int ssh_connect_timeout_s;
	int keepalive_s; /* default 5 */
	/* Set when ssh_config asks for something boxgate cannot do (ProxyCommand):
	 * "ProxyCommand (~/.ssh/config:12)". cli refuses that box. */
	char *unsupported;
	/* ProxyJump: the box key `jump`, else ssh_config's ProxyJump, as written
	 * (NULL: none), where it was set, and its hops resolved, each a box of
	 * its own named "jump HOST" (hops[0] is reached directly; the first
	 * hop's own ProxyJump comes first, as ssh does). */
	char *jump;
	char *jump_at;
	struct conf_box **hops;
	size_t n_hops;
	/* scheduler = slurm: the box is a login node; each gate run is an srun
	 * step (partition, gres per run, default gpu:1, srun_args split on
	 * blanks, slurm_conf exported as SLURM_CONF), at most max_jobs at once. */
	bool slurm;
	char *partition;
	char *gres;
	char **srun_args;
	size_t n_srun_args;
	char *slurm_conf;
	int max_jobs;
	/* The gate side. */
	char *repo;                 /* the box's own repo copy ("~" kept for the remote shell) */
	char *gate;                 /* remote entry point, relative to repo (or absolute) */
	char *python;               /* interpreter on the box, default "python3" */
	char *gpus;                 /* as written: "0-7", "0,2,3"; NULL when none configured */
	conf_gpu_policy gpu_policy; /* require_gpu = yes|no (default yes for ssh, no for local) */
	/* no_baseline = yes|no (default no): run the gate alone, as run --no-baseline */
	bool no_baseline;
	int gate_timeout_s;             /* default 420 */
	long long heartbeat_timeout_ms; /* heartbeat_timeout_s, default 15 s */
	long long kill_grace_ms;        /* kill_grace_s, default 5 s */
	long long control_persist_ms;   /* control_persist_s, default 300 s; 0: no master */
	int lock_wait_s;                /* default 0: refuse at once when the slot is held */
	char **allow;                   /* flags the entry point accepts */
	size_t n_allow;
	int allow_line;     /* the line of the `allow =` in use, 0 when built in or unset */
	conf_env_rule *env; /* flag -> environment translations */
	size_t n_env;
	char *num_workers_env; /* e.g. "MPK_TEST_NUM_WORKERS": also export --num-workers */
	/* kernel_paths = KIND:PATH ...: where `run --kernel FILE` puts the candidate for a
	 * gate kind (PATH relative to the repo) */
	char **kernel_paths; /* "KIND:PATH" each */
	size_t n_kernel_paths;
	char *overlay_env; /* overlay_env = NAME: the shadow tree's root for the gate */
	/* Gate arguments that ask the box's gate for its stub and for its
	 * drop-the-feature variant (boxgate validate), split on blanks; NULL when
	 * not configured. The local box running the demo gate has both. */
	char **validate_stub;
	size_t n_validate_stub;
	int validate_stub_line; /* where it was set, 0 when built in or unset */
	char **validate_drop;
	size_t n_validate_drop;
	int validate_drop_line;
	char *file; /* where [box NAME] was written; "(built-in)" for local */
	int line;
	bool builtin;
	/* What remote/ and shim/ are handed, pointing at the strings above:
	 * remote_connect(&box->target, ...), shim_translate(&box->rules, ...).
	 * Filled by conf_box_bind(). */
	remote_target target;
	remote_slurm slurm_view; /* target.slurm points here on a Slurm box */
	shim_rules rules;
} conf_box;

typedef struct conf_slot {
	char *box;  /* box name */
	char *gpus; /* "0-4" */
} conf_slot;

typedef struct conf_pool {
	char *name;
	conf_slot *slots; /* `slots = local:0-4, b200-a:0-7`; a bare name means all its gpus */
	size_t n_slots;
	/* `disabled = b200-a:5 local:2` ("BOX:GPU", or "BOX" for its CPU slot): out of use
	 * for this configuration's users, with `disabled_why` */
	char **disabled;
	size_t n_disabled;
	char *disabled_why;
	char *file;
	int line;
} conf_pool;

/* [verify]: `.py = CMD`, `.sh = CMD`, or a path `tests/x/_build_helper.py = CMD`.
 * `{}` is the file to check, `{python}` the box's interpreter. */
typedef struct conf_verify {
	char *pattern; /* ".py" (an extension) or a repo-relative path */
	char *command;
	char *file;
	int line;
} conf_verify;

typedef struct conf {
	char *path;     /* the file that was loaded, NULL when none was found */
	char *found_by; /* how it was found: "--config", "$BOXGATE_CONFIG", "found from DIR" */
	/* No file: where boxgate looked ("none given, no boxgate.ini from DIR up to
	 * ROOT, no ..."); NULL when a file was loaded. */
	char *not_found;
	char *root;         /* the directory holding it (the local repo root), else cwd */
	char *ssh_config;   /* [defaults] ssh_config, else ~/.ssh/config */
	char *results;      /* [defaults] results, expanded; NULL when unset (cli's default) */
	double max_cv;      /* [defaults] max_cv (percent), < 0 when unset (cli's default) */
	char *agent_socket; /* conf_env's, copied: every box's target points at it */
	conf_box *boxes;
	size_t n_boxes;
	conf_pool *pools;
	size_t n_pools;
	conf_verify *verify; /* the built-in defaults for .py .sh .json come last */
	size_t n_verify;
} conf;

/* What conf/ would otherwise read from the process environment: the caller
 * (cli/) fills it, so conf/ reads nothing behind its back. NULL or "" means
 * unset; home and user then come from the password database. */
typedef struct conf_env {
	const char *home;           /* $HOME */
	const char *user;           /* $USER */
	const char *config_path;    /* $BOXGATE_CONFIG */
	const char *xdg_config_dir; /* $XDG_CONFIG_HOME */
	const char *agent_socket;   /* $SSH_AUTH_SOCK, for every box's target */
	/* ${VAR} in ssh_config paths: the value of `name`, NULL when unset. */
	const char *(*lookup)(void *ctx, const char *name);
	void *lookup_ctx;
	/* The working directory, where the search for boxgate.ini starts;
	 * NULL: getcwd(). Last, so that initializers by position still hold. */
	const char *cwd;
} conf_env;

/* Loads and validates. `explicit_path` is --config (may be NULL); `env` may
 * be NULL (nothing set). Without --config or $BOXGATE_CONFIG, boxgate.ini is
 * looked for in env->cwd and each directory above it, as git looks for .git:
 * the search stops after the first directory holding .git (the repository
 * root) or at /; then the XDG files. On error err->msg reads "FILE:LINE: what was
 * expected" and the conf is released. */
int conf_load(conf *c, const char *explicit_path, const conf_env *env, bg_err *err);
/* Loads one given file (no search). */
int conf_load_file(conf *c, const char *path, const conf_env *env, bg_err *err);

/* Points b->target and b->rules at the box's own fields, and the target at
 * `agent_socket` (borrowed; NULL: no agent). conf_load does it for every
 * box; call it again after changing a box by hand. */
void conf_box_bind(conf_box *b, const char *agent_socket);
void conf_release(conf *c);

/* A percentage as [defaults] max_cv and run --max-cv take it: a plain
 * decimal ("2", "0.5") in [0, CONF_PERCENT_MAX]; no sign, exponent or blank. */
#define CONF_PERCENT_MAX 1000.0
bool conf_parse_percent(const char *v, double *out);

/* The closest of `cands` to `word` (optimal string alignment distance <= 2,
 * case-insensitive, or `word` a prefix of a candidate), NULL when none is
 * close. Borrowed from cands. */
const char *conf_suggest(const char *word, const char *const *cands, size_t n);

/* Splits on commas and whitespace; owned strings appended to *v. */
void conf_split_list(const char *s, char ***v, size_t *n);
void conf_strv_free(char **v, size_t n);

/* Reads a whole file as lines (the base line splitter); '\r' before '\n' is
 * dropped. BG_ENOTFOUND when it does not exist, BG_EIO otherwise. A NUL byte
 * is BG_ECONFIG naming file:line. */
typedef struct conf_lines {
	char **line;
	size_t n, cap;
} conf_lines;
int conf_read_lines(const char *path, conf_lines *out, bg_err *err);
void conf_lines_release(conf_lines *l);

/* [A-Za-z0-9._-]+ */
bool conf_box_name_ok(const char *s);

/* Borrowed pointer to the box named `name`, NULL when there is none. */
const conf_box *conf_find_box(const conf *c, const char *name);
const conf_pool *conf_find_pool(const conf *c, const char *name);

/* Resolves a selection to boxes, in configuration order without duplicates:
 * `spec` is a comma list of names, node-set ranges (`b200-[1-8,12]`) and
 * `@pool`; `all` selects every configured box except the built-in local one
 * (which is selected only by name or when it is the only box).
 * `spec` takes clush's operators between sets too: "h[1-8]!h3" (minus),
 * '&' (and), '^' (either, not both), left to right.
 * *out is an owned array of borrowed pointers (free() it). Unknown names are
 * BG_ENOTFOUND with a did-you-mean where one is close, and the places
 * searched when no config file was loaded. */
int conf_select(const conf *c, const char *spec, bool all, const conf_box ***out, size_t *n_out,
		bg_err *err);
/* conf_select, then the boxes `exclude` names (a spec of its own; NULL:
 * none) left out. An excluded name must be a configured box. */
int conf_select_except(const conf *c, const char *spec, bool all, const char *exclude,
		       const conf_box ***out, size_t *n_out, bg_err *err);

/* The verifier command for a repo-relative path: a path rule wins over an
 * extension rule; NULL when none applies (borrowed). */
const char *conf_verify_for(const conf *c, const char *relpath);
/* conf_verify_for as sync/'s verifier lookup (sync_verifier_for_fn; ctx: the
 * conf): *builtin says whether the rule is boxgate's built-in one. */
const char *conf_verifier_for(void *ctx, const char *relpath, bool *builtin);
/* The interpreter of the built-in local box (sync_local_check); "python3"
 * when it names none. */
const char *conf_local_python(const conf *c);
/* The results file (owned): `given` (--results), else c's [defaults] results,
 * else $XDG_DATA_HOME/boxgate/results.jsonl (an absolute xdg_data_home only),
 * else $HOME/.local/share/boxgate/results.jsonl; NULL (BG_EUSAGE in err) when
 * none. c may be NULL (no configuration). */
char *conf_results_path(const conf *c, const char *given, const char *xdg_data_home,
			const char *home, bg_err *err);

/* Prints the resolved configuration as INI (for `boxgate config check`). */
void conf_dump(const conf *c, void (*out)(void *ctx, const char *line), void *ctx);

/* The commented starter boxgate.ini for the repository at `repo_dir`, with a
 * commented-out [box] for each of `hosts` (names from ~/.ssh/config). Owned. */
char *conf_starter_text(const char *repo_dir, char *const *hosts, size_t n_hosts);

#endif
