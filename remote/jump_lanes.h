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
 * new lane would be sooner by more than lane_cpu_ms (connect_ms, what the
 * first lane's connect took; lane_cpu_ms, what a new connection's handshake
 * takes from everyone else's CPU, the jump host's included) and fewer than
 * max_lanes exist. open_ms is the connected lanes' open cost a connecting
 * lane is expected to have. */
int remote_jump_lane_choose(const remote_jump_lane *lanes, int n, int64_t connect_ms,
			    int64_t open_ms, int64_t lane_cpu_ms, int max_lanes);

/* A lane's costs estimated before it authenticated, once its transport is
 * up: took_ms since it started, rtt_ms its round trip (the TCP connect).
 * *connect_ms, what its whole connect will take; *open_ms, a channel open
 * through it (the jump host's round trip and its connect to the box). */
void remote_jump_lane_estimate(int64_t took_ms, int64_t rtt_ms, int64_t *connect_ms,
			       int64_t *open_ms);

/* The round trips of a handshake after the TCP connect (key exchange,
 * service with the key query, signature), and the CPU a handshake takes on
 * both ends (sshd's start and key exchange dominate: about 70 ms on the
 * test machine). */
#define REMOTE_JUMP_HANDSHAKE_RTTS   5
#define REMOTE_JUMP_HANDSHAKE_CPU_MS 80

#endif
