/* What a running campaign shows: on a terminal a status line kept at the bottom
 * (jobs done/total, running per box, failures, ETA) under one line per finished
 * job; without a terminal or with --plain only the lines; with --json one event
 * object per line. Fed by the scheduler's events, from its worker threads. */
#ifndef BG_CLI_CAMPAIGN_VIEW_H
#define BG_CLI_CAMPAIGN_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "campaign/sched.h"

typedef enum { VIEW_LIVE, VIEW_PLAIN, VIEW_JSON } campaign_view_mode;

typedef struct campaign_view campaign_view;

/* total: the campaign's jobs; before: already recorded by earlier runs. */
campaign_view *campaign_view_new(const sched *s, campaign_view_mode mode, size_t total,
				 size_t before);
/* sched's on_event (ctx: the view). */
void campaign_view_event(void *ctx, const sched_event *ev);
/* Clears the status line; returns how many jobs ended (final) and were cut. */
void campaign_view_end(campaign_view *v, size_t *ended, size_t *cut);
void campaign_view_free(campaign_view *v);

#endif
