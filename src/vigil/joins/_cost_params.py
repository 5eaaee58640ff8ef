"""Fitted parameters of the join router's cost models (vigil.joins.costs), in microseconds per
arriving tuple.
Written by ``vigil.bench.joins_dynamic.ship(FILE)`` from the JSON of ``vigil bench joins --fit``; see docs/experiments/joins.md for
the run that produced them (machine, grid, confidence intervals).

Shipped from: fit_batch2.json (config {'scale': 0.1, 'sizes': [1000, 10000, 30000, 50000], 'batch': 1000, 'seed': 0,
'distributions': 9, 'hot_fracs': [None, 0.7]}): the select models, fitted on batch times (run_batch_fit) on
Table I's query set and fig9's clustered one, by costs.fit_bounded (relative error, every term floored at 2%
of a median batch's cost: none is fitted to 0). Window and band models: unchanged, from fit2.json's window/band
rows (the per-tuple fit)."""

PARAMS = {
    'select': {
        'join_first': {'alpha_J': 0.0159667, 'delta_J': 1.88102e-05, 'gamma_J': 0.00332285, 'eta_J': 0.000163556},
        'select_first': {'alpha_S': 0.0144138, 'beta_S': 0.0372285, 'gamma_S': 0.002483},
        'vanilla': {'alpha_V': 0.0363519, 'gamma_V': 1.79161e-05, 'eta_V': 0.00670357, 'beta_V': 0.000106815},
        'hotspot': {'alpha_H': 0.00620705, 'beta_H': 0.0527895, 'gamma_H': 0.00412823, 'delta_H': 0.000552306, 'eta_H': 5.94546e-05, 'zeta_H': 8.90465e-05},
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
