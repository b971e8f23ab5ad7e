/*
 * plan.h — the random numbers of the CEM planner (models/plan.c), internal to the
 * library, declared here so that the tests can check the stream against a known answer.
 *
 * The stream (docs/world-models.md, "Planning"): splitmix64 on a 64-bit state that starts
 * at the seed; a uniform double is the top 53 bits of a draw times 2^-53; a normal is
 * Box-Muller on two uniforms u, v (u taken as 1e-300 if it is 0):
 * sqrt(-2 ln u) cos(2 pi v). One normal per two draws; nothing else reads the stream.
 */
#ifndef JEPA_MODELS_PLAN_H
#define JEPA_MODELS_PLAN_H

#include <stdint.h>

struct jm_rng {
    uint64_t s;
};

uint64_t jm_rng_next(struct jm_rng *r);
double jm_rng_uniform(struct jm_rng *r);
double jm_rng_normal(struct jm_rng *r);

#endif
