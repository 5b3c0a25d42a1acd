"""The outcome of a privacy check: :class:`PrivacyCheckReport`, with its table and JSON forms."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .evidence import Evidence, _json

__all__ = ["PrivacyCheckReport", "describe_claim"]


@dataclass
class PrivacyCheckReport:
    """The outcome of :func:`~asyncdp.privacy.check_privacy` (JSON-ready through :meth:`to_dict`).

    Every field is a figure of one step of the check (see
    :mod:`asyncdp.privacy.steps`) or the verdict (:mod:`asyncdp.privacy.verdict`).
    The steps' own records are in :attr:`evidence` (not a dataclass field:
    the table and :meth:`to_dict` list the fields only; ``asyncdp privacy
    check --json`` adds them as ``"evidence"``).
    """

    algorithm: str
    changed_agent: int | None
    epsilon_claimed: float
    delta_claimed: float
    epsilon_ledger: float
    epsilon_tight: float
    delta: float
    sensitivity_probe_max: float
    sensitivity_probe_ratio: float
    replay_max_loss: float | None
    replay_exceed_fraction: float | None
    replay_runs: int
    empirical_epsilon_lower_bound: float
    confidence: float
    theorem: str
    verdict: str
    witness: dict[str, Any] | None
    reasons: list[str]
    epsilon_at_claimed_delta: float | None = None
    """PLD epsilon at the claimed delta (``None`` for pure-DP claims)."""
    changed_round: int | None = None
    """Round adjacency (online losses): the round whose loss differs; ``changed_agent`` is then ``None``."""
    engine: str | None = None
    """The engine that produced the runs the realized-behavior methods read (and why)."""
    conformance_min_scale_ratio: float | None = None
    """Smallest estimated/declared noise scale ratio over the released noise (1 when it conforms)."""
    worst_case_loss: float | None = None
    """The largest constructed-transcript privacy loss of the worst-case search."""
    worst_case_pair: str | None = None
    """How the worst pair was built."""
    worst_case_runs: int | None = None
    """Engine runs of the worst pair the check simulated (claims with delta > 0; at most ``--runs``: a sequential
    plan stops at the first look that decides)."""
    worst_pair_script: str | None = None
    """A runnable script of the worst pair (not in the table; ``asyncdp privacy check --worst-pair FILE`` writes it)."""
    paper: str | None = None
    """The paper record the check used (found through the algorithm's class MRO), or ``None``."""
    sensitivity_source: str | None = None
    """Where the independent sensitivity came from: a published paper's lemma, or the user's own (quoting the
    user's reference)."""
    claim_form: str | None = None
    """The claim's form: ``"pure"``, ``"approximate"``, ``"renyi"`` or ``"zcdp"`` (``None`` for no finite claim)."""
    claim: dict[str, Any] | None = None
    """The claim as the rule states it (:meth:`accounting.claim_forms.PureDP.to_dict`, e.g. ``{"form": "zcdp",
    "rho": 0.3}``). For a Rényi or zCDP claim ``epsilon_claimed`` and ``delta_claimed`` are its conversion at the
    check's delta (``--delta``), which the verdict compares with, besides the accountant's own Rényi/zCDP bound."""

    _evidence = ()  # not annotated: not a dataclass field (set by with_evidence)

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """What each step of the check found, in step order (empty for a report built by hand)."""
        return tuple(self._evidence)

    def with_evidence(self, evidence: tuple[Evidence, ...] | list[Evidence]) -> PrivacyCheckReport:
        """Attach the steps' evidence (in step order) and return the report.

        Args:
            evidence: the :class:`~asyncdp.privacy.evidence.Evidence` of each step.

        Returns:
            ``self``, with :attr:`evidence` set.

        Raises:
            TypeError: an item is not an :class:`~asyncdp.privacy.evidence.Evidence`.
        """
        items = tuple(evidence)
        bad = [e for e in items if not isinstance(e, Evidence)]
        if bad:
            raise TypeError(f"evidence must hold Evidence items, got {bad[0]!r}")
        self._evidence = items
        return self

    @property
    def epsilon_accountant(self) -> float:
        """The accountant's epsilon the verdict compares with the claim (see :func:`check_privacy`)."""
        return _accountant_epsilon(self.epsilon_ledger, self.epsilon_at_claimed_delta)

    def to_dict(self) -> dict[str, Any]:
        """All fields and ``epsilon_accountant``; non-finite floats as strings (JSON-ready)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: _json(v) for k, v in {**values, "epsilon_accountant": self.epsilon_accountant}.items()}

    def _tight_note(self) -> str:
        """Why ``epsilon_tight`` is not the verdict's epsilon, and why it may exceed the claim."""
        note = (f"PLD at delta = {self.delta:.3g}, the check's delta (--delta); a figure for comparison, not the "
                "verdict's bound (the accountant's epsilon above)")
        if self.epsilon_tight > self.epsilon_claimed:
            if self.delta < self.delta_claimed:
                why = f"it is taken at delta {self.delta:.3g}, below the claimed {self.delta_claimed:.3g}"
            elif self.epsilon_accountant > self.epsilon_claimed:
                why = (f"the declared noise spends more than the claim (the accountant's epsilon is "
                       f"{self.epsilon_accountant:.6g}; see the verdict)")
            else:
                why = "the PLD rounds privacy losses up to its grid (pessimistic discretization)"
            note += f"; above the claim because {why}"
        return note

    def to_table(self) -> str:
        """The verdict and the epsilon behind it first, then every field, then the reasons.

        Example:
            >>> report = PrivacyCheckReport(
            ...     algorithm="a", changed_agent=0, epsilon_claimed=1.0, delta_claimed=1e-3,
            ...     epsilon_ledger=6.9, epsilon_tight=1.0, delta=1e-6, sensitivity_probe_max=0.0,
            ...     sensitivity_probe_ratio=0.0, replay_max_loss=None, replay_exceed_fraction=None,
            ...     replay_runs=0, empirical_epsilon_lower_bound=0.0, confidence=0.95, theorem="-",
            ...     verdict="pass", witness=None, reasons=[], epsilon_at_claimed_delta=0.56)
            >>> print("\\n".join(report.to_table().splitlines()[:3]))
            verdict                        pass
            claim                          epsilon 1, delta 0.001
            accountant's epsilon           0.56 (PLD at the claimed delta; basic composition: 6.9)
        """
        d = self.to_dict()
        w = max(len(k) for k in d)
        if self.epsilon_at_claimed_delta is None:
            how = "basic composition"
        elif self.epsilon_at_claimed_delta <= self.epsilon_ledger:
            how = f"PLD at the claimed delta; basic composition: {self.epsilon_ledger:.6g}"
        else:
            how = f"basic composition; PLD at the claimed delta: {self.epsilon_at_claimed_delta:.6g}"
        label = "accountant's epsilon"
        claim = f"epsilon {self.epsilon_claimed:.6g}, delta {self.delta_claimed:.6g}"
        converted = self.claim_form in ("renyi", "zcdp") and self.claim is not None
        if converted:
            claim = (f"{describe_claim(self.claim)}, tested as stated (the accountant's own divergences, the worst "
                     "pairs' divergence bounds) and through its conversion to epsilon "
                     f"{self.epsilon_claimed:.6g} at delta {self.delta_claimed:.6g} (--delta)")
        lines = [
            f"{'verdict':<{w}}  {self.verdict}",
            f"{'claim':<{w}}  {claim}",
            f"{label:<{w}}  {self.epsilon_accountant:.6g} ({how})",
            "",
        ]
        for k, v in d.items():
            if k in ("reasons", "verdict", "epsilon_accountant", "worst_pair_script"):
                continue
            if k == "witness" and isinstance(v, dict):
                v = f"{v.get('kind', '?')} (below)"
            elif k == "epsilon_tight" and isinstance(v, float):
                v = f"{v:.6g} ({self._tight_note()})"
            elif k == "delta" and isinstance(v, float) and converted:
                v = (f"{v:.3g} (the check's delta (--delta): where the claim is converted to (epsilon, delta), "
                     "and the delta of epsilon_tight)")
            elif k == "delta" and isinstance(v, float):
                pure = "; the claim is pure (delta 0)" if self.delta_claimed == 0 else ""
                v = f"{v:.3g} (the check's delta (--delta), used only for epsilon_tight{pure})"
            elif k == "claim" and isinstance(v, dict):
                v = describe_claim(v)
            lines.append(f"{k:<{w}}  {v:.6g}" if isinstance(v, float) else f"{k:<{w}}  {v}")
        if isinstance(self.witness, dict):
            lines += ["", "witness (a counterexample to the claim):"]
            kw = max(len(str(k)) for k in self.witness)
            for k, v in self.witness.items():
                if k == "script":
                    v = "(the worst pair as a runnable script: --worst-pair FILE writes it)"
                elif k == "p_value" and v == 0.0:
                    v = "< 1e-300 (below the smallest float)"
                elif isinstance(v, float):
                    v = f"{v:.6g}"
                elif isinstance(v, list) and v and isinstance(v[0], float):
                    v = "[" + ", ".join(f"{x:.6g}" for x in v) + "]"
                lines.append(f"  {k:<{kw}}  {v}")
        if self._evidence:
            lines += ["", "methods (what each checked against):"]
            lines += [f"  {e.method:<30} {e.checked_against:<24} {_finding(e)}" for e in self._evidence]
        lines += [f"  - {r}" for r in self.reasons]
        return "\n".join(lines)


def describe_claim(claim: dict[str, Any]) -> str:
    """A claim dict (``to_dict`` of a claim form) in words, e.g. ``"0.3-zCDP"``.

    Args:
        claim: ``{"form": ..., **parameters}``; an unknown form is shown as the dict.

    Returns:
        The claim form's own description.

    Example:
        >>> describe_claim({"form": "zcdp", "rho": 0.3})
        '0.3-zCDP'
    """
    from accounting.claim_forms import ApproxDP, PureDP, RenyiDP, ZeroConcentratedDP

    forms: dict[str, Any] = {"pure": PureDP, "approximate": ApproxDP, "renyi": RenyiDP, "zcdp": ZeroConcentratedDP}
    cls = forms.get(str(claim.get("form")))
    if cls is None:
        return str(claim)
    return str(cls(**{k: v for k, v in claim.items() if k != "form"}).describe())


def _finding(e: Evidence) -> str:
    """One evidence's outcome in a few words: witness, doubt, bound, or nothing found."""
    if e.witness is not None:
        return "WITNESS against the claim"
    if e.doubt is not None:
        return "doubt: " + e.doubt[:60] + ("..." if len(e.doubt) > 60 else "")
    if e.bound is not None:
        return f"bound epsilon <= {e.bound:.6g}"
    return "nothing refutes the claim" if not e.reasons else e.reasons[0][:70]


def _accountant_epsilon(eps_ledger: float, eps_at_claimed: float | None) -> float:
    """Basic composition, or the smaller of it and PLD at the claimed delta when that exists."""
    return eps_ledger if eps_at_claimed is None else min(eps_ledger, eps_at_claimed)
