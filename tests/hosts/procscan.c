/* procscan: the processes of test hosts, from one pass over /proc (`hosts pids` runs in
 * tests' polling loops, and `hosts down` looks until none is left: a find over /proc and a
 * shell loop over every process's stat cost more cpu than the waits they served).
 *
 *   procscan [-n NSFILE=ID]... [-m PID:START=ID]... [ID]...
 *   procscan -r PID:START...
 *
 * The first form prints, one a line and sorted, the pids of the live processes (not
 * zombies) whose network or mount namespace is one of the IDs ("net:[N]", "mnt:[N]"). An ID
 * given bare is taken as it is (the caller holds the namespace open, so its number cannot
 * go to another namespace). An ID after -n counts only when NSFILE (a named namespace,
 * /run/netns/NAME) is that namespace; an ID after -m only when process PID, started at
 * START (field 22 of its stat), still runs and is in that mount namespace: an ID nothing
 * proves is dropped, since a freed namespace's number goes to the next new one. Each proof
 * is opened and kept open until the scan is done.
 *
 * With -r it prints each live process PID (still the one that started at START) and every
 * live process below it (the test hosts without namespaces, not as root).
 *
 * Exit status: 0 (nothing found is no error), 2 on a bad argument, 1 when /proc cannot be
 * read.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_IDS 1024

enum ns_kind { NS_NET, NS_MNT };

struct ns_id {
	enum ns_kind kind;
	unsigned long long ino;
};

static struct ns_id ids[MAX_IDS];
static size_t n_ids;

struct proc {
	long pid, ppid;
	bool live;
};

static void usage(void)
{
	fputs("usage: procscan [-n NSFILE=ID]... [-m PID:START=ID]... [ID]...\n"
	      "       procscan -r PID:START...\n",
	      stderr);
	exit(2);
}

/* parse_id TEXT: "net:[N]" or "mnt:[N]" into *out. */
static bool parse_id(const char *text, struct ns_id *out)
{
	const char *p;
	if (strncmp(text, "net:[", 5) == 0)
		out->kind = NS_NET;
	else if (strncmp(text, "mnt:[", 5) == 0)
		out->kind = NS_MNT;
	else
		return false;
	p = text + 5;
	if (!isdigit((unsigned char)*p))
		return false;
	char *end;
	errno = 0;
	out->ino = strtoull(p, &end, 10);
	return errno == 0 && end[0] == ']' && end[1] == '\0';
}

static void add_id(const struct ns_id *id)
{
	if (n_ids == MAX_IDS) {
		fputs("procscan: too many namespaces\n", stderr);
		exit(2);
	}
	ids[n_ids++] = *id;
}

static bool wanted(enum ns_kind kind, unsigned long long ino)
{
	for (size_t i = 0; i < n_ids; i++)
		if (ids[i].kind == kind && ids[i].ino == ino)
			return true;
	return false;
}

/* read_stat PID: its parent, whether it is live (not a zombie or dead) and its start time,
 * from /proc/PID/stat; false when it is gone. */
static bool read_stat(long pid, long *ppid, bool *live, unsigned long long *start)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* the command name may hold any byte, ')' too: the fields start after the last ')' */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return false;
	p += 2;
	char state = *p;
	*live = state != 'Z' && state != 'X' && state != 'x';
	/* fields from the state (3rd): ppid is the 4th, starttime the 22nd */
	int field = 3;
	char *tok = p;
	*ppid = -1;
	if (start)
		*start = 0;
	while (tok && *tok) {
		if (field == 4)
			*ppid = strtol(tok, NULL, 10);
		if (field == 22) {
			if (start)
				*start = strtoull(tok, NULL, 10);
			break;
		}
		tok = strchr(tok, ' ');
		if (tok)
			tok++;
		field++;
	}
	return field == 22;
}

/* parse_pid_start "PID:START" (then '=' or the end). */
static bool parse_pid_start(const char *text, long *pid, unsigned long long *start,
			    const char **rest)
{
	char *end;
	errno = 0;
	long p = strtol(text, &end, 10);
	if (errno || end == text || p <= 0 || *end != ':')
		return false;
	const char *s = end + 1;
	if (!isdigit((unsigned char)*s))
		return false;
	unsigned long long st = strtoull(s, &end, 10);
	if (errno)
		return false;
	*pid = p;
	*start = st;
	*rest = end;
	return true;
}

/* same_process PID START: PID runs, is no zombie, and started at START. */
static bool same_process(long pid, unsigned long long start)
{
	long ppid;
	bool live;
	unsigned long long st;
	return read_stat(pid, &ppid, &live, &st) && live && st == start;
}

static dev_t nsfs_dev;

/* proof_nsfile "NSFILE=ID": ID counts when NSFILE opens as that namespace (kept open). */
static void proof_nsfile(const char *arg)
{
	const char *eq = strrchr(arg, '=');
	struct ns_id id;
	if (!eq || eq == arg || !parse_id(eq + 1, &id))
		usage();
	char path[4096];
	if ((size_t)(eq - arg) >= sizeof path)
		usage();
	memcpy(path, arg, (size_t)(eq - arg));
	path[eq - arg] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_dev == nsfs_dev && st.st_ino == id.ino)
		add_id(&id);
	/* left open: the namespace cannot be freed (and its number reused) during the scan */
}

/* proof_process "PID:START=ID": ID counts when process PID (started at START) is in it. */
static void proof_process(const char *arg)
{
	long pid = 0;
	unsigned long long start = 0;
	const char *rest = NULL;
	struct ns_id id;
	if (!parse_pid_start(arg, &pid, &start, &rest) || *rest != '=' || !parse_id(rest + 1, &id))
		usage();
	if (!same_process(pid, start))
		return;
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/ns/%s", pid, id.kind == NS_NET ? "net" : "mnt");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	/* still the recorded process after the open: the pid was not reused in between */
	if (same_process(pid, start) && fstat(fd, &st) == 0 && st.st_ino == id.ino)
		add_id(&id);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* every process of /proc into *out (pid, ppid, live); the count, or -1 */
static long list_procs(struct proc **out)
{
	DIR *d = opendir("/proc");
	if (!d) {
		perror("procscan: /proc");
		return -1;
	}
	size_t cap = 1024, n = 0;
	struct proc *v = malloc(cap * sizeof *v);
	if (!v) {
		closedir(d);
		return -1;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		long pid = strtol(e->d_name, NULL, 10);
		struct proc p = {.pid = pid};
		if (!read_stat(pid, &p.ppid, &p.live, NULL))
			continue;
		if (n == cap) {
			struct proc *w = realloc(v, 2 * cap * sizeof *v);
			if (!w) {
				free(v);
				closedir(d);
				return -1;
			}
			v = w;
			cap *= 2;
		}
		v[n++] = p;
	}
	closedir(d);
	*out = v;
	return (long)n;
}

static void print_sorted(long *pids, size_t n)
{
	qsort(pids, n, sizeof *pids, cmp_long);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || pids[i] != pids[i - 1])
			printf("%ld\n", pids[i]);
}

/* -r: the live roots and every live process below them */
static int descendants(int argc, char **argv)
{
	struct proc *v;
	long n = list_procs(&v);
	if (n < 0)
		return 1;
	bool *in = calloc((size_t)n + 1, sizeof *in);
	long *out = malloc(((size_t)n + 1) * sizeof *out);
	if (!in || !out)
		return 1;
	for (int a = 0; a < argc; a++) {
		long pid = 0;
		unsigned long long start = 0;
		const char *rest = NULL;
		if (!parse_pid_start(argv[a], &pid, &start, &rest) || *rest)
			usage();
		if (!same_process(pid, start))
			continue;
		for (long i = 0; i < n; i++)
			if (v[i].pid == pid)
				in[i] = true;
	}
	/* to a fixed point: a child may come before its parent in /proc's order */
	for (bool grew = true; grew;) {
		grew = false;
		for (long i = 0; i < n; i++) {
			if (in[i])
				continue;
			for (long j = 0; j < n; j++)
				if (in[j] && v[j].pid == v[i].ppid) {
					in[i] = grew = true;
					break;
				}
		}
	}
	size_t k = 0;
	for (long i = 0; i < n; i++)
		if (in[i] && v[i].live)
			out[k++] = v[i].pid;
	print_sorted(out, k);
	return 0;
}

int main(int argc, char **argv)
{
	struct stat self;
	if (stat("/proc/self/ns/net", &self) == 0)
		nsfs_dev = self.st_dev;
	if (argc >= 2 && strcmp(argv[1], "-r") == 0)
		return descendants(argc - 2, argv + 2);
	for (int a = 1; a < argc; a++) {
		if (strcmp(argv[a], "-n") == 0 && a + 1 < argc) {
			proof_nsfile(argv[++a]);
		} else if (strcmp(argv[a], "-m") == 0 && a + 1 < argc) {
			proof_process(argv[++a]);
		} else {
			struct ns_id id;
			if (!parse_id(argv[a], &id))
				usage();
			add_id(&id);
		}
	}
	if (n_ids == 0)
		return 0;
	bool want_net = false, want_mnt = false;
	for (size_t i = 0; i < n_ids; i++) {
		want_net |= ids[i].kind == NS_NET;
		want_mnt |= ids[i].kind == NS_MNT;
	}
	DIR *d = opendir("/proc");
	if (!d) {
		perror("procscan: /proc");
		return 1;
	}
	size_t cap = 256, k = 0;
	long *out = malloc(cap * sizeof *out);
	if (!out)
		return 1;
	long me = (long)getpid();
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		long pid = strtol(e->d_name, NULL, 10);
		if (pid == me)
			continue;
		char path[64];
		struct stat st;
		bool hit = false;
		if (want_net) {
			snprintf(path, sizeof path, "/proc/%ld/ns/net", pid);
			hit = stat(path, &st) == 0 && wanted(NS_NET, st.st_ino);
		}
		if (!hit && want_mnt) {
			snprintf(path, sizeof path, "/proc/%ld/ns/mnt", pid);
			hit = stat(path, &st) == 0 && wanted(NS_MNT, st.st_ino);
		}
		long ppid;
		bool live;
		if (!hit || !read_stat(pid, &ppid, &live, NULL) || !live)
			continue;
		if (k == cap) {
			long *w = realloc(out, 2 * cap * sizeof *out);
			if (!w)
				return 1;
			out = w;
			cap *= 2;
		}
		out[k++] = pid;
	}
	closedir(d);
	print_sorted(out, k);
	return 0;
}
