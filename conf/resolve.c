/* From raw layers to resolved boxes, pools and verifiers.
 *
 * Precedence, per box:
 *   user, port, identity, known_hosts:  [box] > ssh_config > [defaults] > built-in
 *   (ssh_config speaks about this host, [defaults] about every box)
 *   connect_timeout_s:                  [box] > [defaults] > ssh_config (not 0) > 10
 * [box] user and port reach ssh_config as `ssh -l` / `ssh -p` would (Match
 * user and %r see them); values ssh_config sets are expanded as ssh does.
 *   every other key:                    [box] > [defaults] > built-in
 * Relative local paths (identity, known_hosts, ssh_config, a local box's
 * repo) are relative to the directory holding the configuration file. */
#include "conf/internal.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "conf/jumpspec.h"
#include "conf/nodeset.h"
#include "conf/sshconfig.h"

typedef struct resolver {
	conf *c;
	conf_raw *raw;
	const char *file; /* raw->file or "(built-in)" */
	const char *home;
	char *local_user;
	bg_err *err;
	const conf_env *env; /* never NULL */
} resolver;

static const conf_kv *pick(const conf_layer *box, const conf_layer *def, enum conf_key k)
{
	if (box && box->kv[k].value)
		return &box->kv[k];
	if (def && def->kv[k].value)
		return &def->kv[k];
	return NULL;
}

static const char *pick_str(const conf_layer *box, const conf_layer *def, enum conf_key k)
{
	const conf_kv *kv = pick(box, def, k);
	return kv ? kv->value : NULL;
}

static int pick_int(const conf_layer *box, const conf_layer *def, enum conf_key k, int dflt)
{
	const char *v = pick_str(box, def, k);
	return v ? atoi(v) : dflt;
}

/* A T_SECS value (checked by the loader) in milliseconds. */
static long long pick_ms(const conf_layer *box, const conf_layer *def, enum conf_key k,
			 long long dflt)
{
	const char *v = pick_str(box, def, k);
	long long ms;
	return v && bg_parse_seconds_ms(v, 0, LLONG_MAX, &ms) ? ms : dflt;
}

static bool truthy(const char *v)
{
	return strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0;
}

static void copy_env(conf_box *b, const conf_env_rule *r, size_t *cap)
{
	b->env = xgrow(b->env, cap, b->n_env + 1, sizeof(*b->env));
	conf_env_rule *d = &b->env[b->n_env++];
	d->flag = xstrdup(r->flag);
	d->name = xstrdup(r->name);
	d->value = xstrdup(r->value);
	d->file = xstrdup(r->file);
	d->line = r->line;
}

static void add_path(char ***v, size_t *n, size_t *cap, char *owned)
{
	*v = xgrow(*v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = owned;
}

static void add_identity(conf_box *b, size_t *cap, char *owned)
{
	add_path(&b->identities, &b->n_identities, cap, owned);
}

/* A list written in boxgate.ini (commas or blanks), each path expanded. */
static void paths_from_list(resolver *rs, char ***out, size_t *n_out, const char *list)
{
	char **v = NULL;
	size_t n = 0, cap = *n_out;
	conf_split_list(list, &v, &n);
	for (size_t i = 0; i < n; i++)
		add_path(out, n_out, &cap, conf_expand_path(v[i], rs->home, rs->c->root));
	conf_strv_free(v, n);
}

/* One path from ssh_config, expanded as ssh expands it; an error names the
 * line that wrote it. */
static int expand_ssh_path(resolver *rs, const conf_box *b, const sshcfg_tokens *t, const char *kw,
			   const char *raw, const char *where, char **out)
{
	bg_err e2;
	int rc = sshcfg_expand(raw, t, SSHCFG_X_TILDE | SSHCFG_X_DOLLAR, out, &e2);
	if (rc)
		return bg_fail(rs->err, rc, "box '%s': %s: %s '%s': %s", b->name, where, kw, raw,
			       e2.msg);
	return 0;
}

/* The ssh side: ssh_config, then the built-in defaults. The box's own
 * user and port are given to ssh_config as `ssh -l` / `ssh -p` would be. */
static int resolve_ssh(resolver *rs, const conf_layer *L, const conf_layer *D, conf_box *b)
{
	const char *v;
	sshcfg_query q = {b->host, pick_str(L, NULL, K_USER), pick_int(L, NULL, K_PORT, 0),
			  pick_str(NULL, D, K_USER), rs->home};
	sshcfg_host h;
	int rc = sshcfg_resolve(rs->c->ssh_config, &q, &h, rs->err);
	if (rc) {
		char where[300];
		snprintf(where, sizeof(where), "box '%s'", b->name);
		bg_err_prefix(rs->err, where);
		return rc;
	}
	if ((v = pick_str(L, NULL, K_USER)))
		b->user = xstrdup(v);
	else if (h.user)
		b->user = xstrdup(h.user);
	else if ((v = pick_str(NULL, D, K_USER)))
		b->user = xstrdup(v);
	else
		b->user = xstrdup(rs->local_user);

	if ((v = pick_str(L, NULL, K_PORT)))
		b->port = atoi(v);
	else if (h.port)
		b->port = h.port;
	else
		b->port = pick_int(NULL, D, K_PORT, 22);

	b->hostname = xstrdup(h.hostname);
	/* ~ and %d are the password database's home and %u its name, as ssh
	 * takes them (not $HOME / $USER). */
	char *pw_home = xstrdup(conf_pw_home(rs->env));
	char *pw_name = xstrdup(conf_pw_name(rs->env));
	sshcfg_tokens t = {b->hostname, b->host, pw_name,         b->user,
			   pw_home,     b->port, rs->env->lookup, rs->env->lookup_ctx};

	size_t cap = 0;
	if ((v = pick_str(L, NULL, K_IDENTITY))) {
		paths_from_list(rs, &b->identities, &b->n_identities, v);
	} else if (h.n_identities) {
		for (size_t i = 0; i < h.n_identities && rc == 0; i++) {
			char *p = NULL;
			rc = expand_ssh_path(rs, b, &t, "IdentityFile", h.identities[i],
					     h.identities_at[i], &p);
			if (rc == 0)
				add_identity(b, &cap, p);
		}
	} else if ((v = pick_str(NULL, D, K_IDENTITY))) {
		paths_from_list(rs, &b->identities, &b->n_identities, v);
	} else {
		static const char *const dflt[] = {"id_ed25519", "id_ecdsa", "id_rsa"};
		for (size_t i = 0; i < 3; i++) {
			char *p = xasprintf("%s/.ssh/%s", rs->home, dflt[i]);
			if (access(p, F_OK) == 0)
				add_identity(b, &cap, p);
			else
				free(p);
		}
	}

	cap = 0;
	if (rc) {
	} else if ((v = pick_str(L, NULL, K_KNOWN_HOSTS))) {
		paths_from_list(rs, &b->known_hosts, &b->n_known_hosts, v);
	} else if (h.n_known_hosts) {
		for (size_t i = 0; i < h.n_known_hosts && rc == 0; i++) {
			char *p = NULL;
			rc = expand_ssh_path(rs, b, &t, "UserKnownHostsFile", h.known_hosts[i],
					     h.known_hosts_at, &p);
			if (rc == 0)
				add_path(&b->known_hosts, &b->n_known_hosts, &cap, p);
		}
	} else if ((v = pick_str(NULL, D, K_KNOWN_HOSTS))) {
		paths_from_list(rs, &b->known_hosts, &b->n_known_hosts, v);
	} else {
		/* ssh's own default list (ssh -G: userknownhostsfile); a key
		 * pinned only in the second file is still a pin. */
		add_path(&b->known_hosts, &b->n_known_hosts, &cap,
			 conf_expand_path("~/.ssh/known_hosts", rs->home, NULL));
		add_path(&b->known_hosts, &b->n_known_hosts, &cap,
			 conf_expand_path("~/.ssh/known_hosts2", rs->home, NULL));
	}
	/* GlobalKnownHostsFile is used as written: ssh expands nothing in it. */
	cap = 0;
	if (h.global_known_hosts_set) {
		for (size_t i = 0; i < h.n_global_known_hosts; i++)
			add_path(&b->global_known_hosts, &b->n_global_known_hosts, &cap,
				 xstrdup(h.global_known_hosts[i]));
	} else {
		add_path(&b->global_known_hosts, &b->n_global_known_hosts, &cap,
			 xstrdup("/etc/ssh/ssh_known_hosts"));
		add_path(&b->global_known_hosts, &b->n_global_known_hosts, &cap,
			 xstrdup("/etc/ssh/ssh_known_hosts2"));
	}

	/* ConnectTimeout 0 is "no timeout" to ssh; a fan-out never waits
	 * without a deadline, so boxgate keeps its default (config check
	 * says so). */
	b->ssh_connect_timeout_s = h.connect_timeout_s;
	if ((v = pick_str(L, D, K_CONNECT_TIMEOUT)))
		b->connect_timeout_s = atoi(v);
	else if (h.connect_timeout_s > 0)
		b->connect_timeout_s = h.connect_timeout_s;
	else
		b->connect_timeout_s = 10;

	if (h.unsupported)
		b->unsupported = xstrdup(h.unsupported);
	/* ProxyJump: the box's own `jump` (`none` for none), else ssh_config's. */
	const conf_kv *jk = L ? (L->kv[K_JUMP].value ? &L->kv[K_JUMP] : NULL) : NULL;
	if (jk) {
		if (strcasecmp(jk->value, "none") != 0) {
			b->jump = xstrdup(jk->value);
			b->jump_at = xasprintf("%s:%d", rs->file, jk->line);
		}
	} else if (h.jump) {
		b->jump = xstrdup(h.jump);
		b->jump_at = xstrdup(h.jump_at);
	}
	free(pw_home);
	free(pw_name);
	sshcfg_host_release(&h);
	return rc;
}

#define MAX_JUMP_HOPS 8

/* One hop of a box's ProxyJump, resolved through ssh_config as its own host
 * (ssh reaches it with `ssh -W`): its user and port from the hop as written,
 * everything else from ssh_config, then [defaults]. */
static int resolve_hop(resolver *rs, const conf_layer *D, const conf_box *b, const conf_jump_hop *h,
		       conf_box *hop)
{
	char port[16];
	conf_layer HL;
	memset(&HL, 0, sizeof(HL));
	HL.name = h->host;
	HL.kv[K_USER].value = h->user;
	if (h->port) {
		snprintf(port, sizeof(port), "%d", h->port);
		HL.kv[K_PORT].value = port;
	}
	memset(hop, 0, sizeof(*hop));
	hop->ssh_connect_timeout_s = -1;
	hop->name = xasprintf("jump %s", h->host);
	hop->transport = CONF_TRANSPORT_SSH;
	hop->host = xstrdup(h->host);
	hop->file = xstrdup(b->file);
	hop->line = b->line;
	const char *v = pick_str(NULL, D, K_HOST_KEY_CHECK);
	hop->host_key_check =
		v && strcmp(v, "accept-new") == 0 ? CONF_HKC_ACCEPT_NEW : CONF_HKC_STRICT;
	hop->keepalive_s = pick_int(NULL, D, K_KEEPALIVE, 5);
	hop->python = xstrdup("python3");
	return resolve_ssh(rs, &HL, D, hop);
}

/* The hops of `spec` (written at `where`) appended to b->hops; the first
 * hop's own ProxyJump goes before it, as ssh's `ssh -W` to it honours it.
 * A list ssh would not parse is a configuration error; a chain ssh could not
 * follow (a hop that jumps through itself, a loop) refuses the box by name. */
static int resolve_jumps(resolver *rs, const conf_layer *D, conf_box *b, const char *spec,
			 const char *where, int depth)
{
	char why[300];
	conf_jump_hop *hops = NULL;
	size_t n = 0;
	if (conf_jumpspec_parse(spec, &hops, &n, why, sizeof(why)) < 0)
		return bg_fail(rs->err, BG_ECONFIG, "box '%s': %s: ProxyJump '%s': %s", b->name,
			       where, spec, why);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0 && !b->unsupported; i++) {
		conf_box *hop = xcalloc(1, sizeof(*hop));
		rc = resolve_hop(rs, D, b, &hops[i], hop);
		if (rc == 0 && hop->unsupported)
			b->unsupported = xasprintf("%s on %s", hop->unsupported, hop->name);
		if (rc == 0 && !b->unsupported && i == 0 && hop->jump) {
			/* ssh.c: a host whose last jump is itself (same name, port and
			 * user) is "jumphost loop via HOST" */
			conf_jump_hop *own = NULL;
			size_t n_own = 0;
			if (conf_jumpspec_parse(hop->jump, &own, &n_own, why, sizeof(why)) < 0) {
				rc = bg_fail(rs->err, BG_ECONFIG,
					     "box '%s': %s: ProxyJump '%s': %s", b->name,
					     hop->jump_at, hop->jump, why);
			} else {
				const conf_jump_hop *last = &own[n_own - 1];
				int lport = last->port ? last->port : 22;
				const char *luser = last->user ? last->user : hop->user;
				if (strcmp(last->host, hop->hostname) == 0 && lport == hop->port &&
				    strcmp(luser, hop->user) == 0)
					b->unsupported =
						xasprintf("a ProxyJump loop via %s (%s) on %s",
							  last->host, hop->jump_at, hop->name);
				else if (depth + 1 >= MAX_JUMP_HOPS)
					b->unsupported = xasprintf(
						"a ProxyJump chain longer than %d hops (%s)",
						MAX_JUMP_HOPS, hop->jump_at);
				else
					rc = resolve_jumps(rs, D, b, hop->jump, hop->jump_at,
							   depth + 1);
			}
			conf_jumpspec_free(own, n_own);
		}
		if (rc == 0 && !b->unsupported && b->n_hops >= MAX_JUMP_HOPS)
			b->unsupported = xasprintf("a ProxyJump chain longer than %d hops (%s)",
						   MAX_JUMP_HOPS, where);
		if (rc) {
			conf_box_release_one(hop);
			free(hop);
			break;
		}
		b->hops = xrealloc(b->hops, (b->n_hops + 1) * sizeof(*b->hops));
		b->hops[b->n_hops++] = hop;
	}
	conf_jumpspec_free(hops, n);
	return rc;
}

/* validate_stub / validate_drop: gate arguments split on blanks only (a gate
 * argument may hold a comma: --num-workers 8,64); NULL when empty. */
static void split_words(const char *s, char ***v, size_t *n)
{
	size_t cap = 0;
	*v = NULL;
	*n = 0;
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		size_t len = strcspn(s, " \t");
		if (*n + 1 >= cap) {
			cap = cap ? cap * 2 : 4;
			*v = xrealloc(*v, cap * sizeof(**v));
		}
		(*v)[(*n)++] = xstrndup(s, len);
		(*v)[*n] = NULL;
		s += len;
	}
}

/* A validate key of the box or [defaults], else `builtin` when the box runs
 * the demo gate (builtin NULL: none). */
static void pick_validate(const conf_layer *L, const conf_layer *D, enum conf_key k,
			  const char *builtin, char ***v, size_t *n, int *line)
{
	const conf_kv *kv = pick(L, D, k);
	*line = kv ? kv->line : 0;
	split_words(kv ? kv->value : builtin ? builtin : "", v, n);
}

/* L is NULL for the built-in local box. */
static int resolve_box(resolver *rs, const conf_layer *L, conf_box *b)
{
	const conf_layer *D = &rs->raw->defaults;
	const char *v;
	memset(b, 0, sizeof(*b));
	b->ssh_connect_timeout_s = -1;
	b->name = xstrdup(L ? L->name : "local");
	b->builtin = L == NULL;
	b->file = xstrdup(L ? rs->file : "(built-in)");
	b->line = L ? L->line : 0;
	if ((v = pick_str(L, NULL, K_TRANSPORT)))
		b->transport = strcmp(v, "local") == 0 ? CONF_TRANSPORT_LOCAL : CONF_TRANSPORT_SSH;
	else
		b->transport =
			strcmp(b->name, "local") == 0 ? CONF_TRANSPORT_LOCAL : CONF_TRANSPORT_SSH;
	bool ssh = b->transport == CONF_TRANSPORT_SSH;

	if (!ssh && L && L->kv[K_HOST].value)
		return bg_fail(rs->err, BG_ECONFIG,
			       "%s:%d: box '%s' is local (transport = local) and takes no host",
			       rs->file, L->kv[K_HOST].line, b->name);
	if (ssh) {
		v = pick_str(L, D, K_HOST);
		if (!v)
			return bg_fail(rs->err, BG_ECONFIG,
				       "%s:%d: box '%s' has no host (an ssh box needs host = ...)",
				       rs->file, b->line, b->name);
		b->host = xstrdup(v);
	}

	v = pick_str(L, D, K_HOST_KEY_CHECK);
	b->host_key_check =
		v && strcmp(v, "accept-new") == 0 ? CONF_HKC_ACCEPT_NEW : CONF_HKC_STRICT;
	b->keepalive_s = pick_int(L, D, K_KEEPALIVE, 5);
	b->gate_timeout_s = pick_int(L, D, K_GATE_TIMEOUT, 420);
	b->heartbeat_timeout_ms = pick_ms(L, D, K_HEARTBEAT_TIMEOUT, 15000);
	b->kill_grace_ms = pick_ms(L, D, K_KILL_GRACE, 5000);
	b->control_persist_ms = pick_ms(L, D, K_CONTROL_PERSIST, 300000);
	b->lock_wait_s = pick_int(L, D, K_LOCK_WAIT, 0);

	if ((v = pick_str(L, D, K_REPO)))
		b->repo = ssh ? xstrdup(v) : conf_expand_path(v, rs->home, rs->c->root);
	else if (!ssh)
		b->repo = xstrdup(rs->c->root);
	if ((v = pick_str(L, D, K_GATE)))
		b->gate = xstrdup(v);
	b->python = xstrdup((v = pick_str(L, D, K_PYTHON)) ? v : "python3");
	if ((v = pick_str(L, D, K_GPUS)))
		b->gpus = xstrdup(v);
	if ((v = pick_str(L, D, K_REQUIRE_GPU)))
		b->gpu_policy = truthy(v) ? CONF_GPU_REQUIRED : CONF_GPU_OPTIONAL;
	else
		b->gpu_policy = ssh ? CONF_GPU_REQUIRED : CONF_GPU_OPTIONAL;
	b->no_baseline = (v = pick_str(L, D, K_NO_BASELINE)) && truthy(v);
	const conf_kv *ak = pick(L, D, K_ALLOW);
	if (ak) {
		conf_split_list(ak->value, &b->allow, &b->n_allow);
		b->allow_line = ak->line;
	} else if (!ssh && !b->gate) {
		/* A local box without its own gate runs the demo gate: its flags. */
		conf_split_list(
			"--kind --shape --num-workers --configs --variant --iters --warmup "
			"--baseline --dtype --bar --slough-tol --seed --l2 --timer --rows --split "
			"--cta-warps --list-shapes --probe",
			&b->allow, &b->n_allow);
	}
	if ((v = pick_str(L, D, K_NUM_WORKERS_ENV)))
		b->num_workers_env = xstrdup(v);
	if ((v = pick_str(L, D, K_OVERLAY_ENV)))
		b->overlay_env = xstrdup(v);
	const conf_kv *kp = pick(L, D, K_KERNEL_PATHS);
	if (kp) {
		split_words(kp->value, &b->kernel_paths, &b->n_kernel_paths);
		for (size_t i = 0; i < b->n_kernel_paths; i++) {
			const char *w = b->kernel_paths[i], *colon = strchr(w, ':');
			if (!colon || colon == w || !colon[1] || colon[1] == '/' ||
			    !conf_rel_path_ok(colon + 1))
				return bg_fail(
					rs->err, BG_ECONFIG,
					"%s:%d: kernel_paths: '%s' is not KIND:PATH with PATH "
					"relative to the repo and without '..'",
					rs->file, kp->line, w);
		}
	}
	const conf_kv *sk = L ? (L->kv[K_SCHEDULER].value ? &L->kv[K_SCHEDULER] : NULL) : NULL;
	if (sk && strcmp(sk->value, "slurm") != 0 && strcmp(sk->value, "none") != 0)
		return bg_fail(rs->err, BG_ECONFIG,
			       "%s:%d: scheduler must be slurm or none, got '%s'", rs->file,
			       sk->line, sk->value);
	b->slurm = sk && strcmp(sk->value, "slurm") == 0;
	if (b->slurm) {
		b->gres = xstrdup((v = pick_str(L, D, K_GRES)) ? v : "gpu:1");
		if ((v = pick_str(L, D, K_PARTITION)))
			b->partition = xstrdup(v);
		if ((v = pick_str(L, D, K_SRUN_ARGS)))
			split_words(v, &b->srun_args, &b->n_srun_args);
		if ((v = pick_str(L, D, K_SLURM_CONF)))
			b->slurm_conf = xstrdup(v);
		b->max_jobs = pick_int(L, NULL, K_MAX_JOBS, 1);
		if (b->gpus && !(L && L->kv[K_GPUS].value)) {
			free(b->gpus); /* [defaults] gpus speaks of other boxes */
			b->gpus = NULL;
		}
		if (b->gpus)
			return bg_fail(
				rs->err, BG_ECONFIG,
				"%s:%d: box '%s' has scheduler = slurm: Slurm picks its GPUs "
				"(gres), drop gpus",
				rs->file, b->line, b->name);
	} else {
		static const struct {
			enum conf_key k;
			const char *name;
		} slurm_only[] = {{K_PARTITION, "partition"},
				  {K_GRES, "gres"},
				  {K_SRUN_ARGS, "srun_args"},
				  {K_SLURM_CONF, "slurm_conf"},
				  {K_MAX_JOBS, "max_jobs"}};
		for (size_t i = 0; L && i < sizeof(slurm_only) / sizeof(slurm_only[0]); i++)
			if (L->kv[slurm_only[i].k].value)
				return bg_fail(rs->err, BG_ECONFIG,
					       "%s:%d: %s needs scheduler = slurm in box '%s'",
					       rs->file, L->kv[slurm_only[i].k].line,
					       slurm_only[i].name, b->name);
	}
	bool demo = !ssh && !b->gate;
	pick_validate(L, D, K_VALIDATE_STUB, demo ? "--variant stub" : NULL, &b->validate_stub,
		      &b->n_validate_stub, &b->validate_stub_line);
	pick_validate(L, D, K_VALIDATE_DROP, demo ? "--variant halfk" : NULL, &b->validate_drop,
		      &b->n_validate_drop, &b->validate_drop_line);

	/* env rules: the box's own, plus every [defaults] rule for a flag the
	 * box does not translate itself. */
	size_t cap = 0;
	for (size_t i = 0; i < D->n_env; i++) {
		bool shadowed = false;
		for (size_t j = 0; L && j < L->n_env; j++)
			if (strcmp(L->env[j].flag, D->env[i].flag) == 0)
				shadowed = true;
		if (!shadowed)
			copy_env(b, &D->env[i], &cap);
	}
	for (size_t j = 0; L && j < L->n_env; j++)
		copy_env(b, &L->env[j], &cap);

	if (!ssh)
		return 0;
	int rc = resolve_ssh(rs, L, D, b);
	if (rc == 0 && b->jump)
		rc = resolve_jumps(rs, D, b, b->jump, b->jump_at, 0);
	return rc;
}

static conf_box *find_box(conf *c, const char *name)
{
	for (size_t i = 0; i < c->n_boxes; i++)
		if (strcmp(c->boxes[i].name, name) == 0)
			return &c->boxes[i];
	return NULL;
}

static int unknown_box(resolver *rs, const conf_raw_pool *rp, const char *name)
{
	const char **cands = xcalloc(rs->c->n_boxes, sizeof(*cands));
	for (size_t i = 0; i < rs->c->n_boxes; i++)
		cands[i] = rs->c->boxes[i].name;
	const char *s = conf_suggest(name, cands, rs->c->n_boxes);
	int rc;
	if (s)
		rc = bg_fail(rs->err, BG_ECONFIG,
			     "%s:%d: pool '%s': unknown box '%s' (did you mean '%s'?)", rs->file,
			     rp->slots_line, rp->name, name, s);
	else
		rc = bg_fail(rs->err, BG_ECONFIG, "%s:%d: pool '%s': unknown box '%s'", rs->file,
			     rp->slots_line, rp->name, name);
	free(cands);
	return rc;
}

static bool all_digits_range(const char *s)
{
	bool digit = false;
	for (; *s; s++) {
		if (isdigit((unsigned char)*s))
			digit = true;
		else if (*s != '-')
			return false;
	}
	return digit;
}

/* Which GPUs of which box a pool already holds, to refuse a slot listed
 * twice. `whole` marks a bare box name (all its GPUs). */
typedef struct held {
	bool *gpus; /* [n_boxes][CONF_MAX_GPUS] */
	bool *whole;
	bool *any;
} held;

static int add_slot(resolver *rs, const conf_raw_pool *rp, conf_pool *p, size_t *cap, held *h,
		    const char *name, const char *gpus)
{
	conf_box *b = find_box(rs->c, name);
	if (!b)
		return unknown_box(rs, rp, name);
	size_t bi = (size_t)(b - rs->c->boxes);
	bool *mine = h->gpus + bi * CONF_MAX_GPUS;
	if (gpus) {
		bool *set = xcalloc(CONF_MAX_GPUS, sizeof(*set));
		bool *box_set = NULL;
		const char *why = "empty";
		int rc = 0;
		if (!bg_gpus_parse(gpus, set, &why)) {
			rc = bg_fail(rs->err, BG_ECONFIG,
				     "%s:%d: pool '%s': bad GPU list '%s' for box '%s': %s",
				     rs->file, rp->slots_line, rp->name, gpus, name, why);
			goto done;
		}
		if (b->gpus) {
			box_set = xcalloc(CONF_MAX_GPUS, sizeof(*box_set));
			bg_gpus_parse(b->gpus, box_set, &why);
		}
		for (int g = 0; g < CONF_MAX_GPUS && rc == 0; g++) {
			if (!set[g])
				continue;
			if (box_set && !box_set[g])
				rc = bg_fail(
					rs->err, BG_ECONFIG,
					"%s:%d: pool '%s': GPU %d is not among box '%s' gpus (%s)",
					rs->file, rp->slots_line, rp->name, g, name, b->gpus);
			else if (mine[g] || h->whole[bi])
				rc = bg_fail(rs->err, BG_ECONFIG,
					     "%s:%d: pool '%s': GPU %d of box '%s' is listed twice",
					     rs->file, rp->slots_line, rp->name, g, name);
			mine[g] = true;
		}
	done:
		free(set);
		free(box_set);
		if (rc)
			return rc;
	} else if (h->any[bi]) {
		return bg_fail(rs->err, BG_ECONFIG, "%s:%d: pool '%s': box '%s' is listed twice",
			       rs->file, rp->slots_line, rp->name, name);
	} else {
		h->whole[bi] = true;
	}
	h->any[bi] = true;
	p->slots = xgrow(p->slots, cap, p->n_slots + 1, sizeof(*p->slots));
	conf_slot *s = &p->slots[p->n_slots++];
	s->box = xstrdup(name);
	s->gpus = gpus ? xstrdup(gpus) : (b->gpus ? xstrdup(b->gpus) : NULL);
	return 0;
}

static void split_slots(const char *s, char ***v, size_t *n)
{
	/* Like nodeset_split(), but blanks separate too. */
	size_t cap = 0;
	const char *p = s;
	while (*p) {
		while (*p && (*p == ',' || isspace((unsigned char)*p)))
			p++;
		const char *b = p;
		int depth = 0;
		while (*p && !(depth == 0 && (*p == ',' || isspace((unsigned char)*p)))) {
			if (*p == '[')
				depth++;
			else if (*p == ']' && depth > 0)
				depth--;
			p++;
		}
		if (p > b) {
			*v = xgrow(*v, &cap, *n + 1, sizeof(**v));
			(*v)[(*n)++] = xstrndup(b, (size_t)(p - b));
		}
	}
}

/* disabled = BOX:GPU ...: each must be one slot of the pool; disabled_why says why. */
static int resolve_disabled(resolver *rs, const conf_raw_pool *rp, conf_pool *p)
{
	if (!rp->disabled && !rp->disabled_why)
		return 0;
	if (!rp->disabled || !rp->disabled_why)
		return bg_fail(
			rs->err, BG_ECONFIG,
			"%s:%d: pool '%s': disabled and disabled_why go together (the reason "
			"everyone refused reads)",
			rs->file, rp->disabled ? rp->disabled_line : rp->disabled_why_line,
			rp->name);
	split_words(rp->disabled, &p->disabled, &p->n_disabled);
	for (size_t i = 0; i < p->n_disabled; i++) {
		char *w = p->disabled[i], *colon = strchr(w, ':');
		size_t blen = colon ? (size_t)(colon - w) : strlen(w);
		bool found = false;
		for (size_t j = 0; j < p->n_slots && !found; j++) {
			const conf_slot *sl = &p->slots[j];
			if (strlen(sl->box) != blen || strncmp(sl->box, w, blen) != 0)
				continue;
			const conf_box *b = conf_find_box(rs->c, sl->box);
			const char *gpus = sl->gpus ? sl->gpus : b ? b->gpus : NULL;
			bool set[CONF_MAX_GPUS];
			const char *why;
			if (!colon)
				found = !gpus;
			else if (gpus && colon[1] &&
				 strspn(colon + 1, "0123456789") == strlen(colon + 1) &&
				 bg_gpus_parse(gpus, set, &why) && atoi(colon + 1) < CONF_MAX_GPUS)
				found = set[atoi(colon + 1)];
		}
		if (!found)
			return bg_fail(rs->err, BG_ECONFIG,
				       "%s:%d: pool '%s': disabled '%s' is not one of its slots "
				       "(BOX:GPU, or BOX for a CPU slot)",
				       rs->file, rp->disabled_line, rp->name, w);
	}
	p->disabled_why = xstrdup(rp->disabled_why);
	return 0;
}

static int resolve_pool(resolver *rs, const conf_raw_pool *rp, conf_pool *p)
{
	int rc = 0;
	char **tok = NULL;
	size_t n_tok = 0, cap = 0;
	held h;
	h.gpus = xcalloc(rs->c->n_boxes * CONF_MAX_GPUS, sizeof(bool));
	h.whole = xcalloc(rs->c->n_boxes, sizeof(bool));
	h.any = xcalloc(rs->c->n_boxes, sizeof(bool));
	memset(p, 0, sizeof(*p));
	p->name = xstrdup(rp->name);
	p->file = xstrdup(rs->file);
	p->line = rp->line;
	if (!rp->slots) {
		rc = bg_fail(rs->err, BG_ECONFIG, "%s:%d: pool '%s' has no slots = BOX:GPUS, ...",
			     rs->file, rp->line, rp->name);
		goto out;
	}
	split_slots(rp->slots, &tok, &n_tok);
	/* "local:0,2,5" splits at its commas: join the bare GPU pieces back. */
	for (size_t i = 0; i < n_tok && rc == 0; i++) {
		strbuf gpus = STRBUF_INIT;
		char *name = tok[i];
		char *colon = strchr(name, ':');
		if (colon) {
			*colon = '\0';
			strbuf_addstr(&gpus, colon + 1);
			while (i + 1 < n_tok && all_digits_range(tok[i + 1])) {
				strbuf_addch(&gpus, ',');
				strbuf_addstr(&gpus, tok[++i]);
			}
		}
		char **names = NULL;
		size_t n_names = 0;
		bg_err e2;
		if (name[0] == '\0') {
			rc = bg_fail(rs->err, BG_ECONFIG,
				     "%s:%d: pool '%s': a slot lacks its box name", rs->file,
				     rp->slots_line, rp->name);
		} else if (nodeset_expand(name, &names, &n_names, &e2) != 0) {
			rc = bg_fail(rs->err, BG_ECONFIG, "%s:%d: pool '%s': %s", rs->file,
				     rp->slots_line, rp->name, e2.msg);
		}
		for (size_t j = 0; j < n_names && rc == 0; j++)
			rc = add_slot(rs, rp, p, &cap, &h, names[j],
				      colon ? strbuf_str(&gpus) : NULL);
		nodeset_free(names, n_names);
		strbuf_release(&gpus);
	}
	if (rc == 0 && p->n_slots == 0)
		rc = bg_fail(rs->err, BG_ECONFIG, "%s:%d: pool '%s' has no slots", rs->file,
			     rp->slots_line, rp->name);
	if (rc == 0)
		rc = resolve_disabled(rs, rp, p);
out:
	conf_strv_free(tok, n_tok);
	free(h.gpus);
	free(h.whole);
	free(h.any);
	return rc;
}

static void add_verify(conf *c, size_t *cap, const char *pattern, const char *command,
		       const char *file, int line)
{
	c->verify = xgrow(c->verify, cap, c->n_verify + 1, sizeof(*c->verify));
	conf_verify *v = &c->verify[c->n_verify++];
	v->pattern = xstrdup(pattern);
	v->command = xstrdup(command);
	v->file = xstrdup(file);
	v->line = line;
}

int conf_resolve(conf *c, conf_raw *raw, const conf_env *env, bg_err *err)
{
	static const conf_env none = {0};
	int rc = 0;
	if (!env)
		env = &none;
	resolver rs = {c,   raw, raw->file ? raw->file : "(built-in)", conf_home(env), NULL,
		       err, env};
	char *home = xstrdup(rs.home);
	rs.home = home;
	rs.local_user = xstrdup(conf_local_user(env));
	const char *v = raw->defaults.kv[K_SSH_CONFIG].value;
	c->ssh_config = v ? conf_expand_path(v, home, c->root) : xasprintf("%s/.ssh/config", home);
	v = raw->defaults.kv[K_RESULTS].value;
	c->results = v ? conf_expand_path(v, home, c->root) : NULL;
	v = raw->defaults.kv[K_MAX_CV].value;
	if (!v || !conf_parse_percent(v, &c->max_cv))
		c->max_cv = -1;

	bool file_local = false;
	for (size_t i = 0; i < raw->n_boxes; i++)
		if (strcmp(raw->boxes[i].name, "local") == 0)
			file_local = true;
	size_t n = raw->n_boxes + (file_local ? 0 : 1);
	c->boxes = xcalloc(n, sizeof(*c->boxes));
	if (!file_local) {
		rc = resolve_box(&rs, NULL, &c->boxes[c->n_boxes++]);
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < raw->n_boxes; i++) {
		rc = resolve_box(&rs, &raw->boxes[i], &c->boxes[c->n_boxes++]);
		if (rc)
			goto out;
	}

	c->pools = xcalloc(raw->n_pools ? raw->n_pools : 1, sizeof(*c->pools));
	for (size_t i = 0; i < raw->n_pools; i++) {
		rc = resolve_pool(&rs, &raw->pools[i], &c->pools[c->n_pools++]);
		if (rc)
			goto out;
	}

	size_t cap = 0;
	for (size_t i = 0; i < raw->n_verify; i++)
		add_verify(c, &cap, raw->verify[i].pattern, raw->verify[i].command,
			   raw->verify[i].file, raw->verify[i].line);
	add_verify(c, &cap, ".py",
		   "{python} -c \"import ast,sys; ast.parse(open(sys.argv[1],'rb').read(), "
		   "sys.argv[1])\" {}",
		   "(built-in)", 0);
	add_verify(c, &cap, ".sh", "bash -n {}", "(built-in)", 0);
	add_verify(c, &cap, ".json",
		   "{python} -c \"import json,sys; json.load(open(sys.argv[1],'rb'))\" {}",
		   "(built-in)", 0);
	c->agent_socket = env->agent_socket ? xstrdup(env->agent_socket) : NULL;
	for (size_t i = 0; i < c->n_boxes; i++)
		conf_box_bind(&c->boxes[i], c->agent_socket);
out:
	free(home);
	free(rs.local_user);
	return rc;
}
