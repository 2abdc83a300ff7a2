/* The verdict of a run: what the agent's report, the gate's exit and its
 * result lines together allow boxgate to believe, as one exit code. */
#include "gate/client/run.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/exit.h"
#include "gate/agent_proto.h"

/* boxgate stopped on Ctrl-C exits as a shell reports it: 128 + SIGINT. */
#define GATE_EXIT_INTERRUPTED 130

static int say(char *why, size_t n, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int say(char *why, size_t n, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return code;
}

static void gate_end_text(const gate_outcome *o, char *buf, size_t n)
{
	if (o->gate_signal > 0)
		snprintf(buf, n, "was killed by signal %d", o->gate_signal);
	else
		snprintf(buf, n, "exited %d", o->gate_exit);
}

int gate_outcome_judge(const gate_outcome *o, char *why, size_t n, bool *from_result)
{
	const remote_status *st = &o->status;
	char how[96], gend[48];
	bool dummy;
	if (!from_result)
		from_result = &dummy;
	*from_result = false;
	remote_status_describe(st, how, sizeof(how));
	if (o->interrupted)
		return say(why, n, GATE_EXIT_INTERRUPTED,
			   "stopped on request; the gate was killed on the box");
	if (o->agent_stalled)
		return say(why, n, BG_EXIT_INVALID,
			   "INVALID: the agent did not end within its timeout and grace plus %d s "
			   "(stopped or stuck: a gate can SIGSTOP its agent); the gate may still "
			   "run on the box and hold the slot",
			   GATE_END_SLACK_S);
	if (o->agent_absent)
		return say(why, n, BG_EXIT_FAIL,
			   "nothing ran: the agent is not on the box and was not installed");
	if (st->how == REMOTE_LOST)
		return say(why, n, BG_EXIT_CONNECT,
			   "connection lost; the agent kills the gate when the heartbeat stops");
	if (o->forged)
		return say(why, n, BG_EXIT_INVALID, "INVALID: %s", o->forged_why);
	if (!o->agent_end) {
		/* Without the agent's report an exit code could be the gate's or a crashed
		 * agent's: it is not read as an agent verdict, nor a result as final. */
		bool ended = st->how == REMOTE_EXITED || st->how == REMOTE_SIGNALED;
		if (st->how == REMOTE_EXITED && st->code == AGENT_EXIT_USAGE && o->n_results == 0)
			return say(why, n, BG_EXIT_USAGE,
				   "the agent refused its arguments (exit 2)");
		if (o->n_results > 0 || (st->how == REMOTE_EXITED && st->code == 0) ||
		    (ended &&
		     (st->code == AGENT_EXIT_BUSY || st->code == AGENT_EXIT_TIMEOUT ||
		      st->code == AGENT_EXIT_INVALID || st->code == AGENT_EXIT_CLIENT_GONE ||
		      st->code == AGENT_EXIT_KILLED)))
			return say(why, n, BG_EXIT_INVALID,
				   "INVALID: the agent ended (%s) without its final report; its "
				   "exit and any result are not trusted",
				   how);
		return say(why, n, BG_EXIT_FAIL, "the agent failed (%s) before reporting", how);
	}
	/* A transport may report an exit status above 128 as the signal it stands for
	 * (the code is kept): the agent exiting 139 for a gate killed by SIGSEGV. */
	if ((st->how != REMOTE_EXITED && st->how != REMOTE_SIGNALED) || st->code != o->agent_rc)
		return say(why, n, BG_EXIT_INVALID,
			   "INVALID: the agent reported exit %d but the box says %s", o->agent_rc,
			   how);
	if (o->agent_timeout != (strcmp(o->agent_why, AGENT_WHY_TIMEOUT) == 0))
		return say(why, n, BG_EXIT_INVALID,
			   "INVALID: the agent's TIMEOUT_HANG line and its exit (%s) disagree",
			   o->agent_why);
	if (strcmp(o->agent_why, AGENT_WHY_TIMEOUT) == 0) {
		*from_result = o->verdict == VERDICT_TIMEOUT_HANG;
		return say(why, n, BG_EXIT_TIMEOUT, "TIMEOUT_HANG%s%s", o->problems[0] ? ": " : "",
			   o->problems);
	}
	if (strcmp(o->agent_why, AGENT_WHY_BUSY) == 0)
		return say(why, n, BG_EXIT_FAIL, "the %sslot%s%s is %s",
			   strcmp(o->agent_slot, "cpu") == 0 ? "CPU " : "",
			   o->agent_slot[0] && strcmp(o->agent_slot, "cpu") != 0 ? " " : "",
			   strcmp(o->agent_slot, "cpu") == 0 ? "" : o->agent_slot,
			   o->slot_disabled ? "disabled" : "busy (held by another run)");
	if (strcmp(o->agent_why, AGENT_WHY_INVALID) == 0) {
		if (!o->agent_invalid)
			return say(why, n, BG_EXIT_INVALID,
				   "INVALID: the agent exited INVALID without its verdict line");
		*from_result = o->verdict == VERDICT_INVALID;
		return say(why, n, BG_EXIT_INVALID, "INVALID%s%s", o->problems[0] ? ": " : "",
			   o->problems);
	}
	if (o->agent_invalid)
		return say(why, n, BG_EXIT_INVALID,
			   "INVALID: the agent's INVALID line and its exit (%s) disagree",
			   o->agent_why);
	if (strcmp(o->agent_why, AGENT_WHY_EXITED) != 0) {
		if (o->n_gate_results > 0)
			return say(why, n, BG_EXIT_INVALID,
				   "INVALID: the gate did not finish (the agent stopped it: %s)",
				   o->agent_why);
		return say(why, n, BG_EXIT_FAIL, "the agent stopped the gate (%s, exit %d)",
			   o->agent_why, o->agent_rc);
	}
	/* The gate exited by itself. */
	gate_end_text(o, gend, sizeof(gend));
	if (o->cuda_error)
		return say(why, n, BG_EXIT_INVALID, "INVALID: the gate reported a CUDA error: %s",
			   o->cuda_line);
	if (o->n_gate_results > 0) {
		if (o->gate_signal > 0 || o->gate_exit < 0 ||
		    !gate_exit_clean(o->stated, o->gate_exit))
			return say(why, n, BG_EXIT_INVALID,
				   "INVALID: the gate printed its %s line, then %s: a result needs "
				   "a clean exit",
				   gate_verdict_name(o->stated), gend);
		*from_result = true;
		return say(why, n, gate_verdict_exit_code(o->verdict), "%s%s%s",
			   gate_verdict_name(o->verdict), o->problems[0] ? ": " : "", o->problems);
	}
	if (o->gate_signal <= 0 && o->gate_exit == 0)
		return say(why, n, BG_EXIT_INVALID,
			   "INVALID: the gate exited 0 without a FAITHFUL_RESULT line");
	return say(why, n,
		   o->gate_signal <= 0 && o->gate_exit == BG_EXIT_USAGE ? BG_EXIT_USAGE
									: BG_EXIT_FAIL,
		   "the gate failed (%s) without a FAITHFUL_RESULT line", gend);
}

int gate_outcome_exit_code(const gate_outcome *o, char *why, size_t n)
{
	return gate_outcome_judge(o, why, n, NULL);
}
