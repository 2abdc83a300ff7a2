/* The agent's long-lived commands: the pool's line (queue.c) and jobs over
 * stdin (serve.c), with what main.c gives them. */
#ifndef BG_GATE_AGENT_SERVE_H
#define BG_GATE_AGENT_SERVE_H

#include "gate/agent/agent.h"

/* queue.c */
int cmd_queue(int argc, char **argv);
int cmd_queue_list(int argc, char **argv);
/* serve.c: jobs over stdin */
int cmd_serve(int argc, char **argv);
/* main.c: the signals every wait of the agent polls for, through a signalfd */
int agent_signalfd(void);
/* main.c: no other process of the user may read this one */
void guard_memory(void);

#endif
