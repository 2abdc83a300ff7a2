/* A gate invocation for one box from a command's options and the gate's
 * arguments (measure/gate_args.h). */
#include "measure/gate_args.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "gate/client/result.h"

/* MPK_GATE_TIMEOUT_S passed through the shim sets the agent's watchdog too. It
 * is parsed as strictly as --timeout, a bad value is refused naming the flag
 * that produced it, and the gate gets the number's canonical form (`05` would
 * be octal to a bash gate, and 08 no number at all). */
static int timeout_from_shim(const char *cmd, shim_result *r, int *out, bg_err *err)
{
	static const char key[] = "MPK_GATE_TIMEOUT_S=";
	*out = 0;
	for (size_t i = 0; i < r->n_env; i++) {
		if (strncmp(r->env[i], key, sizeof(key) - 1) != 0)
			continue;
		const char *flag = "MPK_GATE_TIMEOUT_S";
		for (size_t w = 0; w < r->n_words; w++)
			if (r->words[w].route == SHIM_ENV && r->words[w].env &&
			    strcmp(r->words[w].env, r->env[i]) == 0)
				flag = r->words[w].rule ? r->words[w].rule->flag : r->words[w].arg;
		const char *v = r->env[i] + sizeof(key) - 1;
		long n;
		if (!bg_parse_seconds(v, 1, GATE_SECONDS_MAX, &n))
			return bg_fail(err, BG_EUSAGE,
				       "%s: %s wants whole seconds from %d to %d, got '%s'", cmd,
				       flag, 1, GATE_SECONDS_MAX, v);
		*out = (int)n;
		char *canon = xasprintf("%s%d", key, *out);
		for (size_t w = 0; w < r->n_words; w++)
			if (r->words[w].env && strcmp(r->words[w].env, r->env[i]) == 0) {
				free(r->words[w].env);
				r->words[w].env = xstrdup(canon);
			}
		free(r->env[i]);
		r->env[i] = canon;
	}
	return 0;
}

/* --bar: a plain decimal ratio in (0, GATE_BAR_MAX]; no sign, blank, exponent, hex, inf or nan. */
static bool parse_bar(const char *v, double *out)
{
	size_t n = strlen(v), digits = strspn(v, "0123456789");
	if (!n || strspn(v, "0123456789.") != n || strchr(v, '.') != strrchr(v, '.') || !digits ||
	    (v[digits] == '.' && digits == 0))
		return false;
	double b = strtod(v, NULL);
	if (!isfinite(b) || b <= 0 || b > GATE_BAR_MAX)
		return false;
	*out = b;
	return true;
}

/* The first GPU that two items of the list `s` (already parsed) name, or -1. */
static int repeated_gpu(const char *s)
{
	bool seen[BG_MAX_GPUS] = {false}, item[BG_MAX_GPUS];
	const char *why = NULL;
	for (const char *p = s; *p;) {
		size_t len = strcspn(p, ",");
		char *one = xstrndup(p, len);
		bool parsed = bg_gpus_parse(one, item, &why);
		free(one);
		for (int g = 0; parsed && g < BG_MAX_GPUS; g++) {
			if (item[g] && seen[g])
				return g;
			seen[g] = seen[g] || item[g];
		}
		p += len + (p[len] == ',');
	}
	return -1;
}

/* --gpu must name GPUs of the box (its `gpus`), each once, without blanks (as
 * --timeout); normalised to an ascending comma list of canonical numbers for
 * the agent. A box without `gpus` takes --gpu only when it is the local
 * machine (the agent then checks the GPU exists). */
static int check_gpus(const char *cmd, gate_args *ga, bg_err *err)
{
	bool want[BG_MAX_GPUS], have[BG_MAX_GPUS];
	const char *why = NULL;
	const conf_box *b = ga->box;
	if (strpbrk(ga->gpu_opt, " \t\r\n"))
		why = "blank in the list";
	else if (!bg_gpus_parse(ga->gpu_opt, want, &why) && !why)
		why = "empty";
	if (why)
		return bg_fail(err, BG_EUSAGE,
			       "%s: --gpu wants GPU indices such as 3, 0,1 or 2-3, got '%s': %s",
			       cmd, ga->gpu_opt, why);
	int twice = repeated_gpu(ga->gpu_opt);
	if (twice >= 0)
		return bg_fail(err, BG_EUSAGE, "%s: --gpu %s: GPU %d is named twice", cmd,
			       ga->gpu_opt, twice);
	if (b->gpus) {
		if (!bg_gpus_parse(b->gpus, have, &why))
			return bg_fail(err, BG_EUSAGE, "%s: box %s: bad gpus '%s': %s", cmd,
				       b->name, b->gpus, why);
		for (int g = 0; g < BG_MAX_GPUS; g++)
			if (want[g] && !have[g])
				return bg_fail(err, BG_EUSAGE,
					       "%s: --gpu %s: GPU %d is not one of box %s's gpus "
					       "(%s)",
					       cmd, ga->gpu_opt, g, b->name, b->gpus);
	} else if (b->transport != CONF_TRANSPORT_LOCAL) {
		return bg_fail(err, BG_EUSAGE,
			       "%s: --gpu %s: box %s lists no gpus (set gpus = ... under [box "
			       "%s] in %s)",
			       cmd, ga->gpu_opt, b->name, b->name, b->file);
	}
	strbuf s = STRBUF_INIT;
	for (int g = 0; g < BG_MAX_GPUS; g++)
		if (want[g])
			strbuf_addf(&s, "%s%d", s.len ? "," : "", g);
	ga->gpus = strbuf_detach(&s);
	return 0;
}

/* err's sentence kept, its code made a refusal. */
static int as_usage(bg_err *err)
{
	err->code = BG_EUSAGE;
	return BG_EUSAGE;
}

/* The box BOX names; a refusal when it names none or several. */
static int find_box(const conf *cf, const char *cmd, const char *name, const conf_box **out,
		    bg_err *err)
{
	*out = conf_find_box(cf, name);
	if (*out)
		return 0;
	const conf_box **sel = NULL;
	size_t n = 0;
	if (conf_select(cf, name, false, &sel, &n, err) < 0)
		return as_usage(err);
	free(sel);
	return bg_fail(err, BG_EUSAGE, "%s: '%s' names several boxes; run takes one", cmd, name);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void agent_copy(gate_agent *to, const gate_agent *from)
{
	*to = *from;
	to->binary = dup_or_null(from->binary);
	to->source = dup_or_null(from->source);
	to->libexec = dup_or_null(from->libexec);
}

/* "TAG USER@HOST:PID" (no TAG without --holder): who holds the slot. */
static char *holder_tag(const char *holder)
{
	char host[256] = "?";
	gethostname(host, sizeof(host) - 1);
	const char *user = getenv("USER");
	if (holder)
		return xasprintf("%s %s@%s:%d", holder, user ? user : "boxgate", host,
				 (int)getpid());
	return xasprintf("%s@%s:%d", user ? user : "boxgate", host, (int)getpid());
}

int gate_args_build(const conf *cf, const gate_args_in *in, char *const *argv, size_t argc,
		    gate_args *ga, bg_err *err)
{
	const char *cmd = in->cmd;
	int rc;

	memset(ga, 0, sizeof(*ga));
	if (in->bar && !parse_bar(in->bar, &ga->bar))
		return bg_fail(err, BG_EUSAGE,
			       "%s: --bar wants a positive ratio such as 1.2 (at most %g), got "
			       "'%s'",
			       cmd, GATE_BAR_MAX, in->bar);
	ga->gpu_opt = in->gpu;
	ga->timeout_s = in->timeout_s;
	ga->json = in->json;
	if ((rc = find_box(cf, cmd, in->box, &ga->box, err)) < 0)
		return rc;
	if (shim_translate(&ga->box->rules, (const char *const *)argv, argc, &ga->shim, err) < 0)
		return as_usage(err);
	if (!ga->box->gate && ga->box->transport != CONF_TRANSPORT_LOCAL)
		return bg_fail(err, BG_EUSAGE,
			       "%s: box %s has no gate (set gate = PATH under [box %s] in %s)", cmd,
			       ga->box->name, ga->box->name, ga->box->file);
	if (ga->gpu_opt && (rc = check_gpus(cmd, ga, err)) < 0)
		return rc;
	int shim_timeout;
	if ((rc = timeout_from_shim(cmd, &ga->shim, &shim_timeout, err)) < 0)
		return rc;
	if (!ga->timeout_s)
		ga->timeout_s = shim_timeout;
	if (!ga->timeout_s)
		ga->timeout_s = ga->box->gate_timeout_s > 0 ? ga->box->gate_timeout_s : 420;
	if (in->agent)
		agent_copy(&ga->agent, in->agent);
	else if ((rc = gate_agent_locate(&ga->agent, err)) < 0)
		return rc == BG_EUSAGE ? (err->code = BG_EIO) : rc;
	ga->entry = ga->box->gate ? xstrdup(ga->box->gate)
				  : xasprintf("%s/boxgate-demo-gate", ga->agent.libexec);
	ga->tag = holder_tag(in->holder);
	ga->spec = (gate_spec){
		.box = {.repo = ga->box->repo,
			.python = ga->box->python,
			.slurm = ga->box->target.slurm},
		.entry = ga->entry,
		.gpus = ga->gpus,
		.shim = &ga->shim,
		.timeout_s = ga->timeout_s,
		.grace_ms = ga->box->kill_grace_ms >= 0 ? ga->box->kill_grace_ms : 5000,
		.heartbeat_ms =
			ga->box->heartbeat_timeout_ms > 0 ? ga->box->heartbeat_timeout_ms : 15000,
		.lock_wait_s = ga->box->lock_wait_s,
		.require_gpu = ga->box->gpu_policy == CONF_GPU_REQUIRED,
		.tag = ga->tag,
	};
	return 0;
}

void gate_args_release(gate_args *ga)
{
	shim_result_release(&ga->shim);
	gate_agent_release(&ga->agent);
	free(ga->entry);
	free(ga->tag);
	free(ga->gpus);
	free(ga->agent_path);
}

int gate_args_baseline(const conf *cf, const gate_args_in *in, const gate_args *cand,
		       char *const *argv, size_t argc, char ***bargv, size_t *bargc, gate_args *b,
		       char **cmdline, bg_err *err)
{
	char **v = xcalloc(argc + 2, sizeof(*v));
	if (argc)
		memcpy(v, argv, argc * sizeof(*v));
	v[argc] = (char *)"--baseline";
	*bargv = v;
	*bargc = argc + 1;
	*cmdline = NULL;
	int rc = gate_args_build(cf, in, v, argc + 1, b, err);
	if (rc < 0)
		return rc;
	b->agent_path = dup_or_null(cand->agent_path);
	if (!b->spec.gpus && cand->gpus)
		b->spec.gpus = b->gpus = xstrdup(cand->gpus);
	b->spec.agent = b->agent_path;
	b->spec.lock_wait_s = cand->spec.lock_wait_s;
	*cmdline = gate_command_line(&b->spec);
	return 0;
}

char *gate_args_first_gpu(const conf_box *b)
{
	size_t n = b->gpus ? strspn(b->gpus, "0123456789") : 0;
	return n ? xstrndup(b->gpus, n) : NULL;
}

char *gate_args_default_gpus(remote_conn *c, const gate_args *ga)
{
	const conf_box *b = ga->box;
	if (b->gpus)
		return gate_args_first_gpu(b);
	if (b->transport != CONF_TRANSPORT_LOCAL)
		return NULL;
	/* The local box: GPU 0 when this machine has one, else a CPU slot. */
	char *out = NULL, *cmd = xasprintf("%s gpus", ga->agent.binary);
	bg_err err = {0};
	char *gpus = NULL;
	if (remote_capture(c, cmd, 65536, 30000, &out, NULL, NULL, &err) == 0 &&
	    strncmp(out, "gpu 0 ", 6) == 0)
		gpus = xstrdup("0");
	free(out);
	free(cmd);
	return gpus;
}

int gate_sweep_read(const char *cmd, char *const *argv, size_t argc, gate_sweep *sw, bg_err *err)
{
	static const char flag[] = "--num-workers";
	const char *val = NULL;
	memset(sw, 0, sizeof(*sw));
	for (size_t i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, flag, sizeof(flag) - 1) != 0)
			continue;
		if (a[sizeof(flag) - 1] == '=') {
			val = a + sizeof(flag);
			sw->at = i;
			sw->equals = true;
		} else if (a[sizeof(flag) - 1] == '\0' && i + 1 < argc) {
			val = argv[++i];
			sw->at = i;
			sw->equals = false;
		}
	}
	if (!val)
		return 0;
	for (const char *p = val;;) {
		size_t len = strcspn(p, ","), digits = strspn(p, "0123456789");
		long x = digits == len && len && len <= 6 ? strtol(p, NULL, 10) : 0;
		if (x < 1 || x > GATE_WORKERS_MAX) {
			memset(sw, 0, sizeof(*sw));
			return bg_fail(err, BG_EUSAGE,
				       "%s: --num-workers %s: '%.*s' is not a worker count (whole "
				       "numbers 1-%d, comma-separated for a sweep)",
				       cmd, val, (int)len, p, GATE_WORKERS_MAX);
		}
		for (size_t k = 0; k < sw->n; k++)
			if (sw->counts[k] == (int)x) {
				memset(sw, 0, sizeof(*sw));
				return bg_fail(err, BG_EUSAGE,
					       "%s: --num-workers %s: %ld is given twice", cmd, val,
					       x);
			}
		if (sw->n == GATE_SWEEP_MAX) {
			memset(sw, 0, sizeof(*sw));
			return bg_fail(err, BG_EUSAGE,
				       "%s: --num-workers %s: at most %d counts in one sweep", cmd,
				       val, GATE_SWEEP_MAX);
		}
		sw->counts[sw->n++] = (int)x;
		if (!p[len])
			break;
		p += len + 1;
	}
	return 0;
}

char **gate_sweep_words(char *const *argv, size_t argc, const gate_sweep *sw, size_t i, char **word)
{
	char **v = xcalloc(argc + 1, sizeof(*v));
	if (argc)
		memcpy(v, argv, argc * sizeof(*v));
	*word = sw->equals ? xasprintf("--num-workers=%d", sw->counts[i])
			   : xasprintf("%d", sw->counts[i]);
	v[sw->at] = *word;
	return v;
}
