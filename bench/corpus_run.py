"""Convert-and-run for the self-contained corpus scripts (``corpus_eval.py --run``).

``DIR/swaps/runs.json`` (kept outside the repository, with the patches) lists the scripts:

    [{"name": "<file in DIR/files>", "script": "makemore.py", "patch": "<file in DIR/swaps>",
      "baseline_patch": null, "args": [...], "extra": ["data/names.txt"],
      "siblings": ["resnet.py"], "cuda_shim": false, "timeout": 240, "rel_tol": 0.02,
      "accept_review": {"XLA101": "why a reviewer accepts it", ...}}]

Each script is copied to a temporary folder, patched with its synthetic-data swap (which also
adds the protocol lines of tests/conversions/README.md), then proven with the conversion
harness: the swapped original runs on the CPU (``baseline_patch`` on top for that run only,
e.g. nccl -> gloo; ``cuda_shim`` maps hard-coded CUDA placement to the CPU), the conversion
(safe fixes only) runs under torch_xla PJRT CPU, and losses and parameter devices are compared.

Modes: ``safe`` is what Convert and ``fix`` apply. ``reviewed`` adds, for a script that lists
them, the review-only fixes a reviewer accepts after reading their findings (``accept_review``:
rule code -> the reviewer's reason, recorded beside the script), the others being declined, as a
user does one quick fix at a time. ``unsafe`` applies every review fix (``fix --unsafe-fixes``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conversions.harness import assert_proven, prove  # noqa: E402


def _patched(original: Path, patch: Path, out: Path) -> None:
    proc = subprocess.run(
        ["patch", "--quiet", "-o", str(out), str(original), str(patch)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"patch {patch.name} does not apply: {proc.stdout}{proc.stderr}")


def run_one(corpus: Path, spec: dict, mode: str = "safe") -> dict:
    swaps = corpus / "swaps"
    name = spec["name"]
    owner_name = name.split("__", 1)[0]
    accept_review = sorted(spec.get("accept_review", {})) if mode == "reviewed" else None
    result = {"name": name, "mode": mode, "status": "error", "detail": ""}
    with tempfile.TemporaryDirectory(prefix="xla-lens-corpus-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        script = src / spec["script"]
        try:
            _patched(corpus / "files" / name, swaps / spec["patch"], script)
            baseline = None
            if spec.get("baseline_patch"):
                baseline = src / f"baseline_{spec['script']}"
                _patched(script, swaps / spec["baseline_patch"], baseline)
        except RuntimeError as exc:
            result["detail"] = str(exc)
            return result
        extra = [swaps / e for e in spec.get("extra", [])]
        extra += [corpus / "siblings" / owner_name / s for s in spec.get("siblings", [])]
        proof = prove(
            script,
            args=spec.get("args", []),
            cuda_shim=spec.get("cuda_shim", False),
            timeout=spec.get("timeout", 240),
            workdir=Path(tmp) / "run",
            extra_files=extra,
            baseline=baseline,
            unsafe=mode == "unsafe",
            accept_review=accept_review,
        )
    orig, conv = proof.original, proof.converted
    result.update(
        applied=proof.applied,
        remaining=proof.remaining,
        original_rc=orig.returncode if orig else None,
        original_losses=orig.losses if orig else None,
        converted_rc=conv.returncode,
        converted_losses=conv.losses,
        converted_device=conv.param_device,
        converted_stderr_tail=conv.stderr[-1500:],
    )
    try:
        assert_proven(proof, rel_tol=spec.get("rel_tol", 0.02))
    except AssertionError as exc:
        result["status"] = "FAILED"
        result["detail"] = _reason(proof, str(exc).splitlines()[0])
        return result
    worst = max(
        (abs(a - b) / max(abs(a), 1e-12) for a, b in zip(orig.losses, conv.losses, strict=True)),
        default=0.0,
    )
    result["status"] = "proven"
    result["detail"] = (
        f"{len(conv.losses)} steps on {conv.param_device}, worst loss deviation {worst:.2%}"
    )
    return result


def _reason(proof, first_line: str) -> str:
    conv = proof.converted
    parts = [first_line]
    if conv.returncode != 0:
        last = [ln for ln in conv.stderr.strip().splitlines() if ln.strip()]
        parts.append(f"converted exit {conv.returncode}: {last[-1][:200] if last else ''}")
    parts.append(f"converted device {conv.param_device}, {len(conv.losses)} losses")
    if proof.original is not None:
        parts.append(f"original {len(proof.original.losses)} losses")
    if proof.remaining:
        parts.append(f"left unfixed: {', '.join(sorted(set(proof.remaining)))}")
    return "; ".join(parts)


def run_all(
    corpus: Path, modes: tuple[str, ...] = ("safe",), only: str | None = None
) -> list[dict]:
    """Every script in ``modes``; ``reviewed`` runs only the scripts that list review fixes
    to accept and that the safe conversion did not prove on its own."""
    runs = corpus / "swaps" / "runs.json"
    if not runs.is_file():
        return [{"name": str(runs), "status": "error", "detail": "no runs.json"}]
    out = []
    for mode in modes:
        for spec in json.loads(runs.read_text()):
            if only and only not in spec["name"]:
                continue
            if mode == "reviewed":
                if not spec.get("accept_review"):
                    continue
                if any(
                    r["name"] == spec["name"] and r["mode"] == "safe" and r["status"] == "proven"
                    for r in out
                ):
                    continue
            print(
                f"converting and running {spec['name']} ({mode}) ...", file=sys.stderr, flush=True
            )
            result = run_one(corpus, spec, mode)
            if mode == "reviewed":
                result["accepted"] = spec["accept_review"]
            out.append(result)
    return out


MODE_TITLES = {
    "safe": "safe fixes, as Convert applies them",
    "reviewed": "safe fixes + the review fixes a reviewer accepts",
    "unsafe": "every fix, as fix --unsafe-fixes",
}


def print_runs(runs: list[dict]) -> None:
    for mode in MODE_TITLES:
        rows = [r for r in runs if r.get("mode", "safe") == mode]
        if not rows:
            continue
        proven = sum(r["status"] == "proven" for r in rows)
        print(
            f"\nconvert-and-run ({MODE_TITLES[mode]}): {proven}/{len(rows)} proven"
            " (on XLA, losses within tolerance)"
        )
        for r in rows:
            print(f"  {r['status']:7} {r['name']}: {r['detail']}")
            for code, why in r.get("accepted", {}).items():
                print(f"           accepted {code} review fixes: {why}")
    safe = {r["name"]: r for r in runs if r.get("mode", "safe") == "safe"}
    if safe and any(r.get("mode") == "reviewed" for r in runs):
        reviewed = {r["name"]: r for r in runs if r.get("mode") == "reviewed"}
        ok = sum((reviewed.get(n) or r)["status"] == "proven" for n, r in safe.items())
        print(f"\nproven after review (safe, else reviewed): {ok}/{len(safe)}")
