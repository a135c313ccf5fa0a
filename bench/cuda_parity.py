"""Do the conversion proofs mean what the CUDA originals mean? (a benchmark, not a test)

The conversion tests (tests/conversions) compare a fixture's converted run under torch_xla with
its original run on the CPU, because CI has no GPU. This checks that stand-in where a GPU exists:

  python bench/cuda_parity.py collect --out cuda.json   # on a machine with a CUDA GPU
  python bench/cuda_parity.py compare cuda.json          # here: CPU original + torch_xla run

`collect` runs every fixture exactly as written (its CUDA paths, which CI never executes) with
`XLA_LENS_STEPS=3`, and also records which device `xla-lens run` would choose in that
interpreter and why. It needs only torch (no torch_xla, no xla-lens dependencies).
`compare` converts each fixture with the safe fixes (as Convert does), runs the original on the
CPU and the conversion under PJRT CPU (the harness of tests/conversions), and prints, per
fixture, the largest relative loss difference of each against the CUDA run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "conversions" / "fixtures"
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]

# Command lines the tests give these fixtures ({tmp}: a fresh folder); the others take none.
ARGS = {
    "seed_dropout.py": ["--seed", "1"],
    "hf_trainer_parsed_args.py": ["--output_dir", "{tmp}", "--max_steps", "3"],
}
# Fixtures whose test builds inputs first (a checkpoint file): not runnable on their own.
NEEDS_TEST_SETUP = {"resume_cuda_checkpoint.py"}
STEPS = 3


def _protocol(stdout: str) -> dict:
    from tests.conversions.harness import parse_protocol

    losses, devices, mp_fn = parse_protocol(stdout)
    return {"losses": losses, "param_devices": devices, "mp_fn": mp_fn}


def _run_fixture(fixture: Path, timeout: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="cuda-parity-") as tmp:
        # The whole folder: some fixtures import a sibling module of their own.
        shutil.copytree(fixture.parent, tmp, dirs_exist_ok=True)
        script = Path(tmp) / fixture.name
        args = [a.replace("{tmp}", str(Path(tmp) / "out")) for a in ARGS.get(fixture.name, [])]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PJRT_", "XLA_"))}
        env.update(
            XLA_LENS_STEPS=str(STEPS),
            PYTHONWARNINGS="ignore",
            HF_HUB_OFFLINE="1",
            USE_TORCH_XLA="0",
        )
        start = time.monotonic()
        try:
            proc = subprocess.run(
                [sys.executable, str(script), *args],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp,
                timeout=timeout,
                start_new_session=True,
            )
            rc, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, err = 124, exc.stdout or "", f"timed out after {timeout}s"
            out = out.decode() if isinstance(out, bytes) else out
    return {
        "rc": rc,
        "seconds": round(time.monotonic() - start, 1),
        "stderr_tail": err[-1500:],
        **_protocol(out),
    }


def _device_choice() -> dict:
    from xla_lens.runner.device import choose_device, probe_interpreter

    probe = asyncio.run(probe_interpreter(sys.executable))
    return {
        "probe": probe.__dict__,
        "auto": choose_device(probe).reason,
        "cuda": choose_device(probe, "CUDA").reason,
    }


def collect(out: Path, jobs: int, timeout: int) -> None:
    import torch

    fixtures = [
        f
        for f in sorted(FIXTURES.glob("*.py"))
        if f.name not in NEEDS_TEST_SETUP and "xla-lens-loss" in f.read_text()
    ]
    with ThreadPoolExecutor(jobs) as pool:
        runs = dict(
            zip(
                (f.name for f in fixtures),
                pool.map(lambda f: _run_fixture(f, timeout), fixtures),
                strict=True,
            )
        )
    report = {
        "torch": torch.__version__,
        "cuda": torch.cuda.is_available(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "device_choice": _device_choice(),
        "runs": runs,
    }
    out.write_text(json.dumps(report, indent=1))
    ok = sum(r["rc"] == 0 and bool(r["losses"]) for r in runs.values())
    on_cuda = sum(any(d.startswith("cuda") for d in r["param_devices"]) for r in runs.values())
    print(
        f"torch {report['torch']} on {report['gpu']}: {ok}/{len(runs)} fixtures ran, "
        f"{on_cuda} with their parameters on CUDA"
    )
    for name, r in runs.items():
        if r["rc"] != 0 or not r["losses"]:
            last = r["stderr_tail"].strip().splitlines()[-1:] or ["(no stderr)"]
            print(f"  {name}: rc={r['rc']} {last[0][:160]}")
    print(f"xla-lens run would choose: {report['device_choice']['auto']}")


def _max_rel(a: list[float], b: list[float]) -> float | None:
    if not a or len(a) != len(b):
        return None
    return max(abs(x - y) / max(abs(x), 1e-6) for x, y in zip(a, b, strict=True))


def _fmt(v: float | None) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{100 * v:.2f} %"


def compare(report_path: Path, only: list[str]) -> None:
    from tests.conversions.harness import prove

    report = json.loads(report_path.read_text())
    print(f"CUDA runs: torch {report['torch']} on {report['gpu']}")
    print(f"{'fixture':38} {'CUDA params':12} {'CPU vs CUDA':>12} {'XLA vs CUDA':>12}  note")
    tally = {"within": 0, "compared": 0}
    for name, cuda in report["runs"].items():
        if only and name not in only:
            continue
        note = ""
        with tempfile.TemporaryDirectory() as tmp:
            args = [a.replace("{tmp}", tmp) for a in ARGS.get(name, [])]
            try:
                siblings = [f for f in FIXTURES.glob("*.py") if f.name != name]
                proof = prove(
                    FIXTURES / name, steps=STEPS, args=args, cuda_shim=True, extra_files=siblings
                )
            except AssertionError as exc:  # the conversion itself failed to parse/settle
                print(f"{name:38} conversion failed: {str(exc)[:120]}")
                continue
        cpu, xla = proof.original, proof.converted
        cpu_rel = _max_rel(cuda["losses"], cpu.losses if cpu else [])
        xla_rel = _max_rel(cuda["losses"], xla.losses)
        if cuda["rc"] != 0 or not cuda["losses"]:
            note = f"CUDA run rc={cuda['rc']}"
        elif xla.returncode != 0:
            note = f"converted run rc={xla.returncode}"
        elif xla_rel is not None:
            tally["compared"] += 1
            tally["within"] += xla_rel <= 0.02
            if xla_rel > 0.02:
                # Usually a finding with no safe fix that decides the run (XLA109: the model
                # never trains) or a script that means something else on CUDA (its RNG, a
                # branch on the device type): the findings left say which.
                note = "left: " + ", ".join(sorted(set(proof.remaining))[:4])
        devices = ",".join(sorted(set(cuda["param_devices"]))) or "—"
        print(f"{name:38} {devices:12} {_fmt(cpu_rel):>12} {_fmt(xla_rel):>12}  {note}")
    print(f"converted runs within 2 % of the CUDA original: {tally['within']}/{tally['compared']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="run every fixture as written (on a CUDA machine)")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--jobs", type=int, default=6)
    c.add_argument("--timeout", type=int, default=180)
    p = sub.add_parser("compare", help="compare a collected report with CPU and XLA runs here")
    p.add_argument("report", type=Path)
    p.add_argument("--only", nargs="*", default=[], help="fixture file names")
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.out, args.jobs, args.timeout)
    else:
        compare(args.report, args.only)


if __name__ == "__main__":
    main()
