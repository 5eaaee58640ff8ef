"""Fitted parameters of the join router's cost models (vigil.joins.costs), in microseconds per
arriving tuple. Written by ``vigil bench joins --fit --ship``; see docs/experiments/joins.md for
the run that produced them (machine, grid, confidence intervals)."""

PARAMS = {
    "select": {
        "join_first": {"alpha_J": 0.25, "delta_J": 4.34e-3},
        "select_first": {"alpha_S": 0.64, "beta_S": 0.4249, "gamma_S": 1.19e-2},
        "vanilla": {"alpha_V": 0.36, "gamma_V": 1.7e-3},
        "hotspot": {"alpha_H": 0.19, "beta_H": 0.7019, "gamma_H": 1.17e-2, "delta_H": 0.08},
    },
    "window": {
        "join_first": {"alpha_J": 0.25, "delta_J": 4.34e-3},
        "select_first": {"alpha_S": 0.64, "beta_S": 0.4249, "gamma_S": 1.19e-2},
        "ssi": {"alpha_I": 0.25, "beta_I": 0.01, "delta_I": 4.34e-3},
        "hotspot": {"alpha_H": 0.19, "beta_H": 0.01, "delta_H": 4.34e-3, "gamma_H": 0.7019, "eps_H": 1.17e-2},
    },
    "band": {
        "ssi": {"alpha_I": 0.2, "beta_I": 0.02},
        "qouter": {"alpha_Q": 0.2, "beta_Q": 0.01},
        "douter": {"alpha_D": 0.2, "beta_D": 0.01},
        "mj": {"beta_M": 0.005},
        "hotspot": {"alpha_H": 0.2, "beta_H": 0.02, "gamma_H": 0.01},
    },
}
