/* boxgate-agent slots, slot-disable, slot-enable: the box's own view of its slots,
 * read from the same lock files and disable marks that `run` obeys, so everyone who
 * asks a box gets the same answer. */
#include "gate/agent/options.h"
#include "gate/agent/slots.h"

static void slot_name(const int *gpus, int ngpus, int i, char *out, size_t n)
{
	if (ngpus)
		snprintf(out, n, "gpu%d", gpus[i]);
	else
		snprintf(out, n, "cpu");
}

/* The value of "key=" in a small key=value file's text, copied into out ("" if none). */
static void record_value(const char *text, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key);
	out[0] = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) == 0 && l[kl] == '=') {
			const char *v = l + kl + 1;
			size_t len = strcspn(v, "\n");
			snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), v);
			return;
		}
	}
}

static void read_small(int fd, char *buf, size_t n)
{
	ssize_t k = pread(fd, buf, n - 1, 0);
	buf[k > 0 ? k : 0] = 0;
}

/* LOCK_DIR/NAME.disabled's text into text[n]; 0 when the slot has no mark. */
static int read_disabled(const char *lock_dir, const char *name, char *text, size_t n)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s.disabled", lock_dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	read_small(fd, text, n);
	close(fd);
	return 1;
}

int slot_disabled(const char *lock_dir, const char *name, char *why, size_t n)
{
	char text[2048];
	if (!read_disabled(lock_dir, name, text, sizeof text))
		return 0;
	char reason[1024], by[256], since[64];
	record_value(text, "why", reason, sizeof reason);
	record_value(text, "by", by, sizeof by);
	record_value(text, "since", since, sizeof since);
	snprintf(why, n, "%s (disabled by %s since %s)", reason[0] ? reason : "no reason given",
		 by[0] ? by : "?", since[0] ? since : "?");
	return 1;
}

/* Whether some process holds a flock on `path`, read from /proc/locks: taking even a
 * shared lock to look would make a run that tries its exclusive lock at that moment
 * be refused as busy. */
int agent_flock_held(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return 0;
	FILE *f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	char line[256];
	int held = 0;
	while (!held && fgets(line, sizeof line, f)) {
		char kind[16], dev[64];
		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a blocked waiter's line
		 * has "->" before its kind and is not a holder */
		if (strstr(line, "->") ||
		    sscanf(line, "%*d: %15s %*s %*s %*d %63s", kind, dev) != 2 ||
		    strcmp(kind, "FLOCK") != 0)
			continue;
		unsigned maj, min;
		unsigned long long ino;
		if (sscanf(dev, "%x:%x:%llu", &maj, &min, &ino) == 3 &&
		    ino == (unsigned long long)st.st_ino && maj == major(st.st_dev) &&
		    min == minor(st.st_dev))
			held = 1;
	}
	fclose(f);
	return held;
}

static void add_field(strbuf *b, const char *key, const char *v)
{
	strbuf_addf(b, ",\"%s\":\"", key);
	json_escape(b, v);
	strbuf_addf(b, "\"");
}

/* One JSON line for the slot `name`. */
static void report_slot(const char *lock_dir, const char *name, int gpu, struct nvml *nv)
{
	strbuf b = STRBUF_INIT;
	char path[PATH_MAX], text[2048], v[1024];
	strbuf_addf(&b, "{\"slot\":\"%s\"", name);
	if (gpu >= 0)
		strbuf_addf(&b, ",\"gpu\":%d", gpu);
	const char *state = "free";
	snprintf(path, sizeof path, "%s/%s.lock", lock_dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && agent_flock_held(path)) {
		/* an empty record means the lock was taken a moment ago */
		state = "held";
		read_small(fd, text, sizeof text);
		record_value(text, "tag", v, sizeof v);
		add_field(&b, "tag", v);
		record_value(text, "pid", v, sizeof v);
		if (v[0] && strspn(v, "0123456789") == strlen(v))
			strbuf_addf(&b, ",\"pid\":%s", v);
		record_value(text, "since", v, sizeof v);
		add_field(&b, "since", v);
	}
	if (fd >= 0)
		close(fd);
	if (read_disabled(lock_dir, name, text, sizeof text)) {
		record_value(text, "why", v, sizeof v);
		add_field(&b, "why", v);
		record_value(text, "by", v, sizeof v);
		add_field(&b, "disabled_by", v);
		record_value(text, "since", v, sizeof v);
		add_field(&b, "disabled_since", v);
		if (strcmp(state, "free") == 0)
			state = "disabled";
		strbuf_addf(&b, ",\"disabled\":true");
	}
	if (gpu >= 0 && nv->ok) {
		struct gpu_proc *procs = NULL;
		int np = 0;
		char why[256];
		if (nvml_list(nv, gpu, &procs, &np, why, sizeof why) == 0) {
			strbuf_addf(&b, ",\"procs\":[");
			for (int i = 0; i < np; i++) {
				strbuf_addf(&b, "%s{\"pid\":%u,\"name\":\"", i ? "," : "",
					    procs[i].pid);
				json_escape(&b, procs[i].name);
				strbuf_addf(&b, "\"}");
			}
			strbuf_addf(&b, "]");
			/* a free slot with a compute process on it is not ours to give */
			if (np && strcmp(state, "free") == 0)
				state = "busy";
		} else {
			add_field(&b, "nvml", why);
		}
		free(procs);
	} else if (gpu >= 0) {
		add_field(&b, "nvml", nv->why);
	}
	strbuf_addf(&b, ",\"state\":\"%s\"}", state);
	print_line("%s", b.buf);
	strbuf_release(&b);
}

struct slot_args {
	const char *lock_dir, *why, *by;
	int *gpus, ngpus, gpus_given;
};

static void parse_slot_args(const char *cmd, int argc, char **argv, struct slot_args *a)
{
	memset(a, 0, sizeof *a);
	for (int i = 0; i < argc; i++) {
		const char *v;
		if ((v = opt_value(argc, argv, &i, AGENT_OPT_GPUS))) {
			free(a->gpus);
			a->gpus = NULL;
			a->ngpus = 0;
			if (*v && parse_gpus(v, &a->gpus, &a->ngpus) < 0)
				usage_fail("%s: bad --gpus '%s'", cmd, v);
			a->gpus_given = 1;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_LOCK_DIR))) {
			a->lock_dir = v;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_WHY))) {
			a->why = v;
		} else if ((v = opt_value(argc, argv, &i, AGENT_OPT_BY))) {
			a->by = v;
		} else {
			usage_fail("%s: unknown argument '%s'", cmd, argv[i]);
		}
	}
	if (!a->lock_dir)
		a->lock_dir = agent_default_lock_dir();
}

int cmd_slots(int argc, char **argv)
{
	struct slot_args a;
	parse_slot_args(AGENT_CMD_SLOTS, argc, argv, &a);
	if (a.why || a.by)
		usage_fail("slots takes only --gpus and --lock-dir");
	struct nvml nv;
	memset(&nv, 0, sizeof nv);
	if (!a.gpus_given) {
		/* every GPU NVML sees, else the one CPU slot */
		nvml_open(&nv);
		unsigned n = 0;
		if (nv.ok && nvml_count(&nv, &n) == 0 && n > 0) {
			a.gpus = xrealloc(NULL, sizeof(int) * n);
			for (unsigned i = 0; i < n; i++)
				a.gpus[i] = (int)i;
			a.ngpus = (int)n;
		}
	} else if (a.ngpus) {
		nvml_open(&nv);
	} else {
		snprintf(nv.why, sizeof nv.why, "no GPU slot");
	}
	int n = a.ngpus ? a.ngpus : 1;
	for (int i = 0; i < n; i++) {
		char name[32];
		slot_name(a.gpus, a.ngpus, i, name, sizeof name);
		report_slot(a.lock_dir, name, a.ngpus ? a.gpus[i] : -1, &nv);
	}
	nvml_close(&nv);
	free(a.gpus);
	return 0;
}

/* Writes (disable) or removes (enable) LOCK_DIR/NAME.disabled for every slot GPU. */
static int set_disabled(const char *cmd, int argc, char **argv, int disable)
{
	struct slot_args a;
	parse_slot_args(cmd, argc, argv, &a);
	if (!a.gpus_given)
		usage_fail("%s needs --gpus (\"\" for the CPU slot)", cmd);
	if (disable && (!a.why || !*a.why))
		usage_fail("%s needs --why: the reason everyone who is refused will read", cmd);
	if (!disable && a.why)
		usage_fail("%s takes no --why", cmd);
	if (agent_mkdir_p(a.lock_dir) < 0) {
		msg("cannot create lock directory %s: %s", a.lock_dir, strerror(errno));
		return AGENT_EXIT_SYSERR;
	}
	int n = a.ngpus ? a.ngpus : 1, rc = 0;
	for (int i = 0; i < n; i++) {
		char name[32], path[PATH_MAX], tmp[PATH_MAX];
		slot_name(a.gpus, a.ngpus, i, name, sizeof name);
		snprintf(path, sizeof path, "%s/%s.disabled", a.lock_dir, name);
		if (!disable) {
			if (unlink(path) < 0 && errno != ENOENT) {
				msg("cannot enable %s: %s: %s", name, path, strerror(errno));
				rc = AGENT_EXIT_SYSERR;
			} else {
				print_line("enabled %s", name);
			}
			continue;
		}
		/* temp file + rename: a reader sees the old mark or the whole new one */
		time_t t = time(NULL);
		struct tm tm;
		char since[32];
		gmtime_r(&t, &tm);
		strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
		/* a newline inside --why or --by would start a forged key: fold it */
		strbuf clean = STRBUF_INIT;
		strbuf_addf(&clean, "why=");
		for (const char *p = a.why; *p; p++)
			strbuf_addf(&clean, "%c", iscntrl((unsigned char)*p) ? ' ' : *p);
		strbuf_addf(&clean, "\nby=");
		for (const char *p = a.by ? a.by : "?"; *p; p++)
			strbuf_addf(&clean, "%c", iscntrl((unsigned char)*p) ? ' ' : *p);
		strbuf_addf(&clean, "\nsince=%s\n", since);
		snprintf(tmp, sizeof tmp, "%s/.%s.disabled.%d", a.lock_dir, name, (int)getpid());
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, clean.buf, clean.len) != (ssize_t)clean.len ||
		    fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
			msg("cannot disable %s: %s: %s", name, path, strerror(errno));
			unlink(tmp);
			rc = AGENT_EXIT_SYSERR;
		} else {
			print_line("disabled %s", name);
		}
		strbuf_release(&clean);
	}
	free(a.gpus);
	return rc;
}

int cmd_slot_disable(int argc, char **argv)
{
	return set_disabled(AGENT_CMD_SLOT_DISABLE, argc, argv, 1);
}

int cmd_slot_enable(int argc, char **argv)
{
	return set_disabled(AGENT_CMD_SLOT_ENABLE, argc, argv, 0);
}
