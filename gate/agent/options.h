/* boxgate-agent's option words (options.c): seconds, GPU lists, a flag's value. */
#ifndef BG_GATE_AGENT_OPTIONS_H
#define BG_GATE_AGENT_OPTIONS_H

#include "gate/agent/agent.h"

long long parse_secs(const char *s);
int parse_gpus(const char *s, int **out, int *count);
const char *opt_value(int argc, char **argv, int *i, const char *name);
void fmt_secs(char *out, size_t n, long long ms);

#endif
