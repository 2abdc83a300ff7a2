/* The gate's process (child.c: started, its output read) and its process tree
 * (proctree.c: signalled, reaped, scanned). */
#ifndef BG_GATE_AGENT_CHILD_H
#define BG_GATE_AGENT_CHILD_H

#include "gate/agent/run.h"

/* proctree.c */
void killed_note(struct run *r, pid_t pid, int sig);
int killed_has(const struct run *r, pid_t pid);
void reap(struct run *r);
size_t tree_scan(struct run *r, int sig, size_t *live, strbuf *list);
int tree_empty(void);
/* child.c */
void start_gate(struct run *r);
void in_flush_part(struct instream *s);
void read_gate(struct instream *s);

#endif
