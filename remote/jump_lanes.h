/* Which connection to a jump host ("lane") a box behind it should use: pure
 * arithmetic on what the lanes measured, apart from the threads in jump.c. */
#ifndef BG_REMOTE_JUMP_LANES_H
#define BG_REMOTE_JUMP_LANES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct remote_jump_lane {
	int pending;        /* boxes in it whose channel is not open yet */
	bool connecting;    /* its connection to the jump host is not up yet */
	int64_t elapsed_ms; /* connecting: how long it has been at it */
	int64_t open_ms;    /* connected: what a channel open takes on it */
} remote_jump_lane;

/* The lane whose channel would be open soonest for one more box: its queue
 * of opens (pending x an open) plus what is left of its connect. -1 when a
 * new lane would be sooner (connect_ms, what the first lane's connect took)
 * and fewer than max_lanes exist. open_ms is the connected lanes' open cost
 * a connecting lane is expected to have. */
int remote_jump_lane_choose(const remote_jump_lane *lanes, int n, int64_t connect_ms,
			    int64_t open_ms, int max_lanes);

#endif
