/* The campaign that holds a slot, for `boxgate slots`: read from the slot
 * lock's holder tag ("campaign:NAME ...") and, for a detached campaign of
 * this client, from its state file (the job on that slot). */
#ifndef BG_CAMPAIGN_HOLDERS_H
#define BG_CAMPAIGN_HOLDERS_H

#include <stddef.h>

#include "pool/slot_probe.h"

/* Marks each held row of `jobs` that a campaign holds: "campaign": NAME, and
 * when this client runs it detached, "campaign_detached": true and
 * "campaign_job": the job on that slot (when its state file names one). */
void campaign_note_holders(slot_probe *jobs, size_t n);

#endif
