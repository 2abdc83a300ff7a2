/* Reads one case a line and prints measure/decide's answer as one JSON object
 * a line, for the SciPy oracle of tests/integration/t76-decide-scipy.sh:
 *   R BAR N r_1 .. r_N              the gate's per-run ratios (pairs)
 *   S BAR NB NC b_1 .. b_NB c_1 .. c_NC   two unpaired samples */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "measure/decide.h"

static void num(const char *key, double v)
{
	if (isfinite(v))
		printf("\"%s\": %.17g, ", key, v);
	else
		printf("\"%s\": null, ", key);
}

int main(void)
{
	char kind[2];
	double bar;
	while (scanf("%1s %lf", kind, &bar) == 2) {
		size_t na = 0, nb = 0;
		if (kind[0] == 'R' ? scanf("%zu", &na) != 1 : scanf("%zu %zu", &na, &nb) != 2)
			return 2;
		double *x = calloc(na + nb + 1, sizeof(*x));
		for (size_t i = 0; i < na + nb; i++)
			if (scanf("%lf", &x[i]) != 1)
				return 2;
		measure_decision d;
		if (kind[0] == 'R')
			measure_decide_ratios(x, na, bar, &d);
		else
			measure_decide_samples(x, na, x + na, nb, bar, &d);
		printf("{");
		num("ratio", d.ratio);
		num("lo", d.lo);
		num("hi", d.hi);
		num("level", d.level);
		num("stat", d.stat);
		num("p_above", d.p_above);
		num("p_below", d.p_below);
		printf("\"interval\": %s, \"exact\": %s, \"call\": \"%s\"}\n",
		       d.interval ? "true" : "false", d.exact ? "true" : "false",
		       measure_call_name(d.call));
		free(x);
	}
	return 0;
}
