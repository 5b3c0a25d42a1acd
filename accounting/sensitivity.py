"""Sensitivity bounds derived from function-class constants, with exact indexing.

Every function here is a plain function of numbers (gradient bounds, step
sizes, the number of nodes, ...). None of them looks at an algorithm object or
at a sensitivity an algorithm claims: the accountant derives the bound itself
and compares.

For each paper the docstring states three things, because off-by-one errors
between them are the most common way a privacy proof goes wrong:

* which state the bound is about (the agent's state after which round);
* which released message masks that state, and with which noise scale;
* the conditions under which the paper's bound actually holds.

Norms: Laplace mechanisms need L1 sensitivity, Gaussian mechanisms need L2.
Every function says which one it returns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real

from .errors import PrivacyParameterError

__all__ = [
    "huang2015_sensitivity",
    "huang2015_release_sensitivity",
    "showkatbakhsh_sensitivity",
    "showkatbakhsh_release_sensitivity",
    "WANG_BASAR_KINDS",
    "wang_basar_sensitivity",
    "DPSDA_CLIPS",
    "dpsda_node_sensitivity",
    "dpsda_network_sensitivity",
]

WANG_BASAR_KINDS = ("sample", "gradient", "variable", "sample_replace")
"""Adjacency notions for seed 001: eqs. (28), (30), (31), plus an arbitrary sample replacement."""

DPSDA_CLIPS = ("coordinate", "l2")
"""How a DPSDA block's local signal ``u_i`` is clipped: per coordinate to ``[-L_hat, L_hat]``, or in L2 norm."""


# -- validation helpers ---------------------------------------------------------------
def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise PrivacyParameterError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise PrivacyParameterError(f"{name} must be finite, got {value!r}")
    return v


def _positive(name: str, value: object) -> float:
    v = _real(name, value)
    if v <= 0:
        raise PrivacyParameterError(f"{name} must be > 0, got {value!r}")
    return v


def _nonnegative(name: str, value: object) -> float:
    v = _real(name, value)
    if v < 0:
        raise PrivacyParameterError(f"{name} must be >= 0, got {value!r}")
    return v


def _open_unit(name: str, value: object) -> float:
    v = _real(name, value)
    if not 0 < v < 1:
        raise PrivacyParameterError(f"{name} must lie in (0, 1), got {value!r}")
    return v


def _integer(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise PrivacyParameterError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise PrivacyParameterError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


# -- seed 003: Huang, Mitra, Vaidya (2015) ------------------------------------------
def huang2015_sensitivity(t: int, *, C2: float, n: int, c: float, q: float) -> float:
    """L1 sensitivity ``Delta(t)`` of the state ``x(t)`` (seed 003, Lemma 4).

    Bounded quantity: the network state ``x(t)`` in ``R^(nN)`` after the update
    (7) of round ``t``, with the observations ``y(1..t)`` held fixed. Given the
    same observations every ``z_j(t)`` is the same under both problems (eq. 6),
    so only the agent ``i`` whose cost differs can differ, by
    ``gamma_t * ||grad f_i(z) - grad f_i'(z)||_1 <= gamma_t * sqrt(n) * 2 C2``
    (projection is non-expansive, ``||.||_1 <= sqrt(n) ||.||_2``). Hence
    ``Delta(t) = 2 C2 sqrt(n) gamma_t`` with ``gamma_t = c q^(t-1)`` (eq. 8),
    and ``Delta(0) = 0``: the initial state does not depend on any cost.

    Masking message: ``x(t)`` is masked by the broadcast of the *next* round,
    ``y(t+1) = x(t) + w(t+1)`` with ``w(t+1) ~ Lap(M_(t+1))^n`` (eq. 5). So the
    release at round ``t`` has sensitivity ``Delta(t-1)``: see
    :func:`huang2015_release_sensitivity`. (Lemma 2's proof pairs ``x(t)``
    with ``M_t``, an off-by-one; notes on seed 003, section 6 item 1.)

    Validity: ``C2`` must bound ``||grad f_i||_2`` at the point where the
    gradient is evaluated, ``z_i(t)``, which noise can push outside the
    domain. Lemma 4 holds as stated only if the gradient is clipped to L2 norm
    ``C2`` (or evaluated at ``Proj_X(z)``); with the raw eq. (7) and a cost such
    as ``||x - a||^2`` the bound fails off the domain.

    Args:
        t: round index, ``t >= 0``.
        C2: gradient bound (Assumption 1(ii)), ``>= 0``.
        n: dimension of each agent's state, ``>= 1``.
        c: initial step size, ``> 0``.
        q: step decay, in ``(0, 1)``.

    Returns:
        ``2 C2 sqrt(n) c q^(t-1)`` for ``t >= 1``, else ``0.0``.

    Raises:
        PrivacyParameterError: ``t < 0``, a negative or non-finite constant,
            ``q`` outside ``(0, 1)``, ``n`` not a positive integer.

    Example:
        >>> round(huang2015_sensitivity(1, C2=1.0, n=4, c=0.5, q=0.5), 12)
        2.0
        >>> huang2015_sensitivity(0, C2=1.0, n=4, c=0.5, q=0.5)
        0.0
    """
    t = _integer("t", t, 0)
    C2 = _nonnegative("C2", C2)
    n = _integer("n", n, 1)
    c = _positive("c", c)
    q = _open_unit("q", q)
    if t == 0:
        return 0.0
    return 2.0 * C2 * math.sqrt(n) * c * q ** (t - 1)


def huang2015_release_sensitivity(t: int, *, C2: float, n: int, c: float, q: float) -> float:
    """L1 sensitivity of the release ``y(t)`` of round ``t`` (seed 003, eq. 5 with Lemma 4).

    ``y_i(t) = x_i(t-1) + w_i(t)`` masks ``x(t-1)``, so its sensitivity is
    ``Delta(t-1)``; in particular ``y(1)`` masks the cost-independent ``x(0)``
    and has sensitivity 0. This is the number to pair with the noise scale
    ``M_t`` of the same round.

    Args:
        t: release round, ``t >= 1``.
        C2, n, c, q: as in :func:`huang2015_sensitivity`.

    Returns:
        ``huang2015_sensitivity(t - 1, ...)``.

    Raises:
        PrivacyParameterError: ``t < 1`` or an invalid constant.

    Example:
        >>> huang2015_release_sensitivity(1, C2=1.0, n=4, c=0.5, q=0.5)
        0.0
        >>> round(huang2015_release_sensitivity(2, C2=1.0, n=4, c=0.5, q=0.5), 12)
        2.0
    """
    t = _integer("t", t, 1)
    return huang2015_sensitivity(t - 1, C2=C2, n=n, c=c, q=q)


# -- seed 000: Showkatbakhsh, Karakus, Diggavi ----------------------------------------
def _showkatbakhsh_step(t: int, eta_t: float | None, c: float | None) -> float:
    if (eta_t is None) == (c is None):
        raise PrivacyParameterError(
            f"give exactly one of eta_t and c (eta_t = c/t), got eta_t={eta_t!r}, c={c!r}"
        )
    if eta_t is not None:
        return _nonnegative("eta_t", eta_t)
    return _positive("c", c) / t


def showkatbakhsh_sensitivity(
    t: int, *, G: float, eta_t: float | None = None, c: float | None = None, T: int | None = None
) -> float:
    """Conditional L2 sensitivity ``Delta(t)`` of ``x_i(t)`` (seed 000, Def. 4 and Prop. 3).

    Bounded quantity: node ``i``'s Stage-I state after the gradient step of
    round ``t``, ``x_i(t) = Proj_X(z_i(t) - eta_t grad f_i(z_i(t)))`` (eq. 8),
    with the messages ``y(1..t)`` held fixed. Then ``z_i(t) = Proj_X(sum_j
    w_ij y_j(t))`` (eq. 9) is the same under both data sets and lies *inside*
    ``X``, where Assumption 2 bounds both gradients by ``G``; projection is
    non-expansive, so ``Delta(t) <= 2 eta_t G`` (Prop. 3), ``eta_t = c/t``.

    Masking message: ``x_i(t)`` is masked by ``y_i(t+1) = x_i(t) + n_i(t)``
    with ``n_i(t) ~ N(0, M_t^2 I)`` (eq. 11). The pair that enters Theorem 1's
    sum ``sum_t Delta(t)^2 / M_t^2`` is therefore (state of round ``t``, noise
    ``n(t)`` of scale ``M_t``, released as message ``y(t+1)``); the last one,
    ``y(T+1) = x(T) + n(T)``, must carry noise (notes on seed 000, section 6
    item 1). In Stage II (``t > T``) the state is a function of the messages
    only, so its conditional sensitivity is 0.

    ``G`` here is the privacy-relevant gradient bound (``G_priv`` in the notes:
    for ERM costs, the bound on one sample's gradient change), which may differ
    from the convergence constant.

    Args:
        t: round, ``t >= 1``.
        G: gradient bound on ``X``, ``>= 0``.
        eta_t: the step size of round ``t``; or give ``c`` instead.
        c: step-size constant, ``eta_t = c / t`` (Theorem 2).
        T: Stage-I horizon; if given and ``t > T`` the result is 0.

    Returns:
        ``2 eta_t G`` (L2), or 0 in Stage II.

    Raises:
        PrivacyParameterError: ``t < 1``, a negative constant, both or neither
            of ``eta_t`` and ``c``.

    Example:
        >>> showkatbakhsh_sensitivity(4, G=1.5, c=2.0)
        1.5
        >>> showkatbakhsh_sensitivity(4, G=1.5, eta_t=0.1)
        0.30000000000000004
    """
    t = _integer("t", t, 1)
    G = _nonnegative("G", G)
    eta = _showkatbakhsh_step(t, eta_t, c)
    if T is not None:
        T = _integer("T", T, 1)
        if t > T:
            return 0.0
    return 2.0 * eta * G


def showkatbakhsh_release_sensitivity(
    s: int, *, G: float, eta_t: float | None = None, c: float | None = None, T: int | None = None
) -> float:
    """L2 sensitivity of the message ``y(s)`` (seed 000, eq. 11 with Prop. 3).

    ``y(1) = 0`` carries no information (sensitivity 0); for ``s >= 2``,
    ``y(s) = x(s-1) + n(s-1)`` masks ``x(s-1)``, whose sensitivity is
    ``Delta(s-1) = 2 eta_(s-1) G``, and its noise has scale ``M_(s-1)``.

    Args:
        s: message index, ``s >= 1``.
        G, c, T: as in :func:`showkatbakhsh_sensitivity`.
        eta_t: the step size ``eta_(s-1)`` of the masked round (not of ``s``).

    Returns:
        ``Delta(s-1)``, or 0 for ``s = 1``.

    Raises:
        PrivacyParameterError: ``s < 1`` or an invalid constant.

    Example:
        >>> showkatbakhsh_release_sensitivity(1, G=1.0, c=1.0)
        0.0
        >>> showkatbakhsh_release_sensitivity(3, G=1.0, c=1.0)
        1.0
    """
    s = _integer("s", s, 1)
    if s == 1:
        _nonnegative("G", G)
        return 0.0
    return showkatbakhsh_sensitivity(s - 1, G=G, eta_t=eta_t, c=c, T=T)


# -- seed 001: Wang, Basar ------------------------------------------------------------
def wang_basar_sensitivity(
    *,
    lam_k: float,
    kind: str = "gradient",
    nu: float | None = None,
    n_i: int | None = None,
    G: float | None = None,
    units: str = "message",
) -> float:
    """Per-iteration sensitivity of Wang and Basar's shared message (seed 001, eqs. 28-31).

    Indexing: at iteration ``k`` agent ``i`` sends ``v_ji^k = w_ji (x_i^k -
    lam^k (g_i^k + n_i^k))`` with ``g_i^k = grad f_i(x_i^k)`` (Algorithm 2);
    ``w_ji`` is public, so the mechanism analysed is ``M_i^k = x_i^k - lam^k
    g_i^k`` released with additive noise ``lam^k n_i^k``. Given all earlier
    messages, ``x_i^k = sum_j v_ij^(k-1)`` is fixed (the self term uses the same
    noise draw as the sent copies), so for data or gradient adjacency only
    ``g_i^k`` differs.

    ``kind`` selects the adjacency:

    * ``"sample"`` (eq. 28): one sample changes with ``||s_p - s_q||_1 <= 1``;
      Assumption 1 gives ``nu lam^k / n_i``.
    * ``"gradient"`` (eq. 30): ``||g - g'||_1 <= 1``; gives ``lam^k``.
    * ``"variable"`` (eq. 31): ``||x - x'||_1 <= 1``; gives ``1``.
    * ``"sample_replace"`` (not in the paper): one sample replaced by an
      arbitrary one; Assumption 2 (``||grad l|| <= G``) gives the **L2** bound
      ``2 G lam^k / n_i``.

    The first three are L1 values as printed. The Gaussian mechanism needs L2,
    and ``||.||_2 <= ||.||_1``, so they are valid (conservative) L2 bounds too.

    ``units``: ``"message"`` returns the sensitivity of ``M_i^k`` itself, to be
    compared with the standard deviation of the *released* noise ``lam^k
    n_i^k``. ``"noise"`` divides by ``lam^k``, i.e. expresses it against the
    standard deviation of ``n_i^k``. Theorems 4 and 5 compare the message
    sensitivity with ``Var(n_i^k)`` directly, ignoring the ``lam^k`` on the
    noise (notes on seed 001, section 6 item 2); Theorem 6 does not.
    Variance notation: Algorithm 2 writes covariance ``sigma I`` and the
    experiments "variance sigma", whereas Theorems 4-6 treat ``sigma^2`` as the
    variance; callers of :mod:`accounting` always pass a variance explicitly.

    Args:
        lam_k: step size ``lam^k`` of iteration ``k``, ``> 0``.
        kind: one of :data:`WANG_BASAR_KINDS`.
        nu: Lipschitz constant of Assumption 1 (``kind="sample"``).
        n_i: number of samples of agent ``i`` (``"sample"``, ``"sample_replace"``).
        G: gradient bound of Assumption 2 (``"sample_replace"``).
        units: ``"message"`` or ``"noise"``.

    Returns:
        The per-iteration sensitivity (L1 for the paper's kinds, L2 for ``"sample_replace"``).

    Raises:
        PrivacyParameterError: an unknown ``kind``/``units``, a missing or invalid constant.

    Example:
        >>> wang_basar_sensitivity(lam_k=0.02, kind="gradient")
        0.02
        >>> wang_basar_sensitivity(lam_k=0.02, kind="gradient", units="noise")
        1.0
        >>> wang_basar_sensitivity(lam_k=0.5, kind="sample", nu=2.0, n_i=10)
        0.1
    """
    lam = _positive("lam_k", lam_k)
    if kind not in WANG_BASAR_KINDS:
        raise PrivacyParameterError(f"kind must be one of {WANG_BASAR_KINDS}, got {kind!r}")
    if units not in ("message", "noise"):
        raise PrivacyParameterError(f"units must be 'message' or 'noise', got {units!r}")
    if kind == "sample":
        if nu is None or n_i is None:
            raise PrivacyParameterError(f"kind='sample' needs nu and n_i, got nu={nu!r}, n_i={n_i!r}")
        value = _nonnegative("nu", nu) * lam / _integer("n_i", n_i, 1)
    elif kind == "gradient":
        value = lam
    elif kind == "variable":
        value = 1.0
    else:
        if G is None or n_i is None:
            raise PrivacyParameterError(f"kind='sample_replace' needs G and n_i, got G={G!r}, n_i={n_i!r}")
        value = 2.0 * _nonnegative("G", G) * lam / _integer("n_i", n_i, 1)
    return value / lam if units == "noise" else value


# -- seed 004: Cheng, Liao, Li (DPSDA) ------------------------------------------------
def _block_factor(d: int, clip: str) -> float:
    return float(d) if clip == "coordinate" else math.sqrt(d)


def _check_clip(clip: str) -> None:
    if clip not in DPSDA_CLIPS:
        raise PrivacyParameterError(f"clip must be one of {DPSDA_CLIPS}, got {clip!r}")


def dpsda_node_sensitivity(*, n: int, L_hat: float, block_size: int = 1, clip: str = "coordinate") -> float:
    """L1 sensitivity of one node's dual variable in DPSDA-C/PS (seed 004, Lemma 1 / Lemma 4).

    Bounded quantity: ``z_i(t+1)`` of node ``i`` (eqs. 12 / 20), masked by the
    message of the next round, ``h_i(t+1) = z_i(t+1) + eta_i(t+1)`` with
    ``eta_i ~ Lap(sigma)`` per coordinate (eq. 11). With the received messages
    held fixed, ``z_i(t+1) - z_i'(t+1) = n (u_i(t) - u_i'(t))`` on node ``i``'s
    own coordinate(s) only (``r_i = 1/n``, Remark 3), so
    ``Delta = n * max |u_i - u_i'|``.

    Validity: Lemma 1 bounds this supremum by an *expectation*
    (``E|u_i| <= L_hat``, Assumption 2), which does not bound a worst case;
    the local signal includes Gaussian gradient noise and is unbounded. The
    value ``2 n L_hat`` holds deterministically only if ``u_i`` is clipped to
    ``[-L_hat, L_hat]`` (notes on seed 004, section 6 item 6). The bound
    applies to every round from the changed round ``t0`` on, not only to
    ``t0``: once ``z_i`` differs, later gradients are evaluated at different
    points ``y_i = Pi(z_i)``.

    Blocks: with ``d_i = block_size`` coordinates per node, clipping each
    coordinate to ``[-L_hat, L_hat]`` (``clip="coordinate"``) gives
    ``2 n L_hat d_i``; clipping the block in L2 norm (``clip="l2"``) gives
    ``2 n L_hat sqrt(d_i)`` (the ``sqrt(d)`` of Remark 5).

    This is the sensitivity of a **single node's** message stream. An observer
    of all messages sees every node's ``z_i`` change at once, because a change
    of the round loss ``f_t0`` changes every ``u_i``: see
    :func:`dpsda_network_sensitivity`.

    Args:
        n: number of nodes, ``>= 1``.
        L_hat: clipping bound on the local signal, ``>= 0``.
        block_size: coordinates owned by the node, ``>= 1``.
        clip: one of :data:`DPSDA_CLIPS`.

    Returns:
        ``2 n L_hat * (d_i or sqrt(d_i))``.

    Raises:
        PrivacyParameterError: an invalid ``n``, ``L_hat``, ``block_size`` or ``clip``.

    Example:
        >>> dpsda_node_sensitivity(n=7, L_hat=1.0)
        14.0
        >>> dpsda_node_sensitivity(n=7, L_hat=1.0, block_size=4, clip="l2")
        28.0
    """
    n = _integer("n", n, 1)
    L_hat = _nonnegative("L_hat", L_hat)
    d = _integer("block_size", block_size, 1)
    _check_clip(clip)
    return 2.0 * n * L_hat * _block_factor(d, clip)


def dpsda_network_sensitivity(
    *, n: int, L_hat: float, block_sizes: int | Sequence[int] | None = None, clip: str = "coordinate"
) -> float:
    """L1 sensitivity of all nodes' dual variables together (seed 004, network level).

    Adjacency (Def. 1) changes one round's loss ``f_t0``; every node computes
    its coordinate of ``grad f_t0``, so every node's ``z_i(t0+1)`` moves, by up
    to :func:`dpsda_node_sensitivity` each. The stacked vector ``z(t+1)`` in
    ``R^(n x dim)`` that Theorem 2's proof bounds by ``Delta(t)`` therefore
    moves by up to the *sum* over nodes: ``2 n^2 L_hat`` for scalar blocks
    (notes on seed 004, section 6 item 6), not the per-node ``2 n L_hat``.

    When each applies: use this value when the adversary may observe the
    messages of every node (the paper's eavesdropper); use the per-node value
    only for an adversary that observes a single node's message stream.
    Noise ``sigma = Delta_node / epsilon`` (the paper's choice) gives each
    round ``n * epsilon`` at network level.

    Args:
        n: number of nodes, ``>= 1``.
        L_hat: clipping bound on every node's local signal, ``>= 0``.
        block_sizes: ``None`` (one coordinate per node), one int for all
            nodes, or a sequence of ``n`` block sizes.
        clip: one of :data:`DPSDA_CLIPS`.

    Returns:
        ``sum_i 2 n L_hat * (d_i or sqrt(d_i))``; ``2 n^2 L_hat`` for scalar blocks.

    Raises:
        PrivacyParameterError: invalid constants, or ``len(block_sizes) != n``.

    Example:
        >>> dpsda_network_sensitivity(n=7, L_hat=1.0)
        98.0
        >>> dpsda_network_sensitivity(n=2, L_hat=1.0, block_sizes=[1, 3])
        16.0
    """
    n = _integer("n", n, 1)
    _check_clip(clip)
    sizes = _dpsda_block_sizes(n, block_sizes)
    return float(sum(dpsda_node_sensitivity(n=n, L_hat=L_hat, block_size=d, clip=clip) for d in sizes))


def _dpsda_block_sizes(n: int, block_sizes: int | Sequence[int] | None) -> list[int]:
    """``None`` -> n ones; an int -> n copies; a sequence -> checked to have n positive ints."""
    if block_sizes is None:
        return [1] * n
    if isinstance(block_sizes, Integral) and not isinstance(block_sizes, bool):
        return [_integer("block_sizes", block_sizes, 1)] * n
    if isinstance(block_sizes, (bool, str)) or not isinstance(block_sizes, Sequence):
        raise PrivacyParameterError(f"block_sizes must be None, an int or a sequence of ints, got {block_sizes!r}")
    sizes = [_integer(f"block_sizes[{k}]", d, 1) for k, d in enumerate(block_sizes)]
    if len(sizes) != n:
        raise PrivacyParameterError(f"block_sizes must have n={n} entries, got {len(sizes)}: {block_sizes!r}")
    return sizes
