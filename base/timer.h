/* Monotonic time and deadlines: every wait in boxgate has one. */
#ifndef BG_TIMER_H
#define BG_TIMER_H

#include <stdint.h>

/* Milliseconds on the monotonic clock. */
int64_t bg_now_ms(void);
/* A deadline `ms` from now; ms <= 0 means none (BG_NEVER). */
int64_t bg_deadline_ms(int64_t ms);
/* Milliseconds left until `deadline` for poll(): -1 for BG_NEVER, 0 when past. */
int bg_poll_timeout(int64_t deadline);

#define BG_NEVER INT64_MAX

#endif
