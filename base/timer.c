#include "base/timer.h"

#include <time.h>

int64_t bg_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t bg_deadline_ms(int64_t ms)
{
	return ms > 0 ? bg_now_ms() + ms : BG_NEVER;
}

int bg_poll_timeout(int64_t deadline)
{
	if (deadline == BG_NEVER)
		return -1;
	int64_t left = deadline - bg_now_ms();
	if (left <= 0)
		return 0;
	return left > 1000000 ? 1000000 : (int)left;
}
