"""Hash every request `bench longmem` scores, to prove a change leaves them byte for byte as they were.

    python scripts/request_digests.py --data PATH --split tune --out /tmp/after.json   (in each checkout)
    python scripts/request_digests.py --compare /tmp/before.json /tmp/after.json

Runs the vector stage (and any `--methods`) of `helpers.bench.longmem` at its budgets and records, per method,
budget, conversation and question, the SHA-256 of the request as JSON (sorted keys) and its length, plus the
recall rows and import seconds. Nothing of the data's text is written: only hashes and figures, so the output
of LoCoMo (CC BY-NC) may be kept outside the repository and compared. Run it with the checkout to measure
first on the path (`PYTHONPATH=CHECKOUT`): an editable install would otherwise import this worktree's `helpers`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path


def digest(args: argparse.Namespace) -> int:
    from helpers.bench.longmem import methods as longmem
    from helpers.bench.longmem.locomo import locomo_split, read_locomo

    digests: list[list] = []
    outcome = longmem._outcome  # every request a method builds passes here once, before it is scored

    def recording(ctx, conv, q, request):
        blob = json.dumps(request, sort_keys=True, ensure_ascii=False).encode()
        number = next(i for i, question in enumerate(conv.questions) if question is q)  # no text of the data kept
        digests.append([conv.user_id, number, hashlib.sha256(blob).hexdigest(), len(blob)])
        return outcome(ctx, conv, q, request)

    longmem._outcome = recording
    budgets = tuple(int(b) for b in args.budgets.split(","))
    methods = tuple(args.methods.split(","))
    conversations = locomo_split(read_locomo(args.data), args.split)
    result = longmem.run_longmem(conversations, budgets, methods=methods, store=args.store)
    root = Path(longmem.__file__).resolve().parents[3]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    doc = {
        "commit": commit,
        "split": args.split,
        "store": args.store,
        "methods": list(methods),
        "budgets": list(budgets),
        "digests": digests,
        "imports": result["imports"],
        "rows": [{k: v for k, v in row.items() if not isinstance(v, list)} for row in result["rows"]],
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(f"{commit[:7]} {args.split}: {len(digests)} requests hashed into {args.out}")
    return 0


def compare(before_path: str, after_path: str) -> int:
    with open(before_path, encoding="utf-8") as f:
        before = json.load(f)
    with open(after_path, encoding="utf-8") as f:
        after = json.load(f)
    pairs = list(zip(before["digests"], after["digests"]))
    differ = [(b, a) for b, a in pairs if b != a]
    same_count = len(before["digests"]) == len(after["digests"])
    print(
        f"{before['commit'][:7]} -> {after['commit'][:7]}, {before['split']}: {len(pairs)} requests compared, "
        f"{len(differ)} differ{'' if same_count else ', and the number of requests differs'}"
    )
    for b, a in differ[:10]:
        print(f"  {b[0]} question {b[1]}: {b[2][:12]} ({b[3]} bytes) -> {a[2][:12]} ({a[3]} bytes)")
    seconds = {}
    for name, doc in (("before", before), ("after", after)):
        seconds[name] = sum(item["seconds"] for item in doc["imports"])
    print(f"  import seconds (vector stage, all budgets): before {seconds['before']:.1f}, after {seconds['after']:.1f}")
    return 0 if not differ and same_count else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="LoCoMo-format conversations")
    parser.add_argument("--split", choices=("tune", "report", "all"), default="tune")
    parser.add_argument("--methods", default="vector", help="comma-separated longmem methods (default vector)")
    parser.add_argument("--budgets", default="1000,2000,4000")
    parser.add_argument("--store", choices=("memory", "local"), default="memory")
    parser.add_argument("--out", help="where to write the digests")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two digest files")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not (args.data and args.out):
        parser.error("--data and --out are needed to hash requests (or --compare BEFORE AFTER)")
    return digest(args)


if __name__ == "__main__":
    sys.exit(main())
