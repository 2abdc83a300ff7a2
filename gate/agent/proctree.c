/* The gate's process tree as /proc shows it: found, signalled and reaped. */
#include "gate/agent/child.h"

struct pent {
	pid_t pid, ppid, sid;
	char state;
};

static int cmp_pent(const void *a, const void *b)
{
	pid_t x = ((const struct pent *)a)->pid, y = ((const struct pent *)b)->pid;
	return (x > y) - (x < y);
}

/* Every process in /proc, sorted by pid. */
static struct pent *proc_scan(size_t *count)
{
	struct pent *v = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir("/proc");
	*count = 0;
	if (!d)
		return NULL;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char path[64], b[512];
		int pid = atoi(e->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t r = read(fd, b, sizeof b - 1);
		close(fd);
		if (r <= 0)
			continue;
		b[r] = 0;
		char *rp = strrchr(b, ')');
		struct pent pe = {0};
		int pgrp;
		if (!rp || sscanf(rp + 1, " %c %d %d %d", &pe.state, &pe.ppid, &pgrp, &pe.sid) != 4)
			continue;
		pe.pid = (pid_t)pid;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = xrealloc(v, sizeof *v * cap);
		}
		v[n++] = pe;
	}
	closedir(d);
	qsort(v, n, sizeof *v, cmp_pent);
	*count = n;
	return v;
}

static const struct pent *pent_find(const struct pent *v, size_t n, pid_t pid)
{
	struct pent key = {.pid = pid};
	return bsearch(&key, v, n, sizeof *v, cmp_pent);
}

/* Part of the gate's tree: in the gate's session, or a parent chain reaching the agent. */
static int pent_ours(const struct pent *v, size_t n, const struct pent *p, pid_t self,
		     pid_t gate_sid)
{
	if (p->pid == self)
		return 0;
	if (gate_sid > 0 && p->sid == gate_sid)
		return 1;
	pid_t cur = p->ppid;
	for (size_t depth = 0; depth <= n && cur > 1; depth++) {
		if (cur == self)
			return 1;
		const struct pent *q = pent_find(v, n, cur);
		if (!q)
			return 0;
		cur = q->ppid;
	}
	return 0;
}

void killed_note(struct run *r, pid_t pid, int sig)
{
	for (int i = 0; i < r->nkilled; i++)
		if (r->killed[i].pid == pid) {
			if (sig == SIGTERM && !r->killed[i].termed) {
				r->killed[i].termed = 1;
				kill(pid, SIGTERM);
				kill(pid, SIGCONT);
			} else if (sig == SIGKILL) {
				kill(pid, SIGKILL);
			}
			return;
		}
	r->killed = xrealloc(r->killed, sizeof *r->killed * (size_t)(r->nkilled + 1));
	r->killed[r->nkilled++] = (struct killed){.pid = pid, .termed = sig == SIGTERM};
	kill(pid, sig);
	if (sig == SIGTERM)
		kill(pid, SIGCONT);
}

int killed_has(const struct run *r, pid_t pid)
{
	for (int i = 0; i < r->nkilled; i++)
		if (r->killed[i].pid == pid)
			return 1;
	return 0;
}

/* Reap every child that has exited; the gate's own status is kept. */
void reap(struct run *r)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p <= 0)
			return;
		if (p == r->gate) {
			r->gate_status = st;
			r->gate_reaped = 1;
		}
	}
}

/* No child is left, not even a zombie. Every process of the gate's tree
 * descends from the agent (the gate's session too: only fork joins one), and
 * one whose parent dies is handed to the agent, a child subreaper: so no
 * child means no tree, and the /proc scan (a read per process on the box) is
 * not needed. */
int tree_empty(void)
{
	siginfo_t si;
	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 && errno == ECHILD;
}

/* One scan of the gate's tree. sig 0: only count; SIGTERM: each process gets it once;
 * SIGKILL: every time. Returns the number of processes left (zombies included) and, in
 * *live, those that are not zombies. */
size_t tree_scan(struct run *r, int sig, size_t *live, strbuf *list)
{
	size_t n, left = 0, alive = 0;
	struct pent *v = proc_scan(&n);
	for (size_t i = 0; i < n; i++) {
		if (!pent_ours(v, n, &v[i], r->self, r->gate))
			continue;
		left++;
		if (v[i].state == 'Z' || v[i].state == 'X')
			continue;
		alive++;
		if (list)
			strbuf_addf(list, "%s%d", alive > 1 ? ", " : "", (int)v[i].pid);
		if (sig)
			killed_note(r, v[i].pid, sig);
	}
	free(v);
	if (live)
		*live = alive;
	return left;
}
