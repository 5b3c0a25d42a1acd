"""What every step of the privacy check shares: the scenario pair, the options, and what is computed once.

:func:`prepare` checks that the two scenarios are adjacent, runs the scenario
once (its realized ledger), computes the accountant's own sensitivity and the
replay rules, and returns a :class:`CheckContext`. Each step of
:mod:`asyncdp.privacy.steps` then takes the :class:`ScenarioPair` and that
context and returns one :class:`~asyncdp.privacy.evidence.Evidence`.

Example:
    >>> pair, ctx = small_example()
    >>> ctx.changed_agent, ctx.epsilon_claimed, len(ctx.ledger) > 0
    (0, 1.0, True)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting import composition
from accounting.ledger import Ledger, Release
from accounting.errors import AccountingError
from accounting.replay import ReplaySetup
from accounting.scheduled_replay import ScheduledReplay
from topology.validation import check_integer, check_open_unit

from ..algorithms.base import Algorithm, as_claim_form, claim_pair, rule_noise, stated_claim
from ..errors import ScenarioError
from ..scenario import Scenario
from .adjacency import Adjacency, check_adjacency
from .behavior import (DecisionRecorder, EngineRuns, _batch_refusal, engine_disagreement, recording_gradients,
                       replay_runs, run_engine, run_seeds, seed_free_ledger, simpy_run0)
from .replay import AlgorithmReplayRule, replay_rule, replay_setup
from .sensitivity import release_sensitivity

__all__ = ["ScenarioPair", "CheckOptions", "CheckContext", "claimed", "check_declarations", "focus_rounds", "prepare", "no_release_error",
           "check_deterministic", "small_pair", "small_example", "STATISTICAL_METHODS", "MAX_CONFIDENCE"]

STATISTICAL_METHODS = 4
"""Methods whose witnesses are statistical (noise conformance, replay's delta bound, the black-box audit,
the worst pair's delta bound): each runs at ``(1 - confidence) / 4``."""


@dataclass(frozen=True)
class ScenarioPair:
    """The scenario whose claim is checked and an adjacent one (one agent's cost or one round's loss changed).

    Attributes:
        scenario: the scenario under test.
        adjacent: the same scenario with the private data changed.
    """

    scenario: Scenario
    adjacent: Scenario

    def __post_init__(self) -> None:
        for name in ("scenario", "adjacent"):
            value = getattr(self, name)
            if not isinstance(value, Scenario):
                raise ScenarioError(f"check_privacy: {name} must be an asyncdp Scenario, got {value!r}"[:200])


MAX_CONFIDENCE = 1.0 - 1e-12
"""The largest ``confidence`` the check takes: each method's share ``(1 - confidence) / STATISTICAL_METHODS`` is
split further by its tests (a few events, a few sequential looks), and ``1 -`` each piece must stay below 1 in floating
point (it does down to about ``1e-16``)."""


@dataclass(frozen=True)
class CheckOptions:
    """The options of :func:`~asyncdp.privacy.check_privacy` (see there).

    Attributes:
        runs: engine runs per side (scenario, adjacent scenario) for the
            conformance test, exact replay and the black-box audit (>= 1).
        delta: the delta of the tight (PLD) epsilon, and where a Rényi or zCDP claim is converted, in (0, 1).
        confidence: family-wise confidence of the statistical methods, in (0, 1):
            each of the :data:`STATISTICAL_METHODS` gets ``1 - confidence`` divided
            by their number, so a correct claim gets a statistical witness with
            probability at most ``1 - confidence``.
        probe_rounds: rounds whose update the prober searches (>= 1: with 0 it would check nothing).
        seed: the one seed of the check's draws (>= 0; :mod:`asyncdp.privacy.behavior`).
        engine: ``"auto"``, ``"batch"`` or ``"simpy"`` (:func:`~asyncdp.privacy.behavior.run_engine`).
        search_examples: pairs drawn by the worst-case search before its hill climb (0: extremal pairs only).
        script: the scenario script's path, quoted by the worst pair's script (``None``: not known).

    Raises:
        ScenarioError: an option out of range (the message names it and its value).

    Example:
        >>> CheckOptions(runs=0)
        Traceback (most recent call last):
        ...
        asyncdp.errors.ScenarioError: check_privacy: runs must be >= 1, got 0
    """

    runs: int = 2000
    delta: float = 1e-6
    confidence: float = 0.95
    probe_rounds: int = 3
    seed: int = 0
    engine: str = "auto"
    search_examples: int = 30
    script: str | None = None

    def __post_init__(self) -> None:
        from .behavior import ENGINES

        where = "check_privacy"
        check_integer(self.runs, "runs", minimum=1, error=ScenarioError, where=where)
        check_open_unit(self.delta, "delta", error=ScenarioError, where=where)
        check_open_unit(self.confidence, "confidence", error=ScenarioError, where=where)
        if self.confidence > MAX_CONFIDENCE:  # the tests' own confidences would round to 1
            raise ScenarioError(f"{where}: confidence {self.confidence!r} leaves each of the {STATISTICAL_METHODS} "
                                f"statistical methods the error rate {self.alpha_share:.3g}, which their tests split "
                                "further (sequential looks, several events): a test's confidence would round to 1; "
                                f"use a confidence at most {MAX_CONFIDENCE!r}")
        check_integer(self.probe_rounds, "probe_rounds", minimum=1, error=ScenarioError, where=where)
        check_integer(self.seed, "seed", minimum=0, error=ScenarioError, where=where)
        check_integer(self.search_examples, "search_examples", minimum=0, error=ScenarioError, where=where)
        if self.engine not in ENGINES:
            raise ScenarioError(f"{where}: engine must be one of {ENGINES}, got {self.engine!r}")

    @property
    def alpha_share(self) -> float:
        """The error rate of each statistical method: ``(1 - confidence) / STATISTICAL_METHODS`` (union bound)."""
        return (1.0 - self.confidence) / STATISTICAL_METHODS


@dataclass(frozen=True)
class CheckContext:
    """What the steps share, computed once by :func:`prepare`.

    Attributes:
        options: the check's options.
        algorithm: the scenario's algorithm bound to its problem.
        epsilon_claimed, delta_claimed: the algorithm's claim over the horizon.
        changed_agent: the agent whose cost differs (``None`` under round adjacency).
        changed_round: the round whose loss differs (online losses), else ``None``.
        ledger: the realized ledger of one SimPy run of the scenario (which run: :func:`prepare`).
        sensitivity: the accountant's own sensitivity of each round's release on each noisy channel,
            ``{channel: (T,) array}`` (the paper record's lemma), or ``None`` when none exists (no paper
            record: see ``no_sensitivity``).
        unnoised: rounds released with declared scale 0 on some channel although their
            independent sensitivity there is > 0 (unbounded privacy loss).
        focus: for a per-iteration claim (``claim_level = "iteration"``), the
            0-based index of the round the audits refer to (among ``focus_ledgers``' rounds, the one
            with the largest sum of squared Gaussian and plain Laplace sensitivity/scale ratios), else ``None``.
        focus_ledgers: for a per-iteration claim, the releases of every round no other round dominates
            (:func:`focus_rounds`), one ledger per round: each round's releases in the claim's scope (the
            changed agent's on every channel and to every receiver, or every agent's under round
            adjacency); the bounds are the largest over them. Empty for a claim over the run.
        rule, rule_adjacent: the lockstep replay rules of the two scenarios
            (``None`` for algorithms with several noisy channels).
        setup: the round weights and declared noise scales of the scenario (``None`` likewise).
        pair: the scenario pair (the engine runs' source).
        no_sensitivity: why the accountant has no sensitivity of its own, or ``None``.
        paper: the paper record the check used, with its origin (:class:`asyncdp.papers.Registered`),
            or ``None``.
        cache: what the steps compute once and share (engine runs, the realized replay).
        claim_form: the claim as an :mod:`accounting.claim_forms` form (``None`` for no finite claim).
            Rényi and zCDP claims are checked through their ``(epsilon, delta)`` conversion at the
            option ``delta`` (``epsilon_claimed``, ``delta_claimed``): a witness against the
            conversion refutes the claim, which implies it.
        adjacency: what :func:`~asyncdp.privacy.adjacency.check_adjacency` found (the changed agent or round,
            and the other agents or rounds whose costs it could not show unchanged, with its doubt).
        state_magnitude: the largest absolute decision of that run (:func:`decision_magnitude`): a rule whose
            releases are offsets from large states computes its means at the states' resolution, so a
            comparison of replayed means allows round-off at that magnitude too.
    """

    options: CheckOptions
    algorithm: Algorithm
    epsilon_claimed: float
    delta_claimed: float
    changed_agent: int | None
    changed_round: int | None
    ledger: Ledger
    sensitivity: dict[str, np.ndarray] | None
    unnoised: tuple[int, ...]
    focus: int | None
    focus_ledgers: tuple[Ledger, ...]
    rule: AlgorithmReplayRule | None
    rule_adjacent: AlgorithmReplayRule | None
    setup: ReplaySetup | None
    pair: ScenarioPair | None = None
    no_sensitivity: str | None = None
    paper: Any = None
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    claim_form: Any = None
    adjacency: Adjacency | None = None
    state_magnitude: float = 0.0

    @property
    def form_name(self) -> str:
        """The claim's form as every witness names it: ``"pure"``, ``"approximate"``, ``"renyi"`` or ``"zcdp"``
        (a witness against a Rényi or zCDP claim through its ``(epsilon, delta)`` conversion names the claim's form;
        its method says how it refutes)."""
        if self.claim_form is not None:
            return str(self.claim_form.form)
        return "pure" if self.delta_claimed == 0 else "approximate"

    def engine_runs(self, side: int) -> EngineRuns:
        """The engine's ``runs`` runs of the scenario (``side`` 0) or of the adjacent one (1), run once."""
        key = f"runs{side}"
        if key not in self.cache:
            assert self.pair is not None
            sc = self.pair.scenario if side == 0 else self.pair.adjacent
            runs = run_engine(sc, self.options.runs, seed=self.options.seed, side=side, engine=self.options.engine)
            # every method reads these runs: run 0 is compared with the other engine's run of its seed (the
            # scenario's SimPy run of that seed may have been run by prepare, for its ledger)
            simpy0 = self.cache.pop("simpy0", None) if side == 0 else None
            if simpy0 is not None and (runs.engine != "batch" or simpy0.metadata.get("seed") != runs.seeds[0]):
                simpy0 = None
            self.cache[key] = dataclasses.replace(runs, disagreement=engine_disagreement(sc, runs, simpy0))
        return self.cache[key]

    def check_run_deterministic(self, side: int, run: int, under: int) -> None:
        """:func:`check_deterministic` along engine run ``run`` of ``side`` under the problem of scenario ``under``
        (0: the scenario's, 1: the adjacent one's), once per ``(side, run, under)``.

        Called where a replay does not explain a release of some run (:meth:`realized_replay`,
        :meth:`adjacent_replay`: the additivity probe, a noise-free release off its replayed value, a residual off
        the engine's draw), so the check stops with this error rather than give a verdict: a rule that gave the same
        values twice there released something else, which the method that found it reports. A rule drawing
        randomness of its own (from any round on, or only in states some runs reach) shows it so in the first run
        that draws it into a release; randomness that reaches no release (a state entry nothing reads) is no
        concern of privacy and is not looked for. Where the engine's draws were not recorded, run 0 is checked.

        Raises:
            ScenarioError: the rule's R or U step returned different values for the same inputs along that run.
        """
        key = ("deterministic", side, run, under)
        if key in self.cache:
            return
        self.cache[key] = True
        assert self.pair is not None
        sc = self.pair.scenario if under == 0 else self.pair.adjacent
        alg = self.algorithm if under == 0 else sc.algorithm.bind(sc.problem)
        check_deterministic(sc, alg, self.engine_runs(side), "scenario" if under == 0 else "adjacent scenario", run)

    def _check_unexplained(self, side: int, replay: ScheduledReplay, probes: Sequence[Any] = ()) -> None:
        """:meth:`check_run_deterministic` on the runs of ``side`` whose releases ``replay`` (and its additivity
        ``probes``: labelled ``"scenario"``, under the scenario's problem, or ``"adjacent"``) does not explain."""
        for probe in probes:
            if probe.finding_run is not None:
                self.check_run_deterministic(side, probe.finding_run, 0 if probe.label == "scenario" else 1)
        for found in replay.noise_free_mismatch.values():  # compared with the replay under the scenario's problem
            for under in {0, side} if found is not None else ():
                self.check_run_deterministic(side, int(found[0]), under)
        from .noise_draws import side_draws

        if self.engine_runs(side).noise is None:  # no draws to compare the residuals with
            self.check_run_deterministic(side, 0, side)
        side_draws(self, side, replay)  # checks the first run with a residual off its draw

    def realized_replay(self) -> ScheduledReplay | AccountingError:
        """The scenario's runs replayed on their realized schedules under both problems (or why not), once."""
        if "replay" not in self.cache:
            assert self.pair is not None
            from .additivity import (ADDITIVITY_STREAM, AdditivityProbe, probe_finding, probe_moving_scale, probe_nonlinear,
                                      probe_wrapper)
            from .behavior import declared_noise

            # the replay's densities assume y = mu + s z: the rule's R step is probed on the states it visits
            noise = declared_noise(self.algorithm, self.pair.scenario.horizon)
            rng = np.random.default_rng(np.random.SeedSequence(self.options.seed, spawn_key=(ADDITIVITY_STREAM,)))
            probes: list[AdditivityProbe] = []
            try:
                self.cache["replay"] = replay_runs(self.engine_runs(0), self.pair.scenario, self.pair.adjacent,
                                                   algorithm=self.algorithm,
                                                   wrap=self._keep_decisions(probe_wrapper(probes, noise, rng, {},
                                                                                           reuse={})))
            except AccountingError as exc:
                self.cache["replay"] = exc
            self.cache["additivity"] = probe_finding(tuple(probes))
            self.cache["additivity nonlinear"] = probe_nonlinear(tuple(probes))
            self.cache["additivity moving scale"] = probe_moving_scale(tuple(probes))
            if not isinstance(self.cache["replay"], AccountingError):
                self._check_unexplained(0, self.cache["replay"], probes)
        return self.cache["replay"]

    def _keep_decisions(self, wrap: Callable[[Any, str], Any] | None) -> Callable[[Any, str], Any] | None:
        """``wrap`` (``None``: none) of a replay, then a :class:`~asyncdp.privacy.behavior.DecisionRecorder` of the
        changed agent appending to :meth:`replayed_decisions`; ``wrap`` itself under round adjacency or without a
        relation class to evaluate there (:func:`~asyncdp.privacy.coverage.class_relation`)."""
        from .coverage import _difference_class

        assert self.pair is not None
        if self.changed_agent is None or _difference_class(self.pair) is None:
            return wrap
        kept: dict[str, list[np.ndarray]] = {"scenario": [], "adjacent": []}  # per problem the replay runs under
        self.cache.setdefault("decisions", []).append(kept)
        points = self.cache.setdefault("gradient points", [])

        def keep(rule: Any, label: str) -> Any:
            rule = recording_gradients(rule, self.changed_agent, points, kept[label])
            return DecisionRecorder(rule if wrap is None else wrap(rule, label), self.algorithm, self.changed_agent,
                                    kept[label])

        return keep

    def replayed_decisions(self) -> np.ndarray:
        """The changed agent's finite decisions at every state the replays so far read (:meth:`realized_replay`,
        :meth:`adjacent_replay`; under the adjacent problem only the rounds whose states differ from the scenario
        problem's), ``(k, n)``; ``(0, n)`` before any."""
        assert self.pair is not None
        d = self.pair.scenario.problem.dim
        kept = []
        for replay in self.cache.get("decisions", []):
            first, other = replay["scenario"], replay["adjacent"]
            kept += first + [a for k, a in enumerate(other)
                             if k >= len(first) or not np.array_equal(a, first[k], equal_nan=True)]
        kept = [a[np.isfinite(a).all(axis=1)] for a in kept if a.shape[-1] == d]
        return np.concatenate(kept, axis=0) if kept else np.empty((0, d))

    def replayed_gradient_points(self) -> np.ndarray:
        """The finite points at which the replays so far (:meth:`realized_replay`, :meth:`adjacent_replay`, under
        both problems) evaluated the changed agent's gradient, ``(k, n)`` (``asyncdp.privacy.behavior.\
recording_gradients``; e.g. a step from the mixed point, neither a release nor a decision); ``(0, n)`` before any."""
        assert self.pair is not None
        d = self.pair.scenario.problem.dim
        kept = [a[np.isfinite(a).all(axis=1)] for a in self.cache.get("gradient points", []) if a.shape[-1] == d]
        return np.concatenate(kept, axis=0) if kept else np.empty((0, d))

    def adjacent_replay(self) -> ScheduledReplay | AccountingError:
        """The adjacent scenario's runs replayed on their realized schedules under both problems (or why not), once:
        their residuals under each problem, no losses (the realized shifts and the adjacent runs' draws read them)."""
        if "adjacent replay" not in self.cache:
            assert self.pair is not None
            try:
                self.cache["adjacent replay"] = replay_runs(self.engine_runs(1), self.pair.scenario, self.pair.adjacent,
                                                            algorithm=self.algorithm, losses=False,
                                                            wrap=self._keep_decisions(None))
            except AccountingError as exc:
                self.cache["adjacent replay"] = exc
            else:
                self._check_unexplained(1, self.cache["adjacent replay"])
        return self.cache["adjacent replay"]

    def pld_epsilon(self, delta: float, interval: float) -> float:
        """The PLD epsilon of the realized ledger at ``delta`` (largest over the :meth:`scopes`), composed once.

        The ledger's PLD does not depend on the delta it is read at, so the
        first call composes it once (per agent, or network-wide) and reads it
        at ``delta``, the option ``delta`` and the claimed delta together;
        agents whose releases have the same ratios share one composition
        (``accounting.composition.pld_epsilon_table``). Later calls at
        those deltas read the cache. Equal to the largest ``pld_epsilon(scope,
        delta=delta, ...)`` over the :meth:`scopes`, with the accountant's sensitivity.

        Args:
            delta: the delta, in (0, 1).
            interval: the loss grid ``h`` (``value_discretization_interval``).

        Raises:
            PrivacyParameterError: a bad delta or interval.
            ScenarioError: the accountant has no sensitivity for this algorithm.
        """
        cache = self.cache.setdefault(("pld", float(interval)), {})
        if delta not in cache:
            wanted = [delta] + [d for d in (self.options.delta, self.delta_claimed) if 0 < d < 1 and d != delta]
            table = composition.pld_epsilon_table(self.scopes(), self.release_sensitivity, wanted, interval)
            for k, d in enumerate(wanted):
                cache[d] = max(row[k] for row in table)
        return cache[delta]

    def release_sensitivity(self, release: Release) -> float:
        """The accountant's sensitivity of ``release`` (that of its channel and round).

        Raises:
            ScenarioError: the accountant has no sensitivity for this algorithm.
        """
        if self.sensitivity is None:
            raise ScenarioError(f"no independent sensitivity: {self.no_sensitivity}")
        return release_sensitivity(self.sensitivity)(release)

    def scopes(self) -> list[Ledger]:
        """The realized ledger's composition scopes: each agent's releases, or all of them under round adjacency
        (``accounting.composition.per_agent``, ``accounting.composition.network_wide``)."""
        if self.changed_agent is not None:
            return [self.ledger.for_agent(a) for a in self.ledger.agents]
        return [self.ledger]


def claimed(alg: Algorithm, horizon: int, delta: float) -> tuple[float, float, Any]:
    """The rule's claim as ``(epsilon, delta, form)``, in any form.

    ``claimed_privacy(horizon)`` returns ``(epsilon, delta)`` (pure or
    approximate DP; the engines record the claim's pair in every result:
    :func:`~asyncdp.algorithms.base.claimed_pair`). A rule that
    claims another form also defines ``claimed_form(horizon)``, returning an
    :mod:`accounting.claim_forms` form:
    :class:`~accounting.claim_forms.RenyiDP` ``(alpha, epsilon)`` or
    :class:`~accounting.claim_forms.ZeroConcentratedDP` ``rho``; the check
    then checks that form. A Rényi or
    zCDP claim is checked at the check's ``delta`` (``--delta``): its
    ``(epsilon, delta)`` conversion (:func:`accounting.refutation.check_epsilon`).

    Args:
        alg: the bound rule.
        horizon: the run's length.
        delta: the check's delta (used for Rényi and zCDP claims).

    Returns:
        ``(epsilon, delta, form)``; ``form`` is ``None`` for an infinite epsilon.

    Raises:
        ScenarioError: a rule's ``claim_level`` other than ``"run"`` and ``"iteration"``, a claim of another type, a
            :class:`~accounting.claims.Claim` whose level (``per``) is not
            the rule's ``claim_level`` or is ``"round"`` (the check reads run and iteration claims), a
            Rényi/zCDP claim with the check's delta 0, or a ``Claim`` whose own ``(epsilon, delta)`` its Rényi/zCDP
            form does not imply, or such a pair from the rule's ``claimed_privacy`` (its own or inherited) beside a
            form without a pair (two statements; the check would test only the form).

    Example:
        >>> from accounting.claim_forms import ZeroConcentratedDP
        >>> class Z:
        ...     def claimed_form(self, horizon): return ZeroConcentratedDP(0.5)
        >>> eps, delta, form = claimed(Z(), 10, 1e-5)
        >>> round(eps, 3), delta, form.form
        (4.728, 1e-05, 'zcdp')
    """
    from accounting.claim_forms import as_form
    from accounting.refutation import check_epsilon

    custom = getattr(alg, "claimed_form", None)
    level = getattr(alg, "claim_level", "run")
    if level not in ("run", "iteration"):  # a typo would be read per run without a word
        raise ScenarioError(f"{getattr(alg, 'name', alg)}: claim_level must be 'run' or 'iteration', got {level!r}")
    raw = stated_claim(alg, "claimed_form" if callable(custom) else "claimed_privacy", horizon)
    if isinstance(raw, tuple):
        eps, dl = claim_pair(raw, str(getattr(alg, "name", alg)))  # exactly two real numbers
        try:
            return eps, dl, (as_form((eps, dl)) if eps < np.inf else None)
        except AccountingError as exc:  # e.g. epsilon 0 (a horizon whose releases all mask cost-free values)
            raise ScenarioError(f"{getattr(alg, 'name', alg)}: the claim (epsilon, delta) = ({eps!r}, {dl!r}) for "
                                f"horizon {horizon} is not one the check can test: {exc}") from None
    per = getattr(raw, "per", None)
    if per is not None and per not in ("run", "iteration"):  # e.g. a Claim per "round": no reading of it is checked
        raise ScenarioError(f"{getattr(alg, 'name', alg)}: claimed_form returns a claim per {per!r}: the check reads "
                            f"a claim per 'run' or per 'iteration' (the rule's claim_level, {level!r}) only")
    if per is not None and per != level:
        raise ScenarioError(f"{getattr(alg, 'name', alg)}: claimed_form returns a claim per {per!r} but the rule's "
                            f"claim_level is {level!r}: the check would read it per {level!r}; make them agree")
    form = as_claim_form(raw, str(getattr(alg, "name", alg)))
    if form.form in ("pure", "approximate"):
        return float(form.epsilon), float(getattr(form, "delta", 0.0)), form  # type: ignore[union-attr]
    _statement_implied(raw, form, str(getattr(alg, "name", alg)))
    own_pair = raw is not form and None not in (getattr(raw, "epsilon", None), getattr(raw, "delta", None))
    if not own_pair and callable(getattr(alg, "claimed_privacy", None)):
        # no pair of its own: asyncdp run and sweeps record claimed_privacy's (claimed_pair), inherited or not (a
        # paper's published pair under a subclass with less noise is false for it)
        who = str(getattr(alg, "name", alg))
        _statement_implied(claim_pair(stated_claim(alg, "claimed_privacy", horizon), who), form, who,
                           source=_stated_by(alg))
    if not 0 < delta < 1:
        raise ScenarioError(f"a {form.form} claim ({form.describe()}) is checked at the check's delta: delta must be "
                            f"in (0, 1), got {delta!r}")
    return float(check_epsilon(form, delta)), float(delta), form


def _stated_by(alg: Any) -> str:
    """``"claimed_privacy"``, or ``"claimed_privacy (inherited from Base)"`` when ``alg``'s class inherits it."""
    owner = next((k for k in type(alg).__mro__ if "claimed_privacy" in vars(k)), type(alg))
    return "claimed_privacy" if owner is type(alg) else f"claimed_privacy (inherited from {owner.__name__})"


def _statement_implied(raw: Any, form: Any, who: str, source: str = "claimed_form") -> None:
    """Refuse an ``(epsilon, delta)`` statement beside a Rényi/zCDP ``form`` that the form does not imply.

    The statement is a :class:`~accounting.claims.Claim`'s own ``(epsilon, delta)``, or the pair the rule's
    ``claimed_privacy`` (its own or inherited) returns beside a bare form from ``claimed_form`` (the pair ``asyncdp
    run`` and sweeps record as the claim: :func:`~asyncdp.algorithms.base.claimed_pair`). Either states two things; the check tests one
    claim, the form (through its conversion at the check's delta), so a stronger ``(epsilon, delta)`` would go
    unchecked behind a ``pass``. A statement the form implies (its conversion at ``delta``, or a looser one, as the
    paper records state; ``(inf, 0)``, the base rule's "no claim") adds nothing and is accepted. ``raw`` without
    ``epsilon``/``delta`` (a bare form) states nothing more.

    Args:
        raw: the Claim, or ``(epsilon, delta)`` from ``claimed_privacy``.
        form: its Rényi or zCDP form.
        who: the rule's name, for the message.
        source: the method that stated ``raw`` (``"claimed_form"``, or ``claimed_privacy`` and where it is defined).

    Raises:
        ScenarioError: ``delta = 0`` (pure DP, which no Rényi or zCDP bound implies), or ``epsilon`` below the form's
            conversion at ``delta``.
    """
    eps, dl = raw if isinstance(raw, tuple) else (getattr(raw, "epsilon", None), getattr(raw, "delta", None))
    if raw is form or eps is None or dl is None:
        return
    implied = form.epsilon_at(dl) if 0 < dl < 1 else math.inf
    if eps * (1 + 1e-9) < implied:
        how = ("pure DP, which no Renyi or zCDP bound implies" if dl == 0 else
               f"its conversion at delta {dl:.3g} is epsilon {implied:.6g}")
        if source == "claimed_form":
            raise ScenarioError(f"{who}: the claim states ({eps:.6g}, {dl:.3g})-DP besides {form.describe()}, which "
                                f"does not imply it ({how}); the check tests one claim: return the form, or the "
                                "(epsilon, delta) pair, from claimed_form and check each on its own")
        raise ScenarioError(f"{who}: {source} states ({eps:.6g}, {dl:.3g})-DP (the claim asyncdp run and sweeps "
                            f"record) besides claimed_form's {form.describe()}, which does not imply it ({how}); the "
                            "check tests claimed_form's claim only: return the form's conversion (or a looser pair, "
                            "or (inf, 0) for none) from claimed_privacy, or check the pair on its own by returning it "
                            "from claimed_form")


def focus_rounds(ledger: Ledger, sensitivity: Any, agent: int | None) -> tuple[int | None, tuple[Ledger, ...]]:
    """The rounds a per-iteration claim must be checked on: every round's releases, less the dominated rounds.

    A per-iteration claim bounds everything one round releases given the past: under unicast one copy per
    receiver, with several noisy channels one release per channel, all composed. Round ``A`` dominates
    round ``B`` when ``B``'s releases can be matched one to one with releases of ``A`` of the same
    mechanism and a ratio sensitivity/scale at least as large (a larger ratio, or one more release, never
    lowers the privacy loss), so only undominated rounds are kept (one of each set of equal rounds).

    Args:
        ledger: the realized ledger.
        sensitivity: ``release -> sensitivity`` (the accountant's).
        agent: the changed agent (its releases only), or ``None`` (every agent's: round adjacency).

    Returns:
        ``(focus, ledgers)``: the 0-based round the audits refer to (the kept round with the largest sum of
        squared Gaussian and plain Laplace ratios, the first on ties; ``None`` for an empty scope) and one
        ledger per kept round, in round order.

    Example:
        >>> from accounting.ledger import Release
        >>> g = lambda t, s, c="y": Release(0, t, float(t), "gaussian", s, 1, 1.0, c)
        >>> focus, kept = focus_rounds(Ledger([g(1, 1.0), g(2, 2.0), g(2, 2.0, "w"), g(3, 0.5)]), lambda r: 1.0, 0)
        >>> focus, [[r.round for r in led] for led in kept]
        (2, [[2, 2], [3]])
    """
    scope = ledger if agent is None else ledger.for_agent(agent)
    by_round: dict[int, list[Release]] = {}
    for r in scope:
        by_round.setdefault(r.round, []).append(r)
    keys = {}
    for t, rel in by_round.items():
        ratios: dict[str, list[float]] = {}
        for r in rel:
            ratios.setdefault(r.mechanism, []).append(float(sensitivity(r)) / r.scale)
        keys[t] = {m: sorted(v, reverse=True) for m, v in ratios.items()}

    def dominates(a: dict[str, list[float]], b: dict[str, list[float]]) -> bool:
        return all(len(a.get(m, ())) >= len(v) and all(x >= y for x, y in zip(a[m], v)) for m, v in b.items())

    kept: list[int] = []
    for t in sorted(keys):
        if any(dominates(keys[k], keys[t]) for k in kept):
            continue  # (an equal earlier round dominates it too)
        kept = [k for k in kept if not dominates(keys[t], keys[k])] + [t]
    kept.sort()
    if not kept:
        return None, ()

    def weight(t: int) -> float:
        k = keys[t]
        return math.fsum(x * x for x in k.get("gaussian", ())) + math.fsum(k.get("laplace", ()))

    focus = max(kept, key=lambda t: (weight(t), -t))
    return focus - 1, tuple(Ledger(by_round[t]) for t in kept)


def check_declarations(alg: Algorithm, horizon: int) -> None:
    """Every noisy channel's declaration of every round is a :class:`NoiseDeclaration` of the channel's mechanism.

    The engines draw each channel's noise from its :class:`~asyncdp.algorithms.base.Channel` mechanism and
    record the ledger from the round's declaration: a declaration of another mechanism (say Laplace for a
    Gaussian channel) would have the accountant compose noise the engine never draws (a pure epsilon for
    Gaussian noise).

    Args:
        alg: the bound rule.
        horizon: the rounds to check.

    Raises:
        ScenarioError: naming the rule, channel and round.

    Example:
        >>> from asyncdp.papers.huang2015.rule import Huang2015
        >>> sc = Huang2015.example_scenario()
        >>> check_declarations(sc.algorithm.bind(sc.problem), sc.horizon) is None
        True
    """
    for c in alg.noisy_channels():
        for t in range(1, horizon + 1):
            d = rule_noise(alg, t, c.name)
            if d.mechanism != c.mechanism:
                raise ScenarioError(f"{alg.name}: channel {c.name!r} draws {c.mechanism} noise but noise({t}, "
                                    f"{c.name!r}) declares {d.mechanism!r}: the ledger would compose noise the "
                                    "engine does not draw")


def check_deterministic(scenario: Scenario, alg: Algorithm, runs: EngineRuns, which: str = "scenario",
                        run: int = 0) -> None:
    """The rule's R and U steps are functions of their inputs in every round: along one realized engine run, each
    step is called twice on the same inputs (the R step with zero noise) and must return the same values.

    Every method of the check replays the rule: a release's noise-free value is the R step with zero noise, the
    states are recomputed by the U step. A rule that draws randomness the engine does not hand it (its noise from
    ``numpy.random``, say) has no noise-free value: the replay would read fresh noise as a shift of the data and
    refute a claim that may hold. Such a draw may start in any round, so the rule is replayed along run ``run`` of
    ``runs`` (its recorded releases and realized mixing give every round's inputs; :func:`replay_runs`) and both
    steps of every round are called twice. Each call gets its own copy of the state, noise and mixed values (a rule
    may work on them in place, as the engines hand it fresh ones); values numpy cannot compare (ragged sequences,
    say) are not told apart. A run that cannot be replayed is not checked (every replay-based method reports why).

    Args:
        scenario: the scenario (its problem and initial points).
        alg: its bound rule.
        runs: engine runs (their releases and schedules give the inputs; ``scenario``'s own, or the other
            scenario's, replayed under ``scenario``'s problem).
        which: how the error names the scenario (``"scenario"`` or ``"adjacent scenario"``).
        run: the run replayed (:meth:`CheckContext.check_run_deterministic` names one whose releases the replay
            does not explain).

    Raises:
        ScenarioError: naming the rule, scenario, agent, round, step and channel or state entry that differ.

    Example:
        >>> pair, ctx = small_example()
        >>> sc = pair.scenario
        >>> check_deterministic(sc, ctx.algorithm, ctx.engine_runs(0)) is None
        True
    """
    one = {name: m[run:run + 1] for name, m in runs.messages.items()}
    try:
        replay_runs(runs, scenario, None, algorithm=alg, schedules=runs.schedules[run:run + 1], messages=one,
                    wrap=lambda rule, _: _TwiceCalled(rule, which, run), losses=False)
    except AccountingError:  # not replayable: the replay-based methods say so
        return


class _TwiceCalled:
    """A replay rule whose R and U steps are each called twice on copies of their inputs and compared
    (:func:`check_deterministic`); it replays as the rule it wraps."""

    def __init__(self, inner: Any, which: str, run: int = 0) -> None:
        self.inner, self.which, self.run = inner, which, run

    def initial_state(self, runs: int) -> Any:
        return self.inner.initial_state(runs)

    def message_means(self, state: Any, t: int) -> Any:
        import copy

        out = [self.inner.message_means(copy.deepcopy(state), t) for _ in range(2)]
        _same_outputs(self.inner.algorithm, self.which, t, "message()", "channel", *out, run=self.run)
        return out[0]

    def next_state(self, state: Any, mixed: Any, t: int) -> Any:
        import copy

        out = [self.inner.next_state(copy.deepcopy(state), copy.deepcopy(dict(mixed)), t) for _ in range(2)]
        _same_outputs(self.inner.algorithm, self.which, t, "update()", "state entry", *out, run=self.run)
        return out[0]


def _same_outputs(alg: Algorithm, which: str, t: int, step: str, what: str, a: Any, b: Any, run: int = 0) -> None:
    """Raise :class:`ScenarioError` when two calls of one step returned other values (:func:`check_deterministic`)."""
    for k in a:
        if _differ(a[k], b[k]):
            agent = _first_agent(a[k], b[k])
            who = "some agent" if agent is None else f"agent {agent}"
            raise ScenarioError(
                f"{alg.name}: under the {which}, {step} of {who} in round {t} returned different values on "
                f"{what} {k!r} for the same state and noise (replayed along engine run {run}): the rule draws randomness "
                "the engine does not hand it (e.g. numpy.random); the check replays every release from the states "
                "and the engine's noise, so it cannot check this rule: draw every random value from the noise "
                "argument")


def _first_agent(a: Any, b: Any) -> int | None:
    """The first agent whose entries of two ``(runs, N, ...)`` outputs differ (NaN equals NaN), or ``None``.

    Example:
        >>> _first_agent(np.array([[[0.0], [1.0], [2.0]]]), np.array([[[0.0], [1.0], [3.0]]])), _first_agent("a", "b")
        (2, None)
    """
    try:
        x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if x.shape != y.shape or x.ndim < 2:
            return None
        off = ~((x == y) | (np.isnan(x) & np.isnan(y)))
        agents = np.flatnonzero(off.reshape(off.shape[0], off.shape[1], -1).any(axis=(0, 2)))
        return int(agents[0]) if agents.size else None
    except (TypeError, ValueError):
        return None


def _differ(a: Any, b: Any) -> bool:
    """Whether two outputs of a step differ (NaN equals NaN, mappings entry by entry); ``False`` for values numpy
    cannot compare (ragged sequences, say).

    Example:
        >>> _differ(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])), _differ("on", "off"), _differ(None, None)
        (False, True, False)
        >>> _differ({"a": np.zeros(2), "b": [1.0, 2.0, 3.0]}, {"a": np.ones(2), "b": [1.0]}), _differ([[1], [2, 3]], 0)
        (True, False)
    """
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() != b.keys() or any(_differ(a[k], b[k]) for k in a)
    try:
        x, y = np.asarray(a), np.asarray(b)
        if x.dtype.kind in "fc" and y.dtype.kind in "fc":
            return not np.array_equal(x, y, equal_nan=True)
        return not bool(np.array_equal(x, y))
    except (TypeError, ValueError):  # e.g. ragged or nested values: not told apart (the check does not refuse)
        return False


def no_release_error(scenario: Scenario, alg: Algorithm, eps_claimed: float, delta_claimed: float) -> ScenarioError:
    """The error of a run that released no noisy value: for a finite claim, where the declared noise went.

    A rule may declare noise that no message carries: in unicast mode an agent without an out-neighbour in a
    round sends nothing, so the noise it draws there is never released, while its later (noise-free) messages
    may still carry its data. A finite claim is then neither shown nor refuted: the error says so, naming the
    first noisy round and its silent agents, rather than suggesting an infinite epsilon.

    Args:
        scenario: the scenario checked; alg: its bound rule; eps_claimed, delta_claimed: its claim.

    Returns:
        The :class:`~asyncdp.errors.ScenarioError` to raise.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> sc = Muffliato.example_scenario().replace(mode="unicast")  # round 1 mixes with the identity
        >>> str(no_release_error(sc, sc.algorithm.bind(sc.problem), 14.8, 1e-6))[:60]
        'the scenario claims (14.8, 1e-06) but its run released no no'
    """
    if not math.isfinite(eps_claimed):
        return ScenarioError("the scenario releases no noisy values (epsilon = inf?): nothing to check")
    from ..papers.record import out_neighbour_counts

    noisy = [t for t in range(1, scenario.horizon + 1)
             if any((d := alg.noise(t, c.name)) is not None and d.scale > 0 for c in alg.noisy_channels())]
    why = "no round declares noise"
    if noisy:
        t = noisy[0]
        why = f"round {t} declares noise, but no message carrying it was released"
        if scenario.mode == "unicast":
            silent = np.flatnonzero(out_neighbour_counts(scenario.topology.weights(t)) == 0)
            if silent.size:
                why += (f": in unicast mode agent(s) {silent[:5].tolist()}{' ...' if silent.size > 5 else ''} have no out-neighbour in round {t}, so "
                        "they send nothing and the noise they draw is never released, while their later noise-free "
                        "messages may carry their data")
    return ScenarioError(f"the scenario claims ({eps_claimed:g}, {delta_claimed:g}) but its run released no noisy "
                         f"value ({why}): the check cannot test the claim, which rests on noise no release carries")


def prepare(pair: ScenarioPair, options: CheckOptions) -> CheckContext:
    """Check adjacency, run the scenario once and compute what the steps share.

    The ledger is that of one SimPy run of the scenario: with its own seed, or, when every seed's run releases
    the same ledger (:func:`~asyncdp.privacy.behavior.seed_free_ledger`) and the batch engine runs the check's
    runs, the SimPy run of run 0's seed, which :meth:`CheckContext.engine_runs` then compares with the batch
    engine's run 0 (one SimPy run for both).

    Args:
        pair: the scenario and the adjacent one.
        options: the check's options.

    Returns:
        The :class:`CheckContext` of the pair.

    Raises:
        AdjacencyError: the scenarios are not adjacent.
        ScenarioError: the algorithm releases no noise (nothing to check), or a scenario has its own
            noise source (``Scenario(noise=...)``). (A rule drawing randomness of its own is refused where a replay
            first fails to explain a release: :meth:`CheckContext.check_run_deterministic`.)

    Example:
        >>> pair, _ = small_example()
        >>> prepare(pair, CheckOptions(runs=10)).unnoised
        ()
    """
    scenario, adjacent = pair.scenario, pair.adjacent
    for name, sc in (("scenario", scenario), ("adjacent", adjacent)):
        if sc.noise is not None:
            # a noise source of the user's could hand out anything (e.g. normal draws with an atom at 0, which no
            # sampling test resolves): the check draws the privacy noise itself and verifies every release
            raise ScenarioError(f"check_privacy: {name} has its own noise source ({type(sc.noise).__name__}): the "
                                "check draws the privacy noise from the seed layout of asyncdp.noise and verifies "
                                "every release against those draws; build the scenario without noise=")
    adjacency = check_adjacency(scenario, adjacent)
    changed_round, agent = adjacency.round, adjacency.agent
    alg = scenario.algorithm.bind(scenario.problem)
    check_declarations(alg, scenario.horizon)
    eps_claimed, delta_claimed, claim_form = claimed(alg, scenario.horizon, options.delta)
    shared = options.engine != "simpy" and seed_free_ledger(scenario) and _batch_refusal(scenario) is None
    if shared:
        # every seed's run releases the same ledger: read it from the SimPy run the batch engine's run 0 is
        # compared with (CheckContext.engine_runs), run once for both
        result = simpy_run0(scenario, run_seeds(options.seed, 0, 1)[0])
    else:
        result = scenario.replace(record_transcript=False).run()
    if len(result.ledger) == 0:
        raise no_release_error(scenario, alg, eps_claimed, delta_claimed)
    from ..papers import find_registered

    sens: dict[str, np.ndarray] | None
    no_sensitivity = None
    paper = find_registered(alg)
    if paper is None:
        sens = None
        no_sensitivity = (f"{alg.name} has no paper record (asyncdp.papers), so no independent sensitivity lemma "
                          "exists: the declared noise is composed with nothing; to get a verdict beyond inconclusive, "
                          "register a record with your lemma and adjacency class (asyncdp.papers.register(Paper(...)), "
                          "the tutorial 'Write your own algorithm and check its privacy')")
    else:
        sens = paper.paper.sensitivity(scenario)
    unnoised = () if sens is None else tuple(
        t for t in range(1, scenario.horizon + 1)
        if any(alg.noise(t, c).scale == 0 and s[t - 1] > 0 for c, s in sens.items()))
    focus, focus_ledgers = None, ()
    if alg.claim_level == "iteration" and sens is not None:
        # a per-iteration claim bounds each round's releases given the past, not the run
        focus, focus_ledgers = focus_rounds(result.ledger, release_sensitivity(sens), agent)
    single = len(alg.noisy_channels()) == 1
    ctx = CheckContext(
        options=options, algorithm=alg, epsilon_claimed=eps_claimed, delta_claimed=delta_claimed,
        changed_agent=agent, changed_round=changed_round, ledger=result.ledger, sensitivity=sens,
        unnoised=unnoised, focus=focus, focus_ledgers=focus_ledgers,
        rule=replay_rule(scenario) if single else None, rule_adjacent=replay_rule(adjacent) if single else None,
        setup=replay_setup(scenario) if single else None, pair=pair, no_sensitivity=no_sensitivity, paper=paper,
        claim_form=claim_form, adjacency=adjacency, state_magnitude=decision_magnitude(result.trajectory),
    )
    if shared:
        ctx.cache["simpy0"] = result
    return ctx


def decision_magnitude(trajectory: Any) -> float:
    """The largest absolute finite value of a run's decisions ``x_i(t)`` (0 when none is finite).

    A rule may release offsets from its states (``y = x - x_ref + noise`` with ``x`` near ``1e8``): its
    released values are small, but its means are rounded at the states' resolution. A shift of two replayed
    means then carries the spacing of the states, not of the releases.

    Example:
        >>> decision_magnitude(np.array([[[1e8, -3.0]], [[np.nan, 2.0]]]))
        100000000.0
    """
    a = np.abs(np.asarray(trajectory, dtype=float))
    finite = a[np.isfinite(a)]
    return float(finite.max()) if finite.size else 0.0


def small_pair(rule: type | None = None) -> ScenarioPair:
    """A small adjacent pair: huang2015 on 3-agent rendezvous, 5 rounds; agent 0's address differs.

    Args:
        rule: a subclass of :class:`~asyncdp.papers.huang2015.rule.Huang2015` to run instead, with the same
            parameters (e.g. a rule that misbehaves, for a test); ``None``: Huang2015 itself.

    Returns:
        The pair (not checked: :func:`small_example` also prepares its context).

    Example:
        >>> small_pair().scenario.algorithm.name
        'huang2015'
    """
    import topology

    from ..papers.huang2015.rule import Huang2015
    from ..problems.problem import rendezvous_problem

    problem = rendezvous_problem([[1.0, 1.0], [0.0, 0.5], [-0.5, 0.0]])
    weights = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    scenario = Scenario(problem, topology.static(weights), (rule or Huang2015)(epsilon=1.0, c=0.05, q=0.2, p=0.6),
                        horizon=5, seed=1)
    return ScenarioPair(scenario, scenario.replace(problem=problem.adjacent(0, address=[-1.0, -1.0])))


def small_example(runs: int = 200, **options: Any) -> tuple[ScenarioPair, CheckContext]:
    """:func:`small_pair` (huang2015 on 3-agent rendezvous, 5 rounds) and its context, for examples and tests.

    Args:
        runs: the ``runs`` option of the context.
        **options: further :class:`CheckOptions`.

    Returns:
        ``(pair, context)``; agent 0's address differs.
    """
    pair = small_pair()
    return pair, prepare(pair, CheckOptions(runs=runs, **options))
