/* What every part of boxgate-agent shares: the system and base/ headers, the
 * version, the watchdog's timings. Each part has its own small header beside
 * it. The parts are never compiled one by one: gate/agent/gen.sh joins them,
 * after the protocol header and the base/ files they use, into one C file
 * (libc only, NVML through dlopen); the headers come first, in the order
 * their includes need. */
#ifndef BG_GATE_AGENT_AGENT_H
#define BG_GATE_AGENT_AGENT_H

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/lines.h"
#include "base/parse.h"
#include "base/quote.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"

#ifndef BOXGATE_AGENT_VERSION
#define BOXGATE_AGENT_VERSION "0.1.0"
#endif

#define PARTIAL_FLUSH_MS   50
#define LINE_KEEP_MAX      (64 * 1024)       /* a longer line is written in pieces */
#define OUTQ_HIGH          (4 * 1024 * 1024) /* stop reading the gate above this */
#define TERM_SCAN_MS       50
#define KILL_SCAN_MS       20
#define KILL_GIVEUP_MS     30000
#define DRAIN_MS           2000
#define SLURM_KILL_HOLD_MS 3000 /* see outside_kill_hold (watchdog.c) */
#define GPU_CONFIRM_MS     5000
#define GPU_POLL_MS        100
#define FINAL_FLUSH_MS     10000
#define LOCK_POLL_MS       10 /* a run waiting behind another starts within 10 ms of its end */

#endif
