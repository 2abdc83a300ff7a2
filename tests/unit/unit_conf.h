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

/* A scratch directory named NAME, its home as HOME, USER a fixed name. */
static inline int unit_conf_scratch(const char *name)
{
	if (unit_tmpdir_make(name) < 0)
		return -1;
	setenv("HOME", home, 1);
	setenv("USER", "tester", 1);
	return 0;
}

/* The group setup and teardown of a test file that loads configurations. */
#define UNIT_CONF_GROUP(name) UNIT_GROUP_WITH(unit_conf_scratch, name)

#endif
