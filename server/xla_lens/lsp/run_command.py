"""``xla-lens.run`` / ``xla-lens.cancelRun``: run a document's file under torch_xla (in a
subprocess, through the runner) and show what the compiler did while it runs.

The file on disk is what runs: the server never writes files, so unsaved edits are announced
and not run. One run per document: a second request while one is active is refused (saying
how to cancel), never silently queued or replacing the first. Every runner event is streamed
as the ``xla-lens/runEvent`` notification; progress goes through window/workDoneProgress, whose
cancel button cancels the run like ``xla-lens.cancelRun`` does.
"""

from __future__ import annotations

import ast
import asyncio
import os
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from ..runner import RunOptions, RunSummary, start
from ..runner.events import Compile, DeviceChosen, Event, Execute, Problem, Started, Step
from . import run_diagnostics, run_inlay, run_lens, run_messages
from .core import XlaLensServer
from .run_results import DocumentRun, RunStore, content_lines
from .run_settings import PushedSettings, run_settings_for

RUN = "xla-lens.run"
CANCEL = "xla-lens.cancelRun"
RUN_EVENT = "xla-lens/runEvent"
PROGRESS_TITLE = "Run on XLA"
# A client that sets experimental.xlaLens.runNotifications shows the device and the end of a
# run itself (the VS Code client: a short toast with "Why?", the text in its output channel).
CLIENT_NOTIFIES = "experimental.xlaLens.runNotifications"


def uri_argument(args: tuple[Any, ...]) -> str | None:
    """``"file:///x.py"``, ``{"uri": ...}`` or VS Code's ``{"external": ...}``."""
    first = args[0] if args else None
    if isinstance(first, str):
        return first
    if isinstance(first, dict):
        return next((first[k] for k in ("uri", "external") if isinstance(first.get(k), str)), None)
    return None


def refused(reason: str) -> dict[str, Any]:
    return {
        "status": "refused",
        "cancelled": False,
        "device": None,
        "reason": reason,
        "exit_code": None,
        "steps": 0,
        "compiles": 0,
        "compile_time_s": 0.0,
        "execute_time_s": 0.0,
        "problems": [],
    }


def result_of(summary: RunSummary, run: DocumentRun) -> dict[str, Any]:
    return {
        "status": summary.status,
        "cancelled": summary.status == "cancelled",
        "device": summary.device,
        # Why it was refused, else why this device: the question users ask after a run.
        "reason": summary.message or summary.device_reason,
        "exit_code": summary.returncode,
        "signal": summary.signal,
        "steps": summary.steps,
        "compiles": summary.uncached_compiles,
        "compile_time_s": round(summary.compile_s, 3),
        "execute_time_s": round(summary.execute_s, 3),
        "duration_s": round(summary.duration_s, 3),
        "cached_compiles": summary.cached_compiles,
        # What the editor shows: the end line, and the CLI's summary table for the output.
        "message": end_message(summary),
        "report": run_messages.summary_text(summary),
        "pid": run.pid,
        "uri": run.uri,
        # Lines are 1-based, as in tracebacks and the CLI.
        "problems": [
            {"kind": p.kind, "file": p.file, "line": p.line, "message": p.message}
            for p in summary.problems
        ],
    }


def end_message(summary: RunSummary) -> str:
    return run_messages.end_message(summary)


def client_notifies(ls: XlaLensServer) -> bool:
    experimental = ls.client_capabilities.experimental
    if not isinstance(experimental, dict):
        return False
    ours = experimental.get("xlaLens")
    return isinstance(ours, dict) and ours.get("runNotifications") is True


def event_payload(ev: Event) -> dict[str, Any]:
    """The runner event as sent in xla-lens/runEvent, plus the words the editor shows."""
    data = ev.to_dict()
    if isinstance(ev, DeviceChosen):
        data["short"] = run_messages.device_sentence(ev)
    return data


def _read_script(path: str) -> tuple[str | None, str | None]:
    """(source, None) or (None, why it cannot run)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    try:
        ast.parse(data, filename=path)
    except SyntaxError as exc:
        return None, (
            f"{os.path.basename(path)}:{exc.lineno}: {type(exc).__name__}: {exc.msg}. "
            "Fix it and save before running."
        )
    except ValueError as exc:  # null bytes
        return None, f"{os.path.basename(path)} cannot be compiled: {exc}"
    return data.decode("utf-8", errors="replace"), None


class Runs:
    def __init__(self, ls: XlaLensServer, store: RunStore, pushed: PushedSettings) -> None:
        self.ls = ls
        self.store = store
        self.pushed = pushed
        self.refresher = run_inlay.Refresher(ls)
        self.requests: set[asyncio.Task[Any]] = set()

    def views_changed(self, uri: str) -> None:
        run_diagnostics.publish_merged(self.ls, self.store, uri)
        self.refresher.now()

    async def run(self, uri: str) -> dict[str, Any]:
        if not uri.startswith("file:"):
            return self._refuse(uri, f"only files on disk can be run (not {uri}): save it first")
        path = to_fs_path(uri)
        if not path or not os.path.isfile(path):
            return self._refuse(uri, f"{path or uri} is not a file on disk")
        if self.store.active(uri) is not None:
            # Refused, not queued and not replacing: killing a long run by a stray click
            # would throw away its results.
            return refused(
                f"{os.path.basename(path)} is already running: cancel it first "
                "(xla-lens.cancelRun or the progress notification's Cancel)"
            )
        # Claimed before the first await, so a second request cannot slip in meanwhile.
        run = self.store.begin(uri, path, "")
        task = asyncio.current_task()
        if task is not None:
            self.requests.add(task)
        # $/cancelRequest for this request cancels its run (pygls alone would only answer
        # "cancelled" and let the script run on, holding the document busy).
        forget = self.ls.protocol_ext.on_cancel(
            self.ls.protocol.msg_id, lambda: self._cancel_run(run)
        )
        try:
            return await self._run(run, path)
        finally:
            forget()
            self.requests.discard(task)  # type: ignore[arg-type]
            if run.running:  # an internal error: never leave the document marked busy
                run.refusal = "the run failed inside xla-lens (see the log)"
                self.views_changed(uri)

    def cancel(self, uri: str) -> dict[str, Any]:
        run = self.store.active(uri)
        if run is None:
            return {"cancelled": False, "reason": f"no run of {uri} is in progress"}
        run.cancel_requested = True
        if run.handle is not None:
            run.handle.cancel()
        return {"cancelled": True, "uri": uri}

    def _cancel_run(self, run: DocumentRun) -> None:
        if run.running:
            run.cancel_requested = True
            if run.handle is not None:
                run.handle.cancel()

    async def stop_all(self, timeout: float = 10.0) -> None:
        """Cancel every run and let its request answer. pygls' shutdown cancels requests
        still in flight and fails doing so (it pops them from the dict it iterates), and a
        cancelled request would not wait for its script to be killed."""
        for run in list(self.store.runs.values()):
            if run.running:
                self.cancel(run.uri)
        if self.requests:
            await asyncio.wait(set(self.requests), timeout=timeout)

    def _refuse(self, uri: str, reason: str, run: DocumentRun | None = None) -> dict[str, Any]:
        if not client_notifies(self.ls):  # else the client's end-of-run toast says it
            self.ls.show_client(f"xla-lens: cannot run: {reason}", types.MessageType.Warning)
        if run is not None:
            run.refusal = reason
            self.views_changed(uri)
        return refused(reason)

    async def _run(self, run: DocumentRun, path: str) -> dict[str, Any]:
        uri, name = run.uri, os.path.basename(path)
        source, problem = await asyncio.to_thread(_read_script, path)
        if source is None:
            return self._refuse(uri, problem or "the file cannot be read", run)
        run.anchor = content_lines(source)
        if uri in self.ls.workspace.text_documents:
            buffer = self.ls.workspace.get_text_document(uri).source
            if content_lines(buffer) != run.anchor:
                self.ls.show_client(
                    f"xla-lens: {name} has unsaved changes: running the version on disk "
                    "(save to run what you see)",
                    types.MessageType.Warning,
                )
        settings = await run_settings_for(self.ls, uri, self.pushed)
        for message in settings.problems:
            self.ls.show_client(message, types.MessageType.Warning)
        self.views_changed(uri)  # the previous run's results are gone
        token = await self._begin_progress(name, settings.steps)
        options = RunOptions(
            script=path,
            args=settings.args,
            interpreter=settings.interpreter,
            device=settings.device,
            steps=settings.steps,
            env=settings.env,
        )
        summary: RunSummary | None = None
        try:
            run.handle = start(options, lambda ev: self._on_event(run, ev, token, settings.steps))
            if run.cancel_requested:
                run.handle.cancel()
            self._cancel_on_progress_cancel(run, token)
            summary = await run.handle.wait()
        finally:
            if summary is None and run.handle is not None:
                run.handle.cancel()  # this request was cancelled: do not orphan the script
            if token is not None:
                self._end_progress(token, end_message(summary) if summary else "failed")
        run.summary = summary
        run.changed()
        self.views_changed(uri)
        if summary.status == "refused" and not client_notifies(self.ls):
            self.ls.show_client(f"xla-lens: cannot run {name}: {summary.message}")
        return result_of(summary, run)

    def _on_event(self, run: DocumentRun, ev: Event, token: str | None, steps: int | None) -> None:
        try:
            self.ls.protocol.notify(RUN_EVENT, event_payload(ev))
        except Exception:  # the client went away; the run still finishes and cleans up
            pass
        if isinstance(ev, DeviceChosen):
            run.device = ev.device
            run.device_reason = ev.reason
            if token is not None:
                self.ls.work_done_progress.report(
                    token,
                    types.WorkDoneProgressReport(
                        message=f"starting · device {ev.device}", cancellable=True
                    ),
                )
            if not client_notifies(self.ls):
                # Short on screen; the whole reason (it can be long) goes to the log.
                self.ls.show_client(
                    f"xla-lens: {os.path.basename(run.script)}: {run_messages.device_sentence(ev)}",
                    types.MessageType.Info,
                )
                self.ls.log_client(f"xla-lens: device {ev.device}: {ev.reason}")
        elif isinstance(ev, Started):
            run.pid = ev.pid
        elif isinstance(ev, Compile | Execute):
            run.graph_events.append(ev)
            run.changed()
        elif isinstance(ev, Problem):
            run.problems.append(ev)
            run.changed()
        elif isinstance(ev, Step):
            run.steps = ev.step
            run.compiles += ev.uncached_compiles
            self.refresher.request()
            if token is not None:
                percentage = min(100, ev.step * 100 // steps) if steps else None
                self.ls.work_done_progress.report(
                    token,
                    types.WorkDoneProgressReport(
                        message=run_messages.progress_message(ev.step, run.compiles, run.device),
                        percentage=percentage,
                        cancellable=True,
                    ),
                )

    async def _begin_progress(self, name: str, steps: int | None) -> str | None:
        if not self.ls.client_supports("window.work_done_progress"):
            return None
        token = f"xla-lens-run-{uuid.uuid4()}"
        try:
            await self.ls.work_done_progress.create_async(token)
        except Exception as exc:  # the client refused the token: run without progress
            self.ls.log_client(f"xla-lens: no progress for the run: {exc}")
            return None
        self.ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=f"{PROGRESS_TITLE}: {name}",
                cancellable=True,
                message=f"starting {name}",
                percentage=0 if steps else None,
            ),
        )
        return token

    def _cancel_on_progress_cancel(self, run: DocumentRun, token: str | None) -> None:
        future: Future[Any] | None = self.ls.work_done_progress.tokens.get(token) if token else None
        if future is None:
            return
        loop = asyncio.get_running_loop()

        def on_done(f: Future[Any]) -> None:
            if f.cancelled() and run.handle is not None:
                loop.call_soon_threadsafe(run.handle.cancel)

        future.add_done_callback(on_done)

    def _end_progress(self, token: str, message: str) -> None:
        try:
            self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        finally:
            # pygls never forgets tokens; a finished one must not be cancellable any more.
            future = self.ls.work_done_progress.tokens.pop(token, None)
            if future is not None and not future.done():
                future.set_result(None)


def register(ls: XlaLensServer) -> None:
    """The whole run feature: commands, inlay hints, code lenses, merged diagnostics."""
    store = RunStore()
    pushed = PushedSettings()
    pushed.install(ls)
    runs = Runs(ls, store, pushed)
    run_inlay.register(ls, store)
    run_lens.register(ls, store)
    run_diagnostics.register(ls, store)

    # No other feature handles shutdown; if one ever does, it should await runs.stop_all().
    @ls.feature(types.SHUTDOWN)
    @ls.guarded("shutdown")
    async def shutdown(ls: XlaLensServer, params: None) -> None:
        await runs.stop_all()

    @ls.command(RUN)
    @ls.guarded(RUN, default=refused("internal error in xla-lens (see the log)"))
    async def run_command(ls: XlaLensServer, *args: Any) -> dict[str, Any]:
        uri = uri_argument(args)
        if uri is None:
            return refused("usage: xla-lens.run {uri: <document uri>}")
        return await runs.run(uri)

    @ls.command(CANCEL)
    @ls.guarded(CANCEL, default={"cancelled": False, "reason": "internal error (see the log)"})
    def cancel_command(ls: XlaLensServer, *args: Any) -> dict[str, Any]:
        uri = uri_argument(args)
        if uri is None:
            return {"cancelled": False, "reason": "usage: xla-lens.cancelRun {uri: <document uri>}"}
        return runs.cancel(uri)
