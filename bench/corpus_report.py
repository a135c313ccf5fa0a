"""Markdown report of a corpus_eval run, for the people fixing the rules.

Missed labels carry no rule code, so each is filed under the rule most likely to own it by
keywords in the label's text (a guess, marked as such); wrong findings are grouped by the code
of the finding. Control fixtures (tests/conversions/controls) are analysed here too, so the
report lists the rules that still fire on already-XLA code.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from pathlib import Path

from xla_lens.engine import analyze
from xla_lens.rules.base import Category
from xla_lens.rules.registry import rules_by_code

ROOT = Path(__file__).resolve().parent.parent
CONTROLS = ROOT / "tests" / "conversions" / "controls"

# First match wins: the order puts the specific idioms before the generic "cuda"/"device".
OWNER_GUESS: tuple[tuple[str, str], ...] = (
    (r"torch\.save|checkpoint|map_location", "XLA108 (save / load)"),
    (r"float16|fp16|mixed_precision|dtype|bits default", "XLA114/XLA304 (float16 precision)"),
    (
        r"empty_cache|memory|nvtx|profil|stream|bitsandbytes|8-bit|4-bit|4bit|8bit|xformers"
        r"|manual_seed|bf16_supported|device_count|outofmemory|synchroni|cudart",
        "XLA403/XLA405 (CUDA-only call or API)",
    ),
    (r"autocast|grad ?scaler|scaler|\bamp\b|apex|loss scal", "XLA102/103 (AMP)"),
    (r"spawn|launcher|_mp_fn", "XLA204 (launcher)"),
    (
        r"ddp|nccl|backend|init_process_group|syncbatchnorm|dataparallel|data_parallel|fsdp"
        r"|device_mesh|devicemesh|parallelismconfig",
        "XLA205 (DDP / backend)",
    ),
    (r"sampler", "XLA203 (sampler)"),
    (r"loop|mark_step|step sync", "XLA107 (step sync)"),
    (r"loader|prefetch", "XLA106 (loader)"),
    (r"rank|world_size|local_rank|process index", "XLA202 (rank / world size)"),
    (r"device|cuda|picker|\.to\(|gpu", "XLA101 (device selection)"),
)


def guess_owner(label: dict) -> str:
    text = f"{label['what']} {label['text']}".lower()
    for pattern, owner in OWNER_GUESS:
        if re.search(pattern, text):
            return owner
    return "? (no guess)"


def control_findings() -> dict[str, list[str]]:
    """Conversion/distributed findings on each control fixture (should be none)."""
    out: dict[str, list[str]] = {}
    categories = {Category.CONVERSION, Category.DISTRIBUTED}
    for path in sorted(CONTROLS.glob("*.py")):
        analysis = analyze(path.read_text(), str(path), target="modern")
        rules = rules_by_code()
        out[path.name] = [
            f"{f.code} L{f.span.start.line + 1}"
            for f in analysis.findings
            if f.code in rules and rules[f.code].category in categories
        ]
    return out


def _figures(summary: dict) -> list[str]:
    head = (
        "| group | files | recall | wrong | trap+safe fix | findings | conversion findings |"
        " fixes offered safe/unsafe | applied safe / with unsafe | parse fail | not idempotent |"
        " rule crashes | analyse ms |"
    )
    lines = [head, "|" + "---|" * 13]
    for g, b in [*summary["groups"].items(), ("total", summary["total"])]:
        recall = (
            "-"
            if b["recall"] is None
            else f"{b['required_hit']}/{b['required']} = {b['recall']:.1%}"
        )
        lines.append(
            f"| {g} | {b['files']} | {recall} | {b['wrong_findings']} | "
            f"{b['trap_hits_with_safe_fix']} | {b['findings']} | {b['conversion_findings']} | "
            f"{b['safe_fixes_offered']}/{b['unsafe_fixes_offered']} | "
            f"{b['applied_safe']}/{b['applied_with_unsafe']} | {b['parse_failures']} | "
            f"{b['not_idempotent']} | {b['rule_errors']} | {b['analyse_ms']} |"
        )
    return lines


def write_markdown(summary: dict, path: Path) -> None:
    files = summary["files"]
    out = [
        "# Corpus report (bench/corpus_eval.py on the dev corpus)",
        "",
        f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on the working tree of that time;"
        " regenerate: `.venv/bin/python bench/corpus_eval.py /work/corpus --run --markdown"
        " /work/helpers/corpus_report.md`.",
        "",
        "Recall: a `required` label is hit when any finding's lines overlap it. Wrong: a finding"
        " overlapping a `trap` label (suspicious: read the trap; a finding with no fix that warns"
        " correctly may be fine, a *safe fix* on a trap is the worst case), plus every"
        " conversion/distributed finding in group E.",
        "",
        *_figures(summary),
        "",
    ]
    out += ["## Per file", "", "| group | file | recall | wrong | conversion findings |"]
    out.append("|---|---|---|---|---|")
    for r in files:
        conv = sum(h["category"] in ("conversion", "distributed") for h in r["findings"])
        recall = f"{r['required_hit']}/{r['required']}" if r["required"] else "-"
        out.append(f"| {r['group']} | `{r['name']}` | {recall} | {len(r['wrong'])} | {conv} |")
    out.append("")
    wrong_by_rule: dict[str, list[str]] = defaultdict(list)
    for r in files:
        for w in r["wrong"]:
            wrong_by_rule[w["code"]].append(
                f"- `{r['name']}` L{w['first_line']} ({w['fix']} fix): {w['why']}"
                f" — finding: {w['message'][:140]}"
            )
    out += ["## Wrong / suspicious findings, by rule", ""]
    for code in sorted(wrong_by_rule):
        out += [f"### {code} ({len(wrong_by_rule[code])})", *wrong_by_rule[code], ""]
    missed_by_owner: dict[str, list[str]] = defaultdict(list)
    for r in files:
        for m in r["missed"]:
            missed_by_owner[guess_owner(m)].append(
                f"- `{r['name']}` {m['lines']}: {m['what']} (`{m['text']}`)"
            )
    out += ["## Missed required labels, by the rule that probably owns them (keyword guess)", ""]
    for owner in sorted(missed_by_owner):
        out += [f"### {owner} ({len(missed_by_owner[owner])})", *missed_by_owner[owner], ""]
    problems = [f"- `{r['name']}`: {p}" for r in files for p in r["problems"]]
    problems += [f"- `{r['name']}`: rule {c} crashed" for r in files for c in r["rule_errors"]]
    out += ["## Parse / idempotence / crash problems", "", *(problems or ["none"]), ""]
    controls = control_findings()
    out += ["## Control fixtures (tests/conversions/controls) with conversion findings", ""]
    flagged = [f"- `{name}`: {', '.join(codes)}" for name, codes in controls.items() if codes]
    out += flagged or ["none (all controls clean)"]
    out.append("")
    for mode in ("safe", "reviewed", "unsafe"):
        runs = [r for r in summary.get("runs", []) if r.get("mode", "safe") == mode]
        if not runs:
            continue
        out += [f"## Convert-and-run ({mode} fixes)", "", "| script | result | detail |"]
        out.append("|---|---|---|")
        for run in runs:
            accepted = "; ".join(
                f"accepted {c}: {why}" for c, why in run.get("accepted", {}).items()
            )
            detail = f"{run['detail']} ({accepted})" if accepted else run["detail"]
            out.append(f"| `{run['name']}` | {run['status']} | {detail} |")
        out.append("")
    path.write_text("\n".join(out))
