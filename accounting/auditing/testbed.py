"""Test mechanisms for the auditor, written from their published definitions.

Every mechanism is vectorized: ``mechanism(data, rng, size)`` returns ``size``
outputs on a leading axis (see :func:`~accounting.auditing.mechanism.draw_samples`).
``data`` is the vector of query answers, each query of sensitivity 1 unless
stated otherwise.

* :func:`laplace_mechanism`: ``q + Lap(sensitivity / epsilon)``, pure
  ``epsilon``-DP (Dwork, McSherry, Nissim, Smith, TCC 2006).
* :func:`gaussian_mechanism`: ``q + N(0, sigma^2)`` with the analytic
  calibration :func:`accounting.mechanisms.gaussian_sigma` (Balle & Wang,
  ICML 2018), exactly ``(epsilon, delta)``-DP.
* :func:`laplace_mechanism` with ``noise_factor=0.5``: half the required
  noise, so ``2 epsilon``-DP while claiming ``epsilon``.
* :func:`report_noisy_max_value`: report noisy max that returns the noisy
  maximum *value* instead of its index (Ding, Wang, Wang, Zhang, Kifer,
  "Detecting Violations of Differential Privacy", CCS 2018, the incorrect
  variants of report noisy max; their Alg. 7 uses ``Lap(2/epsilon)``, the
  default here ``Lap(1/epsilon)``). Not ``epsilon``-DP: with ``k`` queries all
  shifted by 1 the density of the maximum changes by up to ``exp(k epsilon)``.
* :func:`svt_noisy_answers`: the sparse vector variant that outputs the noisy
  query answers (Lyu, Su, Li, "Understanding the Sparse Vector Technique for
  Differential Privacy", VLDB 2017, Alg. 3, after Roth's lecture notes):
  threshold noise ``Lap(2/epsilon)``, query noise ``Lap(2c/epsilon)``, each
  query above the noisy threshold is answered with its noisy value, the others
  with "no answer" (NaN), and everything after the ``c``-th answer is NaN
  (aborted; implied by the count, so it needs no code of its own). Lyu et al.
  show it is not ``epsilon``-DP for any finite epsilon in general.

The DP-Sniper evaluation (Bichsel, Steffen, Bogunovic, Vechev, S&P 2021) uses
the same mechanisms at ``epsilon = 0.1``; :func:`testbed_cases` lists the
pairs of inputs used by the tests and ``benchmarks/bench_auditor.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.validation import check_integer, check_positive, check_real

from ..errors import PrivacyParameterError
from ..mechanisms import gaussian_sigma, laplace_scale

__all__ = ["Mechanism", "TestbedCase", "laplace_mechanism", "gaussian_mechanism", "report_noisy_max_value",
           "svt_noisy_answers", "testbed_cases"]

Mechanism = Callable[[Any, np.random.Generator, int], np.ndarray]
"""A vectorized mechanism ``(data, rng, size) -> outputs``."""

_ERR = PrivacyParameterError


def _queries(data: Any) -> np.ndarray:
    return np.atleast_1d(np.asarray(data, dtype=float))


def laplace_mechanism(epsilon: float, sensitivity: float = 1.0, *, noise_factor: float = 1.0) -> Mechanism:
    """The Laplace mechanism ``q + Lap(noise_factor * sensitivity / epsilon)`` on a vector of answers.

    ``noise_factor < 1`` gives an under-noised (broken) mechanism: it is
    ``epsilon / noise_factor``-DP.

    Example:
        >>> m = laplace_mechanism(1.0)
        >>> m([0.0, 5.0], np.random.default_rng(0), size=3).shape
        (3, 2)
    """
    scale = check_positive(noise_factor, "noise_factor", error=_ERR) * laplace_scale(sensitivity, epsilon)

    def mechanism(data: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        q = _queries(data)
        return q + rng.laplace(0.0, scale, (size, *q.shape))

    return mechanism


def gaussian_mechanism(epsilon: float, delta: float, sensitivity: float = 1.0) -> Mechanism:
    """The Gaussian mechanism with the smallest sigma that is ``(epsilon, delta)``-DP for this L2 sensitivity.

    Example:
        >>> gaussian_mechanism(1.0, 1e-5)(0.0, np.random.default_rng(0), size=4).shape
        (4, 1)
    """
    sigma = gaussian_sigma(sensitivity, epsilon, delta)

    def mechanism(data: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        q = _queries(data)
        return q + rng.normal(0.0, sigma, (size, *q.shape))

    return mechanism


def report_noisy_max_value(epsilon: float, *, noise_factor: float = 1.0) -> Mechanism:
    """Report noisy max returning the noisy maximum value: ``max_i (q_i + Lap(noise_factor / epsilon))`` (broken).

    ``noise_factor=2`` is Ding et al.'s Alg. 7 (the variant DP-Sniper calls ReportNoisyMax3).

    Example:
        >>> report_noisy_max_value(1.0)([0.0] * 5, np.random.default_rng(0), size=3).shape
        (3,)
    """
    scale = check_positive(noise_factor, "noise_factor", error=_ERR) / check_positive(epsilon, "epsilon", error=_ERR)

    def mechanism(data: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        q = _queries(data)
        return np.max(q + rng.laplace(0.0, scale, (size, q.size)), axis=1)

    return mechanism


def svt_noisy_answers(epsilon: float, *, c: int = 1, threshold: float = 1.0) -> Mechanism:
    """Sparse vector that outputs noisy answers (Lyu et al. 2017, Alg. 3); "no answer" and "aborted" are NaN.

    Args:
        epsilon: the (wrongly) claimed epsilon; ``epsilon / 2`` goes to the threshold, ``epsilon / 2`` to the queries.
        c: answers before aborting (>= 1).
        threshold: the public threshold ``T``.

    Example:
        >>> out = svt_noisy_answers(1.0)([0.0, 10.0, 10.0], np.random.default_rng(0), size=2)
        >>> out.shape, int(np.isfinite(out).sum(axis=1).max())
        ((2, 3), 1)
    """
    eps = check_positive(epsilon, "epsilon", error=_ERR)
    c = check_integer(c, "c", minimum=1, error=_ERR)
    t = check_real(threshold, "threshold", error=_ERR)
    eps1 = eps / 2.0
    eps2 = eps - eps1

    def mechanism(data: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        q = _queries(data)
        rho = rng.laplace(0.0, 1.0 / eps1, (size, 1))
        noisy = q + rng.laplace(0.0, c / eps2, (size, q.size))
        above = noisy >= t + rho
        answered_before: np.ndarray = np.cumsum(above, axis=1) - above  # answers strictly before each query
        return np.where(above & (answered_before < c), noisy, np.nan)

    return mechanism


@dataclass(frozen=True)
class TestbedCase:
    """A mechanism, a pair of neighbouring inputs and the claim to audit.

    Attributes:
        name: short name.
        mechanism: the vectorized mechanism.
        data, data_prime: the neighbouring inputs.
        epsilon, delta: the claim.
        private: whether the claim is true.
        reference: where the mechanism is defined.
    """

    __test__ = False  # not a pytest test class

    name: str
    mechanism: Mechanism
    data: Any
    data_prime: Any
    epsilon: float
    delta: float
    private: bool
    reference: str


def testbed_cases(epsilon: float = 0.1) -> dict[str, TestbedCase]:
    """The cases of the tests and the benchmark, at a claimed ``epsilon``.

    Example:
        >>> sorted(testbed_cases())[:2]
        ['gaussian', 'laplace']
    """
    eps = check_positive(epsilon, "epsilon", error=_ERR)
    five0, five1 = [0.0] * 5, [1.0] * 5
    ten1, mixed = [1.0] * 10, [2.0] * 5 + [0.0] * 5
    return {
        "laplace": TestbedCase("laplace", laplace_mechanism(eps), [0.0], [1.0], eps, 0.0, True,
                               "Dwork et al. TCC 2006"),
        "gaussian": TestbedCase("gaussian", gaussian_mechanism(eps, 1e-5), [0.0], [1.0], eps, 1e-5, True,
                                "Balle & Wang ICML 2018 (analytic calibration)"),
        "laplace-half-noise": TestbedCase("laplace-half-noise", laplace_mechanism(eps, noise_factor=0.5), [0.0],
                                          [1.0], eps, 0.0, False, "Laplace with half the scale"),
        "noisy-max-value": TestbedCase("noisy-max-value", report_noisy_max_value(eps), five0, five1, eps, 0.0, False,
                                       "Ding et al. CCS 2018 (max value, Lap(1/eps))"),
        "noisy-max-value-alg7": TestbedCase("noisy-max-value-alg7", report_noisy_max_value(eps, noise_factor=2.0),
                                            five0, five1, eps, 0.0, False, "Ding et al. CCS 2018, Alg. 7"),
        "svt-noisy-answers": TestbedCase("svt-noisy-answers", svt_noisy_answers(eps, c=1, threshold=1.0), ten1,
                                         mixed, eps, 0.0, False, "Lyu, Su, Li VLDB 2017, Alg. 3"),
    }
