/* The agent's command line: seconds, GPU lists and the options of run. */
#include "gate/agent/options.h"
#include "gate/agent/slots.h"

/* Seconds ("2", "0.5") to milliseconds; -1 when not a non-negative number.
 * Not bg_parse_seconds: the agent takes fractions (--lock-wait 0.3). */
long long parse_secs(const char *s)
{
	char *end;
	if (!*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 1e8)
		return -1;
	return (long long)(v * 1000.0 + 0.5);
}

/* A GPU list through base's one parser: ascending, without duplicates. ""
 * is no slot; -1 on a malformed list. */
int parse_gpus(const char *s, int **out, int *count)
{
	static bool set[BG_MAX_GPUS];
	const char *why;
	*out = NULL;
	*count = 0;
	if (!*s)
		return 0;
	if (!bg_gpus_parse(s, set, &why))
		return -1;
	for (int g = 0; g < BG_MAX_GPUS; g++)
		if (set[g]) {
			*out = xrealloc(*out, sizeof **out * (size_t)(*count + 1));
			(*out)[(*count)++] = g;
		}
	return 0;
}

const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != 0)
		return NULL;
	if (*i + 1 >= argc)
		usage_fail("%s needs a value", name);
	return argv[++*i];
}

void fmt_secs(char *out, size_t n, long long ms)
{
	if (ms % 1000 == 0)
		snprintf(out, n, "%lld", ms / 1000);
	else
		snprintf(out, n, "%.3f", (double)ms / 1000.0);
}

void parse_run(struct run *r, int argc, char **argv)
{
	int gpus_given = 0, require_given = 0;
	const char *t = getenv("MPK_GATE_TIMEOUT_S");
	r->timeout_ms = 420000;
	if (t && *t) {
		r->timeout_ms = parse_secs(t);
		if (r->timeout_ms < 0)
			usage_fail("bad MPK_GATE_TIMEOUT_S '%s'", t);
	}
	r->grace_ms = 5000;
	r->gpulist = xstrdup("");
	int i;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *v;
		long long *secs = NULL;
		if (!strcmp(a, "--"))
			break;
		if ((v = opt_value(argc, argv, &i, AGENT_OPT_GPUS))) {
			free(r->gpus);
			if (parse_gpus(v, &r->gpus, &r->ngpus) < 0)
				usage_fail("bad --gpus '%s' (want e.g. 0, 0,1 or 2-3)", v);
			gpus_given = 1;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_LOCK_DIR))) {
			if (!*v)
				usage_fail("empty --lock-dir");
			r->lock_dir = v;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_TAG))) {
			r->tag = v;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_LOCK_WAIT))) {
			secs = &r->lock_wait_ms;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_TIMEOUT))) {
			secs = &r->timeout_ms;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_GRACE))) {
			secs = &r->grace_ms;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_HEARTBEAT))) {
			secs = &r->hb_ms;
		} else if (!strcmp(a, AGENT_OPT_GPUS_FROM_ENV)) {
			const char *names[] = {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS",
					       "SLURM_JOB_GPUS"};
			const char *from = NULL;
			for (size_t k = 0; k < sizeof names / sizeof names[0] && !from; k++) {
				const char *e = getenv(names[k]);
				if (e && *e)
					from = names[k];
			}
			if (!from)
				usage_fail("%s: the scheduler gave no GPU (CUDA_VISIBLE_DEVICES, "
					   "SLURM_STEP_GPUS and SLURM_JOB_GPUS are unset)",
					   a);
			free(r->gpus);
			if (parse_gpus(getenv(from), &r->gpus, &r->ngpus) < 0 || !r->ngpus)
				usage_fail("%s: %s='%s' is not a list of GPU indices", a, from,
					   getenv(from));
			gpus_given = 1;
		} else if (!strcmp(a, AGENT_OPT_NO_STDIN)) {
			r->no_stdin = 1;
		} else if (!strcmp(a, AGENT_OPT_NONCE_STDIN)) {
			r->nonce_stdin = 1;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_REQUIRE_GPU))) {
			if (!strcmp(v, "yes"))
				r->require_gpu = 1;
			else if (!strcmp(v, "no"))
				r->require_gpu = 0;
			else
				usage_fail("--require-gpu wants yes or no, not '%s'", v);
			require_given = 1;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_CWD))) {
			r->cwd = v;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_ENV))) {
			const char *eq = strchr(v, '=');
			char *name = eq ? xstrndup(v, (size_t)(eq - v)) : NULL;
			int name_ok = name && bg_env_name_ok(name);
			free(name);
			if (!name_ok)
				usage_fail("bad --env '%s' (want NAME=VALUE, NAME of "
					   "[A-Za-z_][A-Za-z0-9_]*)",
					   v);
			r->envs = xrealloc(r->envs, sizeof *r->envs * (size_t)(r->nenvs + 1));
			r->envs[r->nenvs++] = (char *)v;
		} else {
			usage_fail("run: unknown option '%s'", a);
		}
		if (secs) {
			*secs = parse_secs(v);
			if (*secs < 0)
				usage_fail("%s wants seconds, not '%s'", a, v);
		}
	}
	if (i >= argc)
		usage_fail("run: missing '--' before the command");
	if (i + 1 >= argc)
		usage_fail("run: no command after '--'");
	r->cmd = argv + i + 1;
	if (r->no_stdin && r->hb_ms)
		usage_fail("--heartbeat needs stdin: drop --no-stdin");
	if (r->no_stdin && r->nonce_stdin)
		usage_fail("--nonce-stdin needs stdin: drop --no-stdin");
	(void)gpus_given;
	if (!require_given)
		r->require_gpu = r->ngpus > 0;
	if (r->ngpus) {
		strbuf b = STRBUF_INIT;
		for (int g = 0; g < r->ngpus; g++)
			strbuf_addf(&b, "%s%d", g ? "," : "", r->gpus[g]);
		free(r->gpulist);
		r->gpulist = strbuf_detach(&b);
	}
	if (!r->lock_dir)
		r->lock_dir = agent_default_lock_dir();
	static char deftag[256];
	if (!r->tag) {
		char host[128] = "?";
		const char *user = getenv("USER");
		gethostname(host, sizeof host - 1);
		host[sizeof host - 1] = 0;
		snprintf(deftag, sizeof deftag, "%s@%s", user && *user ? user : "?", host);
		r->tag = deftag;
	} else {
		snprintf(deftag, sizeof deftag, "%s", r->tag);
		for (char *p = deftag; *p; p++)
			if (iscntrl((unsigned char)*p))
				*p = '?';
		r->tag = deftag;
	}
}
