/* A slot's lock (lock.c), the slots and their disabling (slots.c), and the
 * GPU no other process computes on (exclusive.c). */
#ifndef BG_GATE_AGENT_SLOTS_H
#define BG_GATE_AGENT_SLOTS_H

#include "gate/agent/run.h"

/* lock.c */
void lock_slot(struct run *r);
void lock_release(struct run *r);
/* $HOME/.cache/boxgate/locks (HOME from the password entry when unset); static. */
const char *agent_default_lock_dir(void);
/* mkdir -p with mode 0700 for the missing parts; -1 when `dir` is not a directory after. */
int agent_mkdir_p(const char *dir);

/* slots.c */
/* 1 with "REASON (disabled by WHO since TIME)" in why when LOCK_DIR/NAME.disabled exists. */
int slot_disabled(const char *lock_dir, const char *name, char *why, size_t n);
int cmd_slots(int argc, char **argv);
int cmd_slot_disable(int argc, char **argv);
int cmd_slot_enable(int argc, char **argv);
/* Whether some process holds a flock on `path`, read from /proc/locks (looking
 * takes no lock). */
int agent_flock_held(const char *path);

/* exclusive.c */
void check_exclusive(struct run *r);
int gpu_free_now(struct run *r, strbuf *why);

#endif
