/* boxgate's one exit-code table (README.md, "Exit codes") and the one rule that merges the
 * outcomes of many boxes into the process's exit code. */
#ifndef BG_EXIT_H
#define BG_EXIT_H

enum bg_exit {
	BG_EXIT_OK = 0,           /* success, PASS_GATE */
	BG_EXIT_FAIL = 1,         /* a command or gate failed, BELOW_BAR */
	BG_EXIT_USAGE = 2,        /* bad usage or configuration */
	BG_EXIT_CONNECT = 3,      /* connection, authentication or host-key failure */
	BG_EXIT_VERIFY = 4,       /* a verifier refused a file (the box was left as it was) */
	BG_EXIT_TIMEOUT = 124,    /* TIMEOUT_HANG */
	BG_EXIT_INVALID = 125,    /* INVALID: a result that cannot be trusted */
	BG_EXIT_INTERRUPTED = 130 /* stopped by Ctrl-C or SIGTERM (run, campaign) */
};

/* The exit code for a BG_E* error (0 for BG_OK). */
int bg_exit_code(int bg_error);

/* The exit code of many boxes: the more serious of `a` and `b`, by
 * VERIFY > CONNECT > INVALID > TIMEOUT > USAGE > FAIL > OK (a box left as it
 * was because a verifier refused outranks one that could not be reached). */
int bg_exit_merge(int a, int b);

#endif
