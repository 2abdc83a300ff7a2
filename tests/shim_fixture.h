/* The box the shim tests translate under: the caller's allowlist and env
 * rules, named and placed as a config file would declare them. */
#ifndef BG_TESTS_SHIM_FIXTURE_H
#define BG_TESTS_SHIM_FIXTURE_H

#include <string.h>

#include "shim/shim.h"

static inline shim_rules shim_fixture_box(const char *name, const char *gate, const char *file,
					  int line, char *const *allow, size_t n_allow,
					  const shim_env_rule *env, size_t n_env)
{
	shim_rules b;
	memset(&b, 0, sizeof(b));
	b.name = name;
	b.gate = gate;
	b.file = file;
	b.line = line;
	b.allow = allow;
	b.n_allow = n_allow;
	b.env = env;
	b.n_env = n_env;
	return b;
}

/* The same over two arrays, their lengths counted here. */
#define SHIM_FIXTURE_BOX(name, gate, file, line, allow, env)                                       \
	shim_fixture_box(name, gate, file, line, allow, sizeof(allow) / sizeof((allow)[0]), env,   \
			 sizeof(env) / sizeof((env)[0]))

#endif
