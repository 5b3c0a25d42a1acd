"""``asyncdp privacy check SCRIPT.py``: check a scenario's privacy claim independently.

The script defines ``scenario`` and ``adjacent`` (the same scenario with one
agent's cost changed); see :func:`asyncdp.privacy.check_privacy`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .arguments import count, format_bytes, nonnegative_int, open_unit, require_memory
from .outputs import prepare_file

__all__ = ["register", "check_command", "EXIT_CODES"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``privacy`` command with its ``check`` sub-command."""
    p = subparsers.add_parser(
        "privacy", help="independent privacy checks",
        description="Independent privacy checks of a scenario against an adjacent one.",
    )
    sub = p.add_subparsers(dest="privacy_command", metavar="SUBCOMMAND", required=True)
    c = sub.add_parser(
        "check", help="check the claimed (epsilon, delta) of SCRIPT.py",
        description="Check the claimed (epsilon, delta) of SCRIPT.py (which defines `scenario` and `adjacent`) on "
        "what the engine actually releases: compose the realized ledger with the accountant's own sensitivity, "
        "probe the update, test the released noise against the declared noise, replay every engine run exactly "
        "on its realized schedule (any timing, lossy links), audit the engine's transcripts black-box, and search "
        "the worst adjacent pair of the paper's class.",
        epilog="exit codes: 0 pass, 1 violation, 3 inconclusive, 4 no-claim, 2 unusable input (one "
        "'asyncdp: error:' line), 130 interrupted, 141 the output's reader went away. The statistical witnesses share 1 - confidence (union bound); "
        "with --observer, the observer's black-box bound and the pairwise claim's sampled bounds each have their own "
        "(printed with them), so a verdict with the pairwise claim holds at confidence 1 - 2 (1 - confidence). "
        "Output files are checked before the check runs; an existing file is replaced (said on stderr).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    c.add_argument("script", metavar="SCRIPT.py")
    c.add_argument("--runs", type=count, default=2000,
                   help="engine runs per scenario (noise conformance, exact replay, black-box audit)")
    c.add_argument("--delta", type=open_unit, default=1e-6,
                   help="delta, in (0, 1), for the tight (PLD) epsilon; for a Renyi or zCDP claim also the delta at which "
                   "its (epsilon, delta) conversion is checked")
    c.add_argument("--confidence", type=open_unit, default=0.95,
                   help="family-wise confidence of the statistical witnesses")
    c.add_argument("--seed", type=nonnegative_int, default=0, help="the one seed of every draw of the check")
    c.add_argument("--engine", choices=("auto", "batch", "simpy"), default="auto",
                   help="engine of the runs (auto: batch where it applies, else SimPy)")
    c.add_argument("--search-examples", type=nonnegative_int, default=30,
                   help="pairs drawn by the worst-case pair search before its hill climb (0: extremal pairs only)")
    c.add_argument("--worst-pair", metavar="OUT.py", default=None,
                   help="write the worst adjacent pair found as a runnable scenario script")
    c.add_argument("--json", metavar="OUT.json", default=None,
                   help="write the report as JSON to OUT (with each method's evidence under \"evidence\")")
    c.add_argument("--observer", default="eavesdropper",
                   help="who observes: eavesdropper (every message), node:V (the messages arriving at V, plus V's "
                   "own data, noise and state), nodes:A,B (colluders), link:A,B. With node:V or nodes:S, a paper's "
                   "pairwise network DP claim is verified on the observer's pairs (u -> V for every u): a pair above "
                   "it is a violation, with the pair and the round")
    c.set_defaults(func=check_command)
    _register_network(sub)
    from . import audit  # ``privacy audit MODULE.py``: the black-box auditor of any mechanism

    audit.register(sub)


EXIT_CODES = {"pass": 0, "violation": 1, "inconclusive": 3, "no-claim": 4}
"""The exit code of ``asyncdp privacy check`` per verdict (2 is the CLI's unusable-input code)."""


def check_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp privacy check``; the exit code tells the verdict (:data:`EXIT_CODES`)."""
    from ..privacy.check import check_privacy
    from ..privacy.evidence import _json
    from ..scenario import load_script

    worst_pair = args.worst_pair and prepare_file(args.worst_pair, "--worst-pair", (".py",), inputs=[args.script])
    json_out = args.json and prepare_file(args.json, "--json", (".json",))
    loaded = load_script(args.script, names=("scenario", "adjacent"))
    observer = _observer_of(args.observer, loaded["scenario"])
    need = _check_memory_estimate(loaded["scenario"], args.runs)
    require_memory(need, f"--runs {args.runs}", "released messages, their replays and residuals for every run of "
                   f"both scenarios, about {format_bytes(need / args.runs)} per run")
    report = check_privacy(loaded["scenario"], loaded["adjacent"], runs=args.runs, delta=args.delta,
                           confidence=args.confidence, seed=args.seed, engine=args.engine,
                           search_examples=args.search_examples, script=args.script)
    verdict = report.verdict
    section = pairwise = None
    observer_data: dict[str, Any] = {}  # the observer section's findings, for --json
    if str(observer) != "eavesdropper":
        section = _observer_section(loaded["scenario"], loaded["adjacent"], observer, args, observer_data)
        pairwise = _pairwise_claim_section(loaded["scenario"], observer, args)
        if pairwise is not None:
            verdict = combined_verdict(report.verdict, pairwise.verdict)
    if verdict != report.verdict:  # the first line is the command's verdict (its exit code and --json's), as always
        print(f"verdict with the pairwise claim: {verdict} (the check below, of the eavesdropper's view: "
              f"{report.verdict}; the pairwise claim's section at the end)")
    print(report.to_table())
    if section is not None:
        print(section)
    if pairwise is not None:
        print(pairwise.to_table())
        if verdict != report.verdict:
            print(f"verdict with the pairwise claim: {verdict}" + _pairwise_witness_note(report, pairwise))
    if worst_pair and report.worst_pair_script is not None:
        worst_pair.write_text(report.worst_pair_script)
        print(f"worst adjacent pair written to {worst_pair.path}")
    if json_out:
        data = {**report.to_dict(), "evidence": [e.to_dict() for e in report.evidence]}
        if observer_data:
            data["observer"] = observer_data
        if pairwise is not None:
            data["pairwise_claim"] = pairwise.to_dict()
            data["verdict_without_pairwise_claim"] = report.verdict
            data["verdict"] = verdict
            if verdict == "violation" and report.witness is None:  # the violation is the pairwise claim's alone
                data["witness"] = pairwise.witness()
        json_out.write_text(json.dumps(_json(data), indent=2, allow_nan=False))
    return EXIT_CODES[verdict]


def combined_verdict(check: str, pairwise: str) -> str:
    """The check's verdict with the pairwise claim's: a violation of either is a violation; a pass needs both.

    Example:
        >>> combined_verdict("pass", "violation"), combined_verdict("pass", "inconclusive")
        ('violation', 'inconclusive')
    """
    if "violation" in (check, pairwise):
        return "violation"
    if check == "pass" and pairwise != "pass":
        return "inconclusive"
    return check


def _pairwise_witness_note(report: Any, pairwise: Any) -> str:
    """The witness of a violation that is the pairwise claim's alone (``--json``'s top-level ``witness``), in words."""
    w = pairwise.witness() if pairwise.verdict == "violation" and report.witness is None else None
    if w is None:
        return ""
    what = "lower confidence bound " if w["method"] != "exact" else ""
    value = f"{w['value']:.6g}" if isinstance(w["value"], float) else w["value"]  # "inf" as in the JSON
    return (f" (witness: the pairwise claim's, u={w['u']} -> v={w['v']}: {what}{value} > claimed "
            f"{w['claimed']:.6g}, {w['method']}, confidence {w['confidence']:g})")


def _pairwise_claim_section(scenario: Any, observer: Any, args: argparse.Namespace) -> Any:
    """The paper's pairwise claim on the node observer's pairs (:mod:`asyncdp.privacy.observer_claim`), or
    ``None`` (no such claim, or not a node observer)."""
    from ..privacy.observer_claim import check_observer_claim

    # the SimPy engine whatever --engine says: the pairwise figures replay each run's messages and deliveries,
    # which the batch engine does not keep per run (--engine chooses the engine of the check above)
    return check_observer_claim(scenario, observer, runs=max(2, min(args.runs, 100)), seed=args.seed,
                                engine="simpy", confidence=args.confidence)


def _observer_of(text: str, scenario: Any) -> Any:
    from ..privacy.observer_views import parse_observer

    return parse_observer(text, scenario.problem.num_agents)


def _observer_section(scenario: Any, adjacent: Any, observer: Any, args: argparse.Namespace,
                      record: dict[str, Any] | None = None) -> str:
    """The observer's figures for the changed agent: exact for a rule verified affine in the noise, else the
    eavesdropper's bound (data processing); the verdict above is the eavesdropper's, an upper bound for every
    observer. ``record``, if given, receives the same findings JSON-ready (``--json`` writes them under
    ``"observer"``): the figures, the changed agent, ``claim_holds`` (``None``: no verdict from the figure), the
    black-box lower bound where one was run, and the printed finding lines."""
    import math

    from ..privacy.adjacency import find_changed_agent
    from ..privacy.network import deterministic_schedule
    from ..privacy.observers import STRUCTURAL, pairwise_figures

    from ..privacy.context import claimed

    u = find_changed_agent(scenario, adjacent, seed=args.seed)
    # the claim the check tests (a Renyi or zCDP claim_form: its conversion at --delta), not claimed_privacy alone
    eps_c, delta_c, form = claimed(scenario.algorithm.bind(scenario.problem), scenario.horizon, args.delta)
    delta = delta_c if delta_c > 0 else args.delta
    named = "" if form is None or form.form in ("pure", "approximate") else f"{form.describe()}, as "
    fig = pairwise_figures(scenario, observer, sources=[u], seed=args.seed, delta=delta, adjacent=adjacent)
    row = fig.rows[0]
    holds_datum = observer.kind == "nodes" and u in observer.agents  # its loss is infinite, and no DP question
    lines = [f"observer {fig.observer} (changed agent {u}):", fig.to_table()]
    data: dict[str, Any] = {**fig.to_dict(), "changed_agent": u, "claim_holds": None, "blackbox": None}
    if row.kind == "exact" and math.isfinite(row.epsilon) and not deterministic_schedule(scenario):
        lines.append(f"  exact epsilon at delta {delta:.3g} on this run's realized schedule: {row.epsilon:.6g}; the "
                     "schedule is random (timing or lossy links) and the claim is about every schedule the observer "
                     "may see: one schedule is no verdict against this observer")
    elif row.kind == "exact" and (math.isfinite(row.epsilon) or (deterministic_schedule(scenario) and not holds_datum)):
        # an exact infinite loss (the view holds a noise-free function of u's datum) fails every finite claim
        level = getattr(scenario.algorithm, "claim_level", "run")
        holds, why = observer_claim_holds(form, eps_c, delta_c, math.sqrt(2.0 * row.renyi / fig.alpha), level)
        data["claim_holds"] = holds
        said = {True: "holds", False: "fails", None: "has no verdict"}[holds]
        per = " per iteration" if level == "iteration" else ""
        lines.append(f"  the claim ({named}{eps_c:.6g}, {delta_c:.3g}){per} {said} against this observer: its exact "
                     f"epsilon at delta {delta:.3g} is {row.epsilon:.6g} (exact, on this run's realized schedule); in "
                     f"the claim's own form, {why}")
    elif row.kind == STRUCTURAL and deterministic_schedule(scenario):
        # the bound holds, the computed value (an artifact) does not: a pass if the bound meets the claim, else none
        level = getattr(scenario.algorithm, "claim_level", "run")
        holds = observer_claim_holds(form, eps_c, delta_c, math.sqrt(2.0 * row.renyi / fig.alpha), level)[0]
        data["claim_holds"] = True if holds else None
        lines.append(f"  the claim ({named}{eps_c:.6g}, {delta_c:.3g}) "
                     + ("holds against this observer: the view is a function of Gaussian releases of shift "
                        "Delta / s_1, whose bound above meets it" if holds else
                        "has no verdict against this observer: the bound above does not meet it and the computed "
                        "value is a numerical artifact"))
    elif row.kind == "upper bound":
        from ..privacy.observers import observer_blackbox

        runs = max(2, min(args.runs, 300))
        audit = observer_blackbox(scenario, adjacent, observer, runs=runs, seed=args.seed,
                                  epsilon=eps_c if math.isfinite(eps_c) else 30.0, delta=delta_c,
                                  confidence=args.confidence)
        lines.append("  upper bound only (the eavesdropper's composition bound, by data processing)")
        data["blackbox"] = {"runs": runs, "confidence": args.confidence,
                            "epsilon_lower_bound": float(audit.epsilon_lower_bound), "violation": bool(audit.violation)}
        # the bound is on the whole view: above a claim per iteration (one iteration's part) it is no verdict
        per_iteration = getattr(scenario.algorithm, "claim_level", "run") == "iteration"
        if audit.violation and not per_iteration:
            data["claim_holds"] = False
        said = ("" if not audit.violation else " (refutes the claim against this observer)" if not per_iteration else
                " (above the claim per iteration, but it bounds the whole view, not one iteration's part: no verdict "
                "against this observer)")
        lines.append(f"  black-box lower bound from the observer's view ({runs} runs per side, confidence "
                     f"{args.confidence:g}): epsilon >= {audit.epsilon_lower_bound:.4g}{said}")
    else:
        lines.append(f"  {row.kind}: no verdict against this observer from this figure")
    if record is not None:
        record.update(data, findings=[line.strip() for line in lines[2:]])
    return "\n".join(lines)


def observer_claim_holds(form: Any, epsilon: float, delta: float, mu: float,
                         level: str = "run") -> tuple[bool | None, str]:
    """Whether an observer whose exact view of the changed datum is a Gaussian mean shift ``mu`` meets the claim.

    The claim is judged in its own form, never through a conversion alone: ``(epsilon, delta)`` by the exact
    profile, ``delta(epsilon) <= delta`` (Balle and Wang 2018, Thm 8); pure DP (``delta = 0``) only by a view that
    does not move (a Gaussian shift's privacy loss is unbounded); Rényi ``(alpha, epsilon)`` and ``rho``-zCDP by
    the exact divergence ``alpha mu^2 / 2`` against the claim's bound at the order (Rényi: the claimed order;
    zCDP: any order, both sides are linear in it). A Rényi or zCDP claim whose ``(epsilon, delta)`` conversion the
    view meets may still fail here.

    A claim per iteration (``level="iteration"``) holds when the whole view meets it (one iteration's part is a
    function of the whole view). A whole view above it gives no verdict (``None``), except for a pure claim:
    pure guarantees compose (``T`` iterations give ``(T epsilon, 0)``), which no moving Gaussian view meets.

    Args:
        form: the claim form (:mod:`accounting.claim_forms`; ``None``: no finite claim).
        epsilon, delta: the claim as the check tests it (a Rényi or zCDP claim: its conversion; not used then).
        mu: the view's Gaussian parameter, ``>= 0``.
        level: the rule's ``claim_level``, ``"run"`` or ``"iteration"``.

    Returns:
        ``(holds, why)``: ``holds`` is ``True``, ``False`` or ``None`` (no verdict), ``why`` the figures compared,
        in words.

    Example:
        >>> from accounting.claim_forms import ZeroConcentratedDP
        >>> observer_claim_holds(ZeroConcentratedDP(0.45), 4.92, 1e-6, 1.0)
        (False, 'its exact Renyi divergence of order 2 is 1, above the 0.9 the claim allows (rho alpha)')
        >>> from accounting.claim_forms import PureDP
        >>> observer_claim_holds(PureDP(6.0), 6.0, 0.0, 1.0)[0], observer_claim_holds(PureDP(6.0), 6.0, 0.0, 0.0)[0]
        (False, True)
        >>> observer_claim_holds(ZeroConcentratedDP(0.45), 4.92, 1e-6, 1.0, "iteration")[0] is None
        True
    """
    import math

    from accounting.network.gaussian_views import delta_from_mu, renyi_from_mu

    if form is None or not math.isfinite(epsilon):
        return True, "the rule claims no finite epsilon"
    kind = form.form
    pure = False
    if kind in ("renyi", "zcdp"):
        order = float(getattr(form, "alpha", 2.0))
        value, allowed = renyi_from_mu(mu, order), form.renyi_bound(order)
        holds = value <= allowed * (1 + 1e-9)
        unit = "rho alpha" if kind == "zcdp" else "the claimed order's epsilon"
        why = (f"its exact Renyi divergence of order {order:g} is {value:.6g}, "
               f"{'within' if holds else 'above'} the {allowed:.6g} the claim allows ({unit})")
    elif delta == 0:
        pure, holds = True, mu == 0
        why = ("its view does not depend on the changed datum (mu = 0)" if holds else
               f"its view is a Gaussian mean shift (mu = {mu:.6g}) whose privacy loss is unbounded: no epsilon holds "
               "with delta 0")
    else:
        exact = delta_from_mu(mu, epsilon)
        holds = exact <= delta * (1 + 1e-9)
        why = f"its exact delta at epsilon {epsilon:.6g} is {exact:.6g} (claimed {delta:.3g})"
    if holds or level != "iteration":
        return holds, why
    if pure:
        return False, why + "; pure per-iteration guarantees would make the whole view (horizon x epsilon, 0)-DP"
    return None, why + "; the whole view exceeds the claim, one iteration's part may not"


def _register_network(sub: Any) -> None:
    n = sub.add_parser(
        "network", help="the pairwise leakage matrix of SCRIPT.py (loss from every u to every v)",
        description="The pairwise leakage matrix of the scenario in SCRIPT.py: the exact Renyi divergence from "
        "every agent u's datum to every node v's view (the messages arriving at v, v's own data, noise and "
        "state), on the run's realized schedule, for rules verified affine in the noise; rows are computed and "
        "written one observer at a time. Writes leakage.csv (row v, column u), leakage.json, leakage.png "
        "(heatmap) and by_distance.csv/png (loss against shortest-path distance). A paper's pairwise claim is "
        "checked per pair, with witnesses (pair and round).",
        epilog="exit codes: 0 done (and the pairwise claim holds or there is none), 1 the pairwise claim fails, "
        "3 inconclusive (or not checked: another --alpha than the claim's order, a run the claim does not describe), "
        "2 unusable input.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    n.add_argument("script", metavar="SCRIPT.py")
    n.add_argument("--out", default="out/network", help="output directory")
    n.add_argument("--alpha", type=float, default=2.0, help="Renyi order (> 1)")
    n.add_argument("--engine", choices=("simpy",), default="simpy",
                   help="engine of the run (the SimPy engine: the figures replay the run's messages and deliveries)")
    n.add_argument("--witnesses", type=nonnegative_int, default=5, help="witness pairs to report")
    n.add_argument("--workers", type=count, default=1, help="processes over which the observers are spread (a "
                   "lockstep, lossless gossip scenario; the values do not depend on it)")
    n.set_defaults(func=network_command)


def network_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp privacy network``."""
    import math

    from ..errors import ScenarioError, TopologyMismatchError
    from ..privacy.network import check_pairwise_claim, leakage_rows, pairwise_claim_of
    from ..scenario import load_script
    from .outputs import prepare_dir

    if not (args.alpha > 1 and math.isfinite(args.alpha)):
        raise ScenarioError(f"argument --alpha: must be a finite number > 1, got {args.alpha!r}")
    out = prepare_dir(args.out, "--out")
    scenario = load_script(args.script, names=("scenario",))["scenario"]
    from ..privacy.network_outputs import write_leakage

    rows = write_leakage(scenario, leakage_rows(scenario, alpha=args.alpha, engine=args.engine, workers=args.workers),
                         out.path)
    code = 0
    try:
        claim = pairwise_claim_of(scenario)
    except TopologyMismatchError as e:  # the paper's claim does not describe this run
        print(f"the paper's pairwise claim: inconclusive: not checked: {e}")
        claim, code = None, 3
    if claim is not None and abs(claim.alpha - args.alpha) < 1e-12:
        check = check_pairwise_claim(scenario, claim, rows, max_witnesses=args.witnesses)
        print(check.to_table())
        code = {"pass": 0, "violation": 1, "inconclusive": 3}[check.verdict]
    elif claim is not None:  # not checked: exit 0 would say it holds
        print(f"the paper's pairwise claim: inconclusive: not checked: it is of order {claim.alpha:g}, the matrix of "
              f"order {args.alpha:g}; rerun with --alpha {claim.alpha:g} to check it")
        code = 3
    print(f"leakage matrix written to {out.path}")
    return code


CHECK_BYTES_PER_COORDINATE = 96.0
"""Peak bytes of a check per released coordinate of one side's runs (runs x rounds x agents x dim). Measured peak RSS
over coordinates of both sides (/usr/bin/time, --runs 1000): 74 and 77 (huang2015, 50 agents, dim 10, 200 and 50
rounds: 14.9 and 3.9 GB), 79 (a Laplace gradient rule, 20 agents, dim 10, 100 rounds), 105 (the same under Async,
50 rounds: 2.1 GB, of which the interpreter's fixed 0.3 GB: 90 without it), 96 and 101 (DPSDA-C, 30 agents and dim
30, 60 rounds: 10.4 GB; 20, 20, 40: 3.2 GB, 91 without the fixed 0.3 GB). 96 covers every measurement once the
interpreter's fixed 0.3 GB is set aside. The check holds about eleven float64 arrays of that size per side (messages,
replays, residuals, losses, sorted copies). With 16 bytes, a DPSDA-C check of 50 agents and 100 rounds (about 48
GB) started on a 24 GB machine. Unicast holds every link's copy, ``(runs, rounds, agents, agents, dim)``:
huang2015 unicast, 20 agents, dim 10, 50 rounds, --runs 400 peaked at 11.7 GB (72 bytes per coordinate of that
layout); counted per sender, it was estimated at 0.7 GB."""


def _check_memory_estimate(scenario: Any, runs: int) -> float:
    """Bytes the check holds at its peak (:data:`CHECK_BYTES_PER_COORDINATE`): both scenarios, every run, round,
    agent (every receiver too in unicast mode) and coordinate."""
    p = scenario.problem
    copies = p.num_agents if scenario.mode == "unicast" else 1
    return 2.0 * runs * float(scenario.horizon) * p.num_agents * copies * (CHECK_BYTES_PER_COORDINATE * p.dim + 16.0)
