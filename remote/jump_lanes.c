#include "remote/jump_lanes.h"

int remote_jump_lane_choose(const remote_jump_lane *lanes, int n, int64_t connect_ms,
			    int64_t open_ms, int64_t lane_cpu_ms, int max_lanes)
{
	int pick = -1;
	int64_t best = INT64_MAX;
	for (int i = 0; i < n; i++) {
		const remote_jump_lane *l = &lanes[i];
		int64_t est = (int64_t)l->pending * (l->connecting ? open_ms : l->open_ms);
		if (l->connecting && connect_ms > l->elapsed_ms)
			est += connect_ms - l->elapsed_ms;
		if (est < best) {
			best = est;
			pick = i;
		}
	}
	return n < max_lanes && connect_ms + lane_cpu_ms < best ? -1 : pick;
}

void remote_jump_lane_estimate(int64_t took_ms, int64_t rtt_ms, int64_t *connect_ms,
			       int64_t *open_ms)
{
	if (rtt_ms < 1)
		rtt_ms = 1;
	*connect_ms = took_ms + REMOTE_JUMP_HANDSHAKE_RTTS * rtt_ms + REMOTE_JUMP_HANDSHAKE_CPU_MS;
	*open_ms = 2 * rtt_ms + 1;
}
