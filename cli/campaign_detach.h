/* Detached campaigns: `campaign FILE --detach` and the commands that look after
 * one (status, logs, cancel, list). The state lives in campaign/state.h. */
#ifndef BG_CLI_CAMPAIGN_DETACH_H
#define BG_CLI_CAMPAIGN_DETACH_H

#include <stdbool.h>

#include "campaign/state.h"

/* The words `campaign WORD` takes as a subcommand rather than a campaign. */
bool campaign_is_subcommand(const char *word);

/* Runs `campaign status|logs|cancel|list [NAME]`; returns the exit code. */
int campaign_subcommand(const char *word, const char *name, bool follow, bool json);

/* Detaches the calling process from its terminal as campaign NAME: takes the
 * campaign's lock (refused while another detached run of NAME holds it), and
 * forks a process in a session of its own whose stdout and stderr go to the
 * campaign's log. In the first process it prints the campaign's id and pid
 * and returns -1 (the caller returns 0 at once); in the detached process it
 * returns 0 with *st the state writer to feed; a refusal returns the exit
 * code after saying why. */
int campaign_detach(const char *name, const char *file, const char *results, bool json,
		    campaign_state **st);

#endif
