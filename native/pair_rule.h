/* Internal (not a public hsvm_*.h header): a one-vs-one pair's decision from
 * its bags' decision values -- the one rule of exact max-wins voting (votes.c)
 * and of the decision DAG (dag.c).
 *
 * Class a (the model's pair_a) wins iff its bags' majority is positive
 * (decision > 0), an even split going to the sign of the summed decision
 * values (a on sum > 0).  *mean receives the bag-mean decision value. */
#ifndef HSVM_PAIR_RULE_H
#define HSVM_PAIR_RULE_H
#include <stdint.h>

/* The same rule for decision values d[k] + bias[k] (float32 sums, as numpy's
 * dec += b forms them), bias NULL meaning none. */
static inline __attribute__((always_inline)) int
pair_rule_a_wins_biased(const float *d, const float *bias, int32_t bags, double *mean)
{
    int32_t pos = 0;
    double sum = 0.0;
    for (int32_t k = 0; k < bags; k++) {
        const float v = bias ? d[k] + bias[k] : d[k];
        pos += v > 0.0f;
        sum += (double)v;
    }
    *mean = sum / (double)bags;
    return (2 * pos > bags) || (2 * pos == bags && sum > 0.0);
}

static inline int pair_rule_a_wins(const float *d, int32_t bags, double *mean)
{
    return pair_rule_a_wins_biased(d, (const float *)0, bags, mean);
}

#endif
