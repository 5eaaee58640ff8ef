"""Fitted parameters of the join router's cost models (vigil.joins.costs), in microseconds per
arriving tuple.
Written by ``vigil.bench.joins_dynamic.ship(FILE)`` from the JSON of ``vigil bench joins --fit``; see docs/experiments/joins.md for
the run that produced them (machine, grid, confidence intervals).

Shipped from: fit_batch4.json (config {'scale': 0.1, 'sizes': [1000, 10000, 30000, 50000], 'batch': 1000, 'seed': 0, 'distributions': 9, 'sets': [[None, 1000000.0], [0.7, 10000.0], [0.7, 1000000.0]], 'floor': 0.005, 'retimed': ['join_first'], 'from': 'fit_batch3.npz'})."""

PARAMS = {
    'select': {
        'join_first': {'alpha_J': 0.00393656, 'delta_J': 7.73739e-05, 'gamma_J': 0.000727384, 'eta_J': 4.94205e-05, 'kappa_J': 0.0120574},
        'select_first': {'alpha_S': 0.00388509, 'beta_S': 0.0106975, 'gamma_S': 0.00391174},
        'vanilla': {'alpha_V': 0.00960796, 'gamma_V': 5.04652e-06, 'eta_V': 0.00802843, 'beta_V': 0.000452139},
        'hotspot': {'alpha_H': 0.00194116, 'beta_H': 0.0145922, 'gamma_H': 0.000402907, 'delta_H': 0.00274698, 'eta_H': 0.000913782, 'zeta_H': 1.35783e-05, 'theta_H': 0.0172399},
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
