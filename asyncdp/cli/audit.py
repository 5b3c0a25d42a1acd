"""``asyncdp privacy audit MODULE.py``: black-box audit of any mechanism's privacy claim.

``MODULE.py`` defines ``mechanism(data, rng)`` (one output per call) or
``mechanism(data, rng, size)`` (``size`` outputs on a leading axis),
neighbouring inputs ``data`` and ``data_prime``, and optionally the claim
``epsilon`` and ``delta`` (``--epsilon``/``--delta`` override them). The
mechanism is sampled on both inputs and audited by
:func:`accounting.auditing.audit_mechanism`; the verdict is printed and, with
``--json OUT``, the report is written as JSON. ``--low-bits`` adds the
low-bits score (:mod:`accounting.auditing.lowbits`) to the candidate scores.

Exit codes: 0 when no violation was found, 1 when the claim is refuted (a
certified lower bound above the claim at ``--confidence``), 2 for unusable
input (one ``asyncdp: error:`` line).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .arguments import count, nonnegative_int, open_unit, require_memory, unit_from_zero
from .outputs import prepare_file

__all__ = ["EXIT_NO_VIOLATION", "EXIT_VIOLATION", "register", "load_audit_module", "audit_command"]

EXIT_NO_VIOLATION = 0
"""Exit code when the audit found no violation (which does not prove the claim)."""

EXIT_VIOLATION = 1
"""Exit code when the audit refuted the claim."""

SAMPLE_BYTES = 16
"""Lower bound of the memory one drawn output holds (a float and its score)."""

_EPILOG = """\
exit codes:
  0  no violation found (the claim may still be false: more samples find more)
  1  violation: a certified lower bound exceeds the claimed epsilon (or delta)
  2  unusable input: missing file, MODULE.py without mechanism/data/data_prime, bad parameters

MODULE.py defines mechanism(data, rng) -> one output (or mechanism(data, rng, size) -> size outputs
stacked on a leading axis), data, data_prime and optionally epsilon and delta."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``audit`` to the sub-commands of ``asyncdp privacy``."""
    a = subparsers.add_parser(
        "audit", help="black-box audit of the mechanism in MODULE.py",
        description="Sample mechanism(data, rng) on data and data_prime (defined in MODULE.py) and certify a "
        "lower bound on its epsilon (and on delta at the claimed epsilon) at the given confidence: "
        "exact events for discrete outputs, a learned score with a randomized threshold otherwise.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("module", metavar="MODULE.py")
    a.add_argument("--samples", type=count, default=100_000,
                   help="outputs drawn per input (default 100000; 1e6 accepted)")
    a.add_argument("--epsilon", type=float, default=None, help="claimed epsilon (default: MODULE.py's `epsilon`)")
    a.add_argument("--delta", type=unit_from_zero, default=None,
                   help="claimed delta (default: MODULE.py's `delta`, else 0)")
    a.add_argument("--confidence", type=open_unit, default=0.95,
                   help="confidence of the certified bounds (default 0.95)")
    a.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the sampling and of the auditor (default 0)")
    a.add_argument("--method", choices=("auto", "classifier", "exact"), default="auto",
                   help="event family (default auto: exact events for discrete outputs)")
    a.add_argument("--low-bits", action="store_true",
                   help="also score the lowest 16 mantissa bits of every output number, auditing the outputs as "
                   "the floating-point numbers they are (refutes a mechanism hiding its input in its last bits). "
                   "Opt-in because textbook floating-point Laplace leaks through its last bits too (Mironov, "
                   "CCS 2012): a real leak of the implementation that a claim about the real-number mechanism "
                   "does not speak of, so honest mechanisms may be refuted with it")
    a.add_argument("--json", metavar="OUT.json", default=None,
                   help="write the report as JSON to OUT.json (checked before sampling; parents created; "
                   "an existing file is replaced, said on stderr)")
    a.set_defaults(func=audit_command)


def load_audit_module(path: str | Path) -> dict[str, Any]:
    """Execute ``path`` and return its ``mechanism``, ``data``, ``data_prime`` and, if defined, ``epsilon``, ``delta``.

    Raises:
        FileNotFoundError: no such file.
        AuditInputError: not a ``.py`` file; the module fails to compile or run
            (one line naming file and line); a required name is missing or
            ``mechanism`` is not callable.
    """
    from accounting.auditing import AuditInputError

    from ..scenario import exec_script_source

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no audit module at {str(path)!r}")
    if path.suffix != ".py":
        raise AuditInputError(f"{path}: an audit module must be a Python file ending in .py, "
                              f"got {path.suffix or 'no suffix'!r}")
    namespace = exec_script_source(path.read_bytes(), str(path), f"asyncdp_audit_{abs(hash(str(path.resolve())))}",
                                   error=AuditInputError)
    out: dict[str, Any] = {}
    for name in ("mechanism", "data", "data_prime"):
        if name not in namespace:
            raise AuditInputError(f"{path.name} does not define {name!r} (needs mechanism, data, data_prime)")
        out[name] = namespace[name]
    if not callable(out["mechanism"]):
        raise AuditInputError(f"{path.name}: 'mechanism' must be callable, got {type(out['mechanism']).__name__}")
    for name in ("epsilon", "delta"):
        if name in namespace:
            out[name] = namespace[name]
    return out


def audit_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp privacy audit``; exit code 1 on a violation, 0 otherwise."""
    from accounting.auditing import AuditInputError, audit_mechanism

    json_out = args.json and prepare_file(args.json, "--json", (".json",))
    require_memory(2.0 * args.samples * SAMPLE_BYTES, f"--samples {args.samples}",
                   f"at least {SAMPLE_BYTES} bytes per output drawn, for both inputs")
    loaded = load_audit_module(args.module)
    epsilon = args.epsilon if args.epsilon is not None else loaded.get("epsilon")
    if epsilon is None:
        raise AuditInputError(f"epsilon: give --epsilon or define `epsilon` in {Path(args.module).name}")
    delta = args.delta if args.delta is not None else loaded.get("delta", 0.0)
    report = audit_mechanism(loaded["mechanism"], loaded["data"], loaded["data_prime"], epsilon=epsilon,
                             delta=delta, samples=args.samples, confidence=args.confidence, seed=args.seed,
                             method=args.method, low_bits=args.low_bits)
    print(report.summary())
    if json_out:
        data = {"module": str(args.module), "samples": args.samples, "seed": args.seed, "low_bits": args.low_bits,
                **report.to_dict()}
        json_out.write_text(json.dumps(data, indent=2))
    return EXIT_VIOLATION if report.violation else EXIT_NO_VIOLATION
