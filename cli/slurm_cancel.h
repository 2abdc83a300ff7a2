/* Cancelling a Slurm box's step after its link was lost. */
#ifndef BG_CLI_SLURM_CANCEL_H
#define BG_CLI_SLURM_CANCEL_H

#include <stdbool.h>

#include "conf/conf.h"

/* On a Slurm box: reconnects and runs `scancel --name=` for the step
 * `cmdline` started, saying on stderr what happened. False when the box is
 * not a Slurm box or nothing was cancelled. */
bool cli_slurm_cancel(const conf_box *box, const char *cmdline, bool accept_new);

#endif
