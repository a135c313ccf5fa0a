"""Findings → LSP diagnostics."""

from __future__ import annotations

from lsprotocol import types

from ..rules.base import Finding, doc_url
from ..rules.registry import get_rule
from .state import Entry

SOURCE = "xla-lens"


def to_diagnostic(entry: Entry, finding: Finding, index: int) -> types.Diagnostic:
    rule = get_rule(finding.code)
    message = finding.message
    if finding.fix is None and finding.manual:
        message = f"{message}\nBy hand: {finding.manual}"
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=entry.uri, range=entry.range(span)), message=text
        )
        for span, text in finding.related
    ]
    return types.Diagnostic(
        range=entry.range(finding.span),
        message=message,
        severity=types.DiagnosticSeverity(int(finding.severity)),
        code=finding.code,
        code_description=types.CodeDescription(href=doc_url(rule)) if rule else None,
        source=SOURCE,
        tags=[types.DiagnosticTag.Deprecated] if finding.deprecated else None,
        related_information=related or None,
        # Lets code actions find the finding again without matching ranges.
        data={"version": entry.version, "index": index},
    )


def diagnostics_for(entry: Entry) -> list[types.Diagnostic]:
    return [to_diagnostic(entry, f, i) for i, f in enumerate(entry.analysis.findings)]
