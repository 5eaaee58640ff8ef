"""Fitted parameters of the join router's cost models (vigil.joins.costs), in microseconds per
arriving tuple.
Written by ``vigil.bench.joins_dynamic.ship(FILE)`` from the JSON of ``vigil bench joins --fit``; see docs/experiments/joins.md for
the run that produced them (machine, grid, confidence intervals).

Shipped from: fit.json (config {'scale': 0.1, 'sizes': [10000, 20000, 30000, 40000, 50000], 'per_point': 150, 'seed': 0})."""

PARAMS = {
    'select': {
        'join_first': {'alpha_J': 0, 'delta_J': 0.000132932, 'gamma_J': 0.00640369, 'eta_J': 0.000303151},
        'select_first': {'alpha_S': 0.00366306, 'beta_S': 0.269024, 'gamma_S': 0.00402998},
        'vanilla': {'alpha_V': 0, 'gamma_V': 0, 'eta_V': 0.00628197, 'beta_V': 0.00134036},
        'hotspot': {'alpha_H': 0, 'beta_H': 0, 'gamma_H': 0.225272, 'delta_H': 0, 'eta_H': 0.000670572, 'zeta_H': 0.0195625},
    },
    'window': {
        'join_first': {'alpha_J': 0.0240832, 'delta_J': 0.000218209},
        'select_first': {'alpha_S': 0, 'beta_S': 0.874, 'gamma_S': 0.00814683},
        'ssi': {'alpha_I': 0, 'beta_I': 0.0145733, 'delta_I': 0.00122977},
        'hotspot': {'alpha_H': 0, 'beta_H': 0.0233144, 'delta_H': 0, 'gamma_H': 0, 'eps_H': 0.272423},
    },
    'band': {
        'ssi': {'alpha_I': 0, 'beta_I': 0.189008},
        'qouter': {'alpha_Q': 7.04459, 'beta_Q': 0.00338548},
        'douter': {'alpha_D': 1155.21, 'beta_D': 0.405142},
        'mj': {'beta_M': 0.0186812},
        'hotspot': {'alpha_H': 0, 'beta_H': 0.0809054, 'gamma_H': 0.0417192},
    },
}
