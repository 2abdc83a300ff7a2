/* A serving agent: one `boxgate-agent serve` on a connection, kept for many
 * gate runs, each handed to it over the channel's stdin, so that a job costs
 * one round trip (the job out, its output back) instead of an exec channel's
 * open, request and close.
 *
 * Each job is the same run as gate_run's: the same command line (the serving
 * agent starts it in /bin/sh as sshd would), a fresh nonce as its first stdin
 * line, heartbeats and Ctrl-C's kill relayed to it, the same judging of its
 * lines. The serving agent reports the job's exit status framed with the
 * job's nonce, after the job's last output on each stream; that status
 * stands for the box's exit status of gate_run.
 *
 * A serving agent that dies, is cut off or stalls is marked dead: the job
 * running on it ends as gate_run's would on a lost connection (negative
 * return, REMOTE_LOST), and the caller opens another before the next job. */
#ifndef BG_GATE_SERVE_H
#define BG_GATE_SERVE_H

#include <signal.h>
#include <stdbool.h>

#include "base/error.h"
#include "gate/client/run.h"
#include "remote/remote.h"

typedef struct gate_served gate_served;

/* How long a serving agent waits idle for its next job before it leaves
 * (passed as serve --idle); the client opens a fresh one when it has been
 * idle for half of it. */
#define GATE_SERVE_IDLE_S 300

/* Starts `AGENT serve` (agent: the quoted command word, as gate_spec's) on c.
 * The connection is borrowed and must outlive it. 0, or negative with err. */
int gate_serve_open(remote_conn *c, const char *agent, gate_served **out, bg_err *err);

/* False once the serving agent is gone or cannot be trusted with a job (lost,
 * stalled, idle past half its idle time): close it and open another. */
bool gate_serve_usable(const gate_served *sv);

/* Whether a serving agent takes this command line (not too long for its
 * stdin line): a job it does not take runs through gate_run. */
bool gate_serve_takes(const char *cmdline);

/* gate_run's contract, with the job handed to the serving agent instead of a
 * channel of its own (cmdline: one gate_serve_takes accepts). */
int gate_serve_run(gate_served *sv, const char *cmdline, const gate_policy *policy,
		   const gate_callbacks *cb, volatile sig_atomic_t *stop, gate_outcome *out,
		   bg_err *err);

/* Ends it: stdin closed (the serving agent leaves), the channel freed.
 * Accepts NULL. */
void gate_serve_close(gate_served *sv);

#endif
