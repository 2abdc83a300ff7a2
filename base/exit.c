#include "base/exit.h"

#include "base/error.h"

int bg_exit_code(int bg_error)
{
	switch (bg_error) {
	case BG_OK: return BG_EXIT_OK;
	case BG_EUSAGE:
	case BG_ECONFIG:
	case BG_ENOTFOUND: return BG_EXIT_USAGE;
	case BG_ECONNECT:
	case BG_EHOSTKEY:
	case BG_EAUTH: return BG_EXIT_CONNECT;
	case BG_EVERIFY: return BG_EXIT_VERIFY;
	case BG_ETIMEOUT: return BG_EXIT_TIMEOUT;
	case BG_EINVALID: return BG_EXIT_INVALID;
	default: return BG_EXIT_FAIL;
	}
}

static int rank(int code)
{
	switch (code) {
	case BG_EXIT_OK: return 0;
	case BG_EXIT_FAIL: return 1;
	case BG_EXIT_USAGE: return 2;
	case BG_EXIT_TIMEOUT: return 3;
	case BG_EXIT_INVALID: return 4;
	case BG_EXIT_CONNECT: return 5;
	case BG_EXIT_VERIFY: return 6;
	default: return 1; /* a gate's own code ranks as a failure */
	}
}

int bg_exit_merge(int a, int b)
{
	return rank(b) > rank(a) ? b : a;
}
