"""Benchmark: what the low-bits candidate score adds to the privacy check's black-box audit.

For each scenario script (default: examples/privacy_check_dpsda.py and
examples/privacy_check_rendezvous.py), the check's transcripts of both
scenarios at ``--runs`` runs (``asyncdp.privacy.blackbox_audit.transcript_features``)
are audited by ``accounting.auditing.audit_samples`` with the check's
parameters, with and without ``low_bits`` (the baseline), alternately in
every repeat of one process; printed: the median CPU time of each, their
difference, and the low-bits score's own fit (on the check's 250 fitting
rows per side) and scoring of the other rows. CPU milliseconds (the box is
shared), medians of ``--repeats``.

Run:  python benchmarks/bench_low_bits.py [--runs 1000] [--repeats 25] [--script PATH ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accounting.auditing import audit_samples
from accounting.auditing.lowbits import fit_low_bit_score
from asyncdp import load_script
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
from asyncdp.privacy.blackbox_audit import BLACKBOX_FIT_ROWS, transcript_features

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = (EXAMPLES / "privacy_check_dpsda.py", EXAMPLES / "privacy_check_rendezvous.py")


def _cpu_ms(fn: Callable[..., Any], *calls: tuple[Any, ...], **kw: Any) -> float:
    """CPU milliseconds of ``fn(*args, **kw)`` for each ``args`` of ``calls``, in turn."""
    start = time.process_time()
    for args in calls:
        fn(*args, **kw)
    return (time.process_time() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--script", type=Path, nargs="*", default=list(SCRIPTS))
    args = parser.parse_args()
    for script in args.script:
        ex = load_script(script, names=("scenario", "adjacent"))
        ctx = prepare(ScenarioPair(ex["scenario"], ex["adjacent"]), CheckOptions(runs=args.runs, search_examples=0))
        a, b = transcript_features(ctx, 0), transcript_features(ctx, 1)
        kw: dict[str, Any] = dict(epsilon=ctx.epsilon_claimed, delta=ctx.delta_claimed, confidence=1.0 - ctx.options.alpha_share,
                  seed=ctx.options.seed, max_train=BLACKBOX_FIT_ROWS)
        times: dict[str, list[float]] = {"without": [], "with": [], "fit": [], "score": []}
        fit = BLACKBOX_FIT_ROWS
        for _ in range(args.repeats):
            times["without"].append(_cpu_ms(audit_samples, (a, b), low_bits=False, **kw))
            times["with"].append(_cpu_ms(audit_samples, (a, b), low_bits=True, **kw))
            times["fit"].append(_cpu_ms(fit_low_bit_score, (a[:fit], b[:fit])))
            score = fit_low_bit_score(a[:fit], b[:fit])
            times["score"].append(_cpu_ms(score, (a[fit:],), (b[fit:],)))
        m = {k: statistics.median(v) for k, v in times.items()}
        print(f"{script.name}: transcripts {a.shape[0]} x {a.shape[1]} per side, CPU ms, median of {args.repeats}")
        print(f"  audit_samples without the low-bits score: {m['without']:.1f}; with it: {m['with']:.1f} "
              f"(+{m['with'] - m['without']:.1f})")
        print(f"  low-bits score alone: fit on {fit} rows per side {m['fit']:.2f}, scoring the other "
              f"{2 * (a.shape[0] - fit)} rows {m['score']:.2f}")


if __name__ == "__main__":
    main()
