/* The box the shim tests translate under: the caller's allowlist and env
 * rules (two arrays, counted here), named and placed as a config file would
 * declare them; the rest zero. */
#ifndef BG_TESTS_SHIM_FIXTURE_H
#define BG_TESTS_SHIM_FIXTURE_H

#include "shim/shim.h"

#define SHIM_FIXTURE_BOX(name_, gate_, file_, line_, allow_, env_)                                 \
	((shim_rules){.name = (name_),                                                             \
		      .gate = (gate_),                                                             \
		      .file = (file_),                                                             \
		      .line = (line_),                                                             \
		      .allow = (allow_),                                                           \
		      .n_allow = sizeof(allow_) / sizeof((allow_)[0]),                             \
		      .env = (env_),                                                               \
		      .n_env = sizeof(env_) / sizeof((env_)[0])})

#endif
