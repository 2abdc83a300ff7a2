/* What the unit tests that read a configuration share: an INI text loaded
 * as boxgate's configuration, in the scratch home of unit.h. Include it
 * after cmocka.h and unit.h. */
#ifndef BG_TESTS_UNIT_CONF_H
#define BG_TESTS_UNIT_CONF_H

#include "conf/conf.h"

static inline void unit_conf_load(conf *c, const char *ini)
{
	char *p = unit_file("p", ".ini", ini);
	conf_env env = {.home = home, .user = "tester"};
	bg_err err = {0};
	if (conf_load_file(c, p, &env, &err) != 0)
		fail_msg("load: %s", err.msg);
	free(p);
}

/* The group setup and teardown of a test file that loads configurations:
 * a scratch directory named NAME, its home as HOME, USER a fixed name. */
#define UNIT_CONF_GROUP(name)                                                                      \
	static int setup(void **state)                                                             \
	{                                                                                          \
		(void)state;                                                                       \
		if (unit_tmpdir_make(name) < 0)                                                    \
			return -1;                                                                 \
		setenv("HOME", home, 1);                                                           \
		setenv("USER", "tester", 1);                                                       \
		return 0;                                                                          \
	}                                                                                          \
	static int teardown(void **state)                                                          \
	{                                                                                          \
		(void)state;                                                                       \
		unit_tmpdir_remove();                                                              \
		return 0;                                                                          \
	}

#endif
