"""Fitted parameters of the join router's cost models (vigil.joins.costs), in microseconds per
arriving tuple.
Written by ``vigil.bench.joins_dynamic.ship(FILE)`` from the JSON of ``vigil bench joins --fit``; see docs/experiments/joins.md for
the run that produced them (machine, grid, confidence intervals).

Shipped from: fit.json (config {'scale': 0.1, 'sizes': [10000, 20000, 30000, 40000, 50000], 'per_point': 150, 'seed': 0})."""

PARAMS = {
    'select': {
        'join_first': {'alpha_J': 0.0192149, 'delta_J': 0.000180315, 'gamma_J': 0},
        'select_first': {'alpha_S': 0, 'beta_S': 0.164711, 'gamma_S': 0.00372091},
        'vanilla': {'alpha_V': 0.586844, 'gamma_V': 0.000649442},
        'hotspot': {'alpha_H': 0.0860489, 'beta_H': 0, 'gamma_H': 0.368972, 'delta_H': 0},
    },
    'window': {
        'join_first': {'alpha_J': 0.0182682, 'delta_J': 0.000171498},
        'select_first': {'alpha_S': 0, 'beta_S': 0.740792, 'gamma_S': 0.00730886},
        'ssi': {'alpha_I': 0, 'beta_I': 0.0339179, 'delta_I': 0.00119724},
        'hotspot': {'alpha_H': 0, 'beta_H': 0.0958769, 'delta_H': 0, 'gamma_H': 0, 'eps_H': 0.221856},
    },
    'band': {
        'ssi': {'alpha_I': 0, 'beta_I': 0.182665},
        'qouter': {'alpha_Q': 3.41595, 'beta_Q': 0.00327874},
        'douter': {'alpha_D': 0, 'beta_D': 0.456494},
        'mj': {'beta_M': 0.0182657},
        'hotspot': {'alpha_H': 15.0228, 'beta_H': 0, 'gamma_H': 0.0459849},
    },
}
