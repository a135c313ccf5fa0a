"""Convert-and-run for the self-contained corpus scripts (``corpus_eval.py --run``).

``DIR/swaps/runs.json`` (kept outside the repository, with the patches) lists the scripts:

    [{"name": "<file in DIR/files>", "script": "makemore.py", "patch": "<file in DIR/swaps>",
      "baseline_patch": null, "args": [...], "extra": ["data/names.txt"],
      "siblings": ["resnet.py"], "cuda_shim": false, "timeout": 240, "rel_tol": 0.02}]

Each script is copied to a temporary folder, patched with its synthetic-data swap (which also
adds the protocol lines of tests/conversions/README.md), then proven with the conversion
harness: the swapped original runs on the CPU (``baseline_patch`` on top for that run only,
e.g. nccl -> gloo; ``cuda_shim`` maps hard-coded CUDA placement to the CPU), the conversion
(safe fixes only) runs under torch_xla PJRT CPU, and losses and parameter devices are compared.
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


def run_one(corpus: Path, spec: dict, unsafe: bool = False) -> dict:
    swaps = corpus / "swaps"
    name = spec["name"]
    owner_name = name.split("__", 1)[0]
    result = {"name": name, "mode": "unsafe" if unsafe else "safe", "status": "error", "detail": ""}
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
            unsafe=unsafe,
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


def run_all(corpus: Path, unsafe: bool = False, only: str | None = None) -> list[dict]:
    runs = corpus / "swaps" / "runs.json"
    if not runs.is_file():
        return [{"name": str(runs), "status": "error", "detail": "no runs.json"}]
    out = []
    for spec in json.loads(runs.read_text()):
        if only and only not in spec["name"]:
            continue
        print(f"converting and running {spec['name']} ...", file=sys.stderr, flush=True)
        out.append(run_one(corpus, spec, unsafe))
    return out


def print_runs(runs: list[dict]) -> None:
    proven = sum(r["status"] == "proven" for r in runs)
    mode = runs[0].get("mode", "safe") if runs else "safe"
    print(
        f"\nconvert-and-run ({mode} fixes): {proven}/{len(runs)} proven"
        " (on XLA, losses within tolerance)"
    )
    for r in runs:
        print(f"  {r['status']:7} {r['name']}: {r['detail']}")
