/* The watchdog: why the gate stops, the one wait, and the phases from
 * running through stopping and reaping to the verdict. */
#include "gate/agent/options.h"
#include "gate/agent/watchdog.h"
#include "gate/agent/child.h"
#include "gate/agent/slots.h"

const char *const why_text[] = {
	[W_NONE] = "",
	[W_EXITED] = "",
	[W_TIMEOUT] = "timeout",
	[W_EOF] = "stdin closed: client gone",
	[W_HB] = "no heartbeat: client presumed gone",
	[W_HUP] = "SIGHUP: client gone",
	[W_OUTGONE] = "output closed: client gone",
	[W_KILLREQ] = "kill requested",
	[W_SIGINT] = "SIGINT",
	[W_SIGTERM] = "terminated by signal",
};

int why_exit(const struct run *r)
{
	switch (r->why) {
	case W_TIMEOUT: return AGENT_EXIT_TIMEOUT;
	case W_EOF:
	case W_HB:
	case W_HUP:
	case W_OUTGONE: return AGENT_EXIT_CLIENT_GONE;
	case W_KILLREQ:
	case W_SIGINT: return AGENT_EXIT_KILLED;
	case W_SIGTERM: return AGENT_EXIT_TERMINATED;
	case W_EXITED:
		if (WIFEXITED(r->gate_status))
			return WEXITSTATUS(r->gate_status);
		if (WIFSIGNALED(r->gate_status))
			return 128 + WTERMSIG(r->gate_status);
		return 1;
	case W_NONE: break;
	}
	return 0;
}

static void start_stop(struct run *r, enum why why)
{
	long long now = bg_now_ms();
	if (r->why == W_NONE || r->why == W_EXITED)
		r->why = why;
	r->trigger_ms = now;
	r->kill_at_ms = now + r->grace_ms;
	r->next_scan_ms = now + TERM_SCAN_MS;
	r->ph = PH_TERM;
	/* Scan first, so that every process alive now is counted, then the group. */
	reap(r);
	tree_scan(r, SIGTERM, NULL, NULL);
	if (!r->gate_reaped) {
		kill(-r->gate, SIGTERM);
		kill(-r->gate, SIGCONT);
	}
}

/* Something asks the gate to stop: the first reason wins. */
void trigger(struct run *r, enum why why)
{
	if (r->ph == PH_LOCK) {
		if (r->why == W_NONE)
			r->why = why;
		return;
	}
	if (r->ph != PH_RUN)
		return;
	char t[32];
	switch (why) {
	case W_TIMEOUT:
		fmt_secs(t, sizeof t, r->timeout_ms);
		msg("gate timed out after %s s: stopping it", t);
		break;
	case W_HB:
		fmt_secs(t, sizeof t, r->hb_ms);
		msg("no heartbeat for %s s: client presumed gone, stopping the gate", t);
		break;
	default: msg("%s: stopping the gate", why_text[why]); break;
	}
	start_stop(r, why);
}

/* True when the gate died of SIGTERM or SIGKILL while the agent had sent it
 * nothing: someone outside stopped it. */
static bool killed_from_outside(const struct run *r)
{
	if (r->why != W_EXITED || r->nkilled || !WIFSIGNALED(r->gate_status))
		return false;
	int sig = WTERMSIG(r->gate_status);
	return sig == SIGTERM || sig == SIGKILL;
}

/* Slurm ends a step (scancel, preemption, a time limit) by signalling each of
 * its processes in turn: when the gate's SIGTERM came first and it is reaped
 * before the agent's own arrives, the end would say the gate died of a signal
 * instead of "terminated", and a campaign would record the cancelled attempt
 * as the job's failure instead of requeueing it. So inside a Slurm step such
 * an end waits a bounded while for that SIGTERM (SLURM_KILL_HOLD_MS); a gate
 * killed by anything else (the OOM killer) ends that much later. */
static long long outside_kill_hold(const struct run *r, long long now)
{
	return killed_from_outside(r) && getenv("SLURM_JOB_ID") ? now + SLURM_KILL_HOLD_MS : 0;
}

static void handle_signals(struct run *r)
{
	struct signalfd_siginfo si;
	while (read(r->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			if (r->ph != PH_LOCK)
				reap(r);
			break;
		case SIGHUP: trigger(r, W_HUP); break;
		case SIGINT: trigger(r, W_SIGINT); break;
		case SIGTERM:
		case SIGQUIT:
			/* after the gate's own death by a signal from outside: the same
			 * stop reached the agent (see outside_kill_hold) */
			if (r->ph != PH_RUN && r->ph != PH_LOCK && killed_from_outside(r))
				r->why = W_SIGTERM;
			else
				trigger(r, W_SIGTERM);
			break;
		default: break;
		}
	}
}

/* The one wait of the agent: poll everything it watches until an event or deadline. */
void loop_once(struct run *r, long long deadline)
{
	struct pollfd pf[6];
	int role[6], n = 0;
	pf[n] = (struct pollfd){.fd = r->sfd, .events = POLLIN};
	role[n++] = 0;
	if (r->stdin_open && (r->ph == PH_LOCK || r->ph == PH_RUN)) {
		pf[n] = (struct pollfd){.fd = 0, .events = POLLIN};
		role[n++] = 1;
	}
	for (int i = 0; i < 2; i++)
		if (r->in[i].fd >= 0 && bq_used(&r->in[i].to->q) < OUTQ_HIGH) {
			pf[n] = (struct pollfd){.fd = r->in[i].fd, .events = POLLIN};
			role[n++] = 2 + i;
		}
	for (int i = 0; i < 2; i++)
		if (!g_out[i].dead && bq_used(&g_out[i].q)) {
			pf[n] = (struct pollfd){.fd = g_out[i].fd, .events = POLLOUT};
			role[n++] = 4 + i;
		}
	long long left = deadline - bg_now_ms();
	if (left < 0)
		left = 0;
	if (left > 60000)
		left = 60000;
	int k = poll(pf, (nfds_t)n, (int)left);
	if (k <= 0)
		return;
	for (int i = 0; i < n; i++) {
		short ev = pf[i].revents;
		if (!ev)
			continue;
		switch (role[i]) {
		case 0: handle_signals(r); break;
		case 1: read_stdin(r); break;
		case 2:
		case 3: read_gate(&r->in[role[i] - 2]); break;
		default: {
			struct outq *o = &g_out[role[i] - 4];
			if (ev & POLLNVAL) {
				o->dead = 1;
				bq_release(&o->q);
			} else if (out_write_some(o) < 0 || (ev & (POLLERR | POLLHUP))) {
				if (!o->dead) {
					o->dead = 1;
					bq_release(&o->q);
				}
				g_output_gone = 1;
			}
			break;
		}
		}
	}
	if (g_output_gone && r->ph == PH_RUN)
		trigger(r, W_OUTGONE);
}

long long step(struct run *r)
{
	long long now = bg_now_ms(), next = now + 60000;
	for (int i = 0; i < 2; i++) {
		struct instream *s = &r->in[i];
		if (bq_used(&s->part)) {
			if (now - s->last_ms >= PARTIAL_FLUSH_MS)
				in_flush_part(s);
			else if (s->last_ms + PARTIAL_FLUSH_MS < next)
				next = s->last_ms + PARTIAL_FLUSH_MS;
		}
	}
	switch (r->ph) {
	case PH_RUN:
		if (r->gate_reaped) {
			size_t live = 0;
			strbuf list = STRBUF_INIT;
			if (!tree_empty())
				tree_scan(r, 0, &live, &list);
			if (live) {
				msg("gate exited but left %zu process%s behind (pid %.*s): "
				    "stopping them",
				    live, live == 1 ? "" : "es", (int)list.len, strbuf_str(&list));
				r->why = W_EXITED;
				r->leftovers = (int)live;
				start_stop(r, W_EXITED);
			} else {
				r->why = W_EXITED;
				r->ph = PH_DRAIN;
				r->drain_until_ms = now + DRAIN_MS;
				r->hold_until_ms = outside_kill_hold(r, now);
			}
			strbuf_release(&list);
			return now;
		}
		if (r->timeout_ms && now >= r->start_ms + r->timeout_ms) {
			trigger(r, W_TIMEOUT);
			return now;
		}
		if (r->timeout_ms && r->start_ms + r->timeout_ms < next)
			next = r->start_ms + r->timeout_ms;
		if (r->hb_ms && r->stdin_open) {
			if (now >= r->hb_last_ms + r->hb_ms) {
				trigger(r, W_HB);
				return now;
			}
			if (r->hb_last_ms + r->hb_ms < next)
				next = r->hb_last_ms + r->hb_ms;
		}
		return next;
	case PH_TERM:
	case PH_KILL:
		if (r->ph == PH_TERM && now >= r->kill_at_ms) {
			r->ph = PH_KILL;
			r->giveup_ms = now + KILL_GIVEUP_MS;
			if (!r->gate_reaped)
				kill(-r->gate, SIGKILL);
			r->next_scan_ms = now;
		}
		if (now >= r->next_scan_ms) {
			reap(r);
			size_t live;
			size_t left =
				tree_scan(r, r->ph == PH_KILL ? SIGKILL : SIGTERM, &live, NULL);
			if (!left) {
				r->reaped_ms = bg_now_ms() - r->trigger_ms;
				r->ph = PH_DRAIN;
				r->drain_until_ms = now + DRAIN_MS;
				return now;
			}
			if (r->ph == PH_KILL && now >= r->giveup_ms) {
				r->unreaped = (int)left;
				r->reaped_ms = bg_now_ms() - r->trigger_ms;
				msg("%zu process%s of the gate survive SIGKILL (stuck in the "
				    "kernel?)",
				    left, left == 1 ? "" : "es");
				r->ph = PH_DRAIN;
				r->drain_until_ms = now + DRAIN_MS;
				return now;
			}
			r->next_scan_ms = now + (r->ph == PH_KILL ? KILL_SCAN_MS : TERM_SCAN_MS);
		}
		next = r->next_scan_ms < next ? r->next_scan_ms : next;
		if (r->ph == PH_TERM && r->kill_at_ms < next)
			next = r->kill_at_ms;
		return next;
	case PH_DRAIN:
		reap(r);
		if (r->why == W_EXITED && now < r->hold_until_ms)
			return r->hold_until_ms < next ? r->hold_until_ms : next;
		if ((r->in[0].fd < 0 && r->in[1].fd < 0) || now >= r->drain_until_ms) {
			for (int i = 0; i < 2; i++)
				if (r->in[i].fd >= 0) {
					in_flush_part(&r->in[i]);
					close(r->in[i].fd);
					r->in[i].fd = -1;
				}
			if (r->nkilled && r->ngpus && r->have_nvml) {
				r->ph = PH_GPU;
				r->gpu_until_ms = now + GPU_CONFIRM_MS;
				r->gpu_next_ms = now;
			} else {
				r->ph = PH_DONE;
			}
			return now;
		}
		return r->drain_until_ms < next ? r->drain_until_ms : next;
	case PH_GPU:
		if (now >= r->gpu_next_ms) {
			strbuf why = STRBUF_INIT;
			int f = gpu_free_now(r, &why);
			if (f == 1 || now >= r->gpu_until_ms) {
				r->gpu_freed = f;
				if (f == 0)
					msg("the GPU still lists%.*s", (int)why.len,
					    strbuf_str(&why));
				else if (f < 0)
					msg("NVML cannot tell whether the GPU is free");
				r->ph = PH_DONE;
				strbuf_release(&why);
				return now;
			}
			strbuf_release(&why);
			r->gpu_next_ms = now + GPU_POLL_MS;
		}
		return r->gpu_next_ms < next ? r->gpu_next_ms : next;
	default: return now;
	}
}

void finish_run(struct run *r)
{
	if (r->nkilled && r->why != W_TIMEOUT) {
		msg("stopped %d process%s, all reaped in %lld ms%s", r->nkilled,
		    r->nkilled == 1 ? "" : "es", r->reaped_ms,
		    r->unreaped ? " (some unreaped)" : "");
	}
	if (r->why == W_TIMEOUT) {
		char t[32];
		fmt_secs(t, sizeof t, r->timeout_ms);
		strbuf b = STRBUF_INIT;
		strbuf_addf(&b,
			    "%s" AGENT_RESULT_PREFIX
			    "{\"verdict\":\"TIMEOUT_HANG\",\"timeout_s\":%s,"
			    "\"killed\":%d,\"gpu_freed\":%s,\"reaped_ms\":%lld",
			    g_frame, t, r->nkilled,
			    r->gpu_freed == 1   ? "true"
			    : r->gpu_freed == 0 ? "false"
						: "null",
			    r->reaped_ms);
		if (r->unreaped)
			strbuf_addf(&b, ",\"unreaped\":%d", r->unreaped);
		strbuf_addf(&b, "}\n");
		out_line(&g_out[0], b.buf, b.len);
		strbuf_release(&b);
	} else if (r->why == W_KILLREQ) {
		msg("killed on request");
	}
	int rc = why_exit(r);
	if (r->why == W_EXITED) {
		g_end_why = AGENT_WHY_EXITED;
		if (WIFSIGNALED(r->gate_status))
			snprintf(g_end_extra, sizeof g_end_extra,
				 ",\"" AGENT_END_GATE_SIGNAL "\":%d", WTERMSIG(r->gate_status));
		else if (WIFEXITED(r->gate_status))
			snprintf(g_end_extra, sizeof g_end_extra, ",\"" AGENT_END_GATE_EXIT "\":%d",
				 WEXITSTATUS(r->gate_status));
	}
	lock_release(r);
	nvml_close(&r->nv);
	for (int i = 0; i < 2; i++)
		bq_release(&r->in[i].part);
	lines_release(&r->stdin_lines);
	free(r->killed);
	free(r->lock_fds);
	free(r->gpus);
	free(r->gpulist);
	free(r->envs);
	close(r->sfd);
	agent_exit(rc);
}
