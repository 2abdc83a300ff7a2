/* The run's watchdog (watchdog.c: the loop, the trigger, the end) and the
 * client's heartbeat on stdin (heartbeat.c). */
#ifndef BG_GATE_AGENT_WATCHDOG_H
#define BG_GATE_AGENT_WATCHDOG_H

#include "gate/agent/run.h"

/* heartbeat.c */
void stdin_init(struct run *r);
void read_stdin(struct run *r);
void read_nonce(struct run *r);
/* watchdog.c */
int why_exit(const struct run *r);
void trigger(struct run *r, enum why why);
void loop_once(struct run *r, long long deadline);
long long step(struct run *r);
void finish_run(struct run *r) __attribute__((noreturn));

#endif
