"""The browser's dialogs: resume, fork, answer a waiting run, stop a run, discard edits, and the word when a run
ends.

The run controller (:mod:`crewpoint.tui.run_controller`) decides what each does and words its questions; this
asks them in modal screens and starts what was confirmed. It acts on the browser it is given, through what the
browser shows to any part: the chosen checkpoint, the feed, the edits, the run panel and the tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text

from crewpoint.checkpoint.program import suggested_app
from crewpoint.checkpoint.stores import newest_descendant, store_of
from crewpoint.providers.base import CheckpointError, CheckpointMeta
from crewpoint.providers.formats import format_of_id
from crewpoint.screens.answer_dialog import AnswerScreen
from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.fork_confirm import ForkRequest, ForkScreen
from crewpoint.screens.resume_confirm import ResumeAnswer, ResumeScreen
from crewpoint.tui.diagnostics import plural
from crewpoint.tui.fleet_view import Fleet, ForkJob
from crewpoint.tui.run_controller import Answer, RunRequest
from crewpoint.tui.store_index import pending_request
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.run_panel import RunPanel
from crewpoint.tui.widgets.task_card import info_command

if TYPE_CHECKING:
    from crewpoint.screens.browser import BrowserScreen
    from crewpoint.tui.widgets.detail_state import Detail


class BrowserDialogs:
    def __init__(self, browser: BrowserScreen) -> None:
        self.browser = browser

    def _can_start(self) -> bool:
        browser = self.browser
        refusal = browser.controller.refusal(browser.run_panel.running, browser.selected)
        if refusal is not None:
            browser.notify(refusal, severity="warning", markup=False)
        return refusal is None

    def fork(self) -> None:
        if not self._can_start():
            return
        browser = self.browser
        shown = browser.selected  # the dialog and the fork are about this checkpoint, whatever loads next
        assert shown is not None and shown.record is not None and shown.info is not None
        try:
            plan = browser.controller.plan_fork(shown)
        except (CheckpointError, ValueError) as exc:
            browser.notify(visible(str(exc)), severity="error", markup=False)
            return
        app = suggested_app(shown.record)
        browser.app.push_screen(
            ForkScreen(
                shown.meta,
                shown.info,
                plan,
                taken=browser.feed.branches,
                app=app,
                body=shown.record.body,
                later=self._later(shown.meta.id),
                plan_at=self._plan_at(shown.meta.id),
                fleet=self._workers_up(),
            ),
            self._forked,
        )

    def _forked(self, request: ForkRequest | None) -> None:
        if request is None:
            return
        r = request
        if r.fleet:
            self._queue_fork(r)
            return
        self._start(
            self.browser.controller.fork_request(
                r.source_id, r.branch, r.inputs, r.outputs, r.app, len(r.rerun), r.budget
            )
        )
        self.browser.edits_changed(r.source_id, redraw=True)  # the edits live on in the new branch

    def resume(self) -> None:
        if not self._can_start():
            return
        browser = self.browser
        shown = browser.selected
        assert shown is not None and shown.record is not None and shown.info is not None
        meta, info = shown.meta, shown.info
        live = browser.feed.live_segment_of(meta.id, browser.ckpt_tree.runs_here)
        if live is not None:  # a resume beside a live run would run the same tasks a second time: offer a fork

            def fork_instead(fork: bool | None) -> None:
                if fork:
                    self.fork()

            question = browser.controller.live_question(meta, live, browser.feed.index.run_of(live))
            browser.app.push_screen(ConfirmScreen("This run is live", question, yes="Fork instead"), fork_instead)
            return

        def answered(answer: ResumeAnswer | None) -> None:
            if answer is not None and answer.fleet:
                self._queue_resume(meta.lineage, answer.app, answer.budget)
            elif answer is not None:
                self._start(browser.controller.resume_request(meta, info, answer.app, answer.budget))

        question = browser.controller.resume_question(meta, info)
        browser.app.push_screen(
            ResumeScreen(
                question,
                suggested_app(shown.record),
                body=shown.record.body,
                later=self._later(meta.id),
                plan_at=self._plan_at(meta.id),
                fleet=self._fleet_offer(meta),
            ),
            answered,
        )

    def _workers_up(self) -> str | None:
        """What the store's fleet has up (``2 workers up``); None without a fleet or a live worker."""
        view = self.browser.feed.fleet_view
        if self.browser.feed.fleet is None or view is None or not view.workers:
            return None
        return plural(view.workers, "worker") + " up"

    def _fleet_offer(self, meta: CheckpointMeta) -> str | None:
        """What the fleet has up when a resume from ``meta`` may go to it: :meth:`_workers_up`, when ``meta`` is its
        run's newest checkpoint on its branch (a worker goes on from there); else None."""
        up = self._workers_up()
        if up is None or not meta.lineage:
            return None
        run = [m for m in self.browser.feed.metas if m.lineage == meta.lineage and not m.damaged]
        newest = max(run, key=lambda m: (m.sequence, m.created_at), default=None)
        return up if newest is not None and newest.id == meta.id else None

    def _queue_resume(self, lineage: str, app: str, budget: float | None) -> None:
        """Queue the run ``lineage`` for the fleet: a worker of ``app`` goes on from its newest checkpoint."""
        self._on_fleet(
            app,
            "run",
            lambda fleet: fleet.resume(lineage, app, budget),
            lambda job: f"Queued job {job}: a worker started with --app {app.strip()} goes on with run {lineage[:6]}.",
        )

    def _queue_fork(self, r: ForkRequest) -> None:
        """Queue the confirmed fork for the fleet: a worker of its program forks onto its branch with its edits,
        which live on in the new branch (the draft here is discarded once the job is queued)."""
        browser = self.browser
        outputs = {str(index + 1): text for index, text in sorted(r.outputs.items())}  # counted from 1, as typed

        def discard_draft() -> None:
            browser.controller.edits.discard(r.source_id)
            browser.edits_changed(r.source_id, True)

        self._on_fleet(
            r.app,
            "fork",
            lambda fleet: fleet.fork(ForkJob(r.source_id, r.branch, dict(r.inputs), outputs, r.app, r.budget)),
            lambda job: f"Queued job {job}: a worker started with --app {r.app.strip()} forks onto ⎇ {r.branch}.",
            discard_draft,
        )

    def _on_fleet(
        self,
        app: str,
        what: str,
        send: Callable[[Fleet], int],
        queued: Callable[[int], str],
        then: Callable[[], None] | None = None,
    ) -> None:
        """Send a job to the store's fleet off the app's thread (``send`` queues it, for a worker of ``app``) and say
        its number (``queued``) or why the ``what`` was not queued; ``then`` runs on the app's thread once queued."""
        browser, fleet = self.browser, self.browser.feed.fleet
        if fleet is None:
            return
        if not app.strip():
            said = "Run on the fleet needs the program in App: a worker runs only the programs it was started with."
            browser.notify(said, severity="warning", markup=False)
            return

        def queue() -> None:
            try:
                job = send(fleet)
            except Exception as exc:
                said, severity = f"Cannot queue the {what}: {' '.join(str(exc).split())}", "error"
            else:
                said, severity = queued(job), "information"
                if then is not None:
                    browser.app.call_from_thread(then)
            browser.app.call_from_thread(browser.notify, visible(said), severity=severity, markup=False)
            browser.app.call_from_thread(browser.feed.read_fleet, browser)

        browser.run_worker(queue, thread=True, group="fleet-queue", exit_on_error=False)

    def answer(self) -> None:
        """Answer the chosen checkpoint's pending request (a run waiting for a person), then run on as resume does.
        Whether someone answered it already is a read of the store: it is made in a thread, and the dialog (or who
        answered) follows."""
        if not self._can_start():
            return
        browser = self.browser
        shown = browser.selected
        assert shown is not None and shown.record is not None
        request = pending_request(shown.record.body)
        if request is None:
            browser.notify("This checkpoint waits for no answer.", severity="warning", markup=False)
            return
        record = shown.record

        def read_claim() -> None:
            # lazy: the request's claim (one small, bounded read) only when Answer is pressed on a request
            from crewpoint.feedback_claims import answer_at

            try:
                claim = answer_at(record, store_of(record))
            except CheckpointError:
                claim = None  # a checkpoint outside any store: nothing can be claimed for it
            browser.app.call_from_thread(self._ask_answer, shown, request, claim)

        browser.run_worker(read_claim, thread=True, exclusive=True, group="answer-claim", exit_on_error=False)

    def _ask_answer(self, shown: Detail, request: dict[str, Any], claim: dict[str, Any] | None) -> None:
        """With the claim read: who answered (said, not silence), why it cannot be answered here, or the Answer
        dialog."""
        browser = self.browser
        if claim is not None:
            # lazy: the claim's words, only once one is found
            from crewpoint.feedback_claims import answered_words

            browser.notify(f"This request was {answered_words(claim)}.", severity="warning", markup=False)
            return
        meta = shown.meta
        refusal = browser.waiting_refusal(meta.id, True)
        if refusal is not None:
            browser.notify(refusal, severity="warning", markup=False)
            return
        if not self._can_start():  # a run started while the claim was read
            return
        assert shown.record is not None

        def answered(answer: Answer | None) -> None:
            if answer is not None:
                self._start(browser.controller.answer_request(meta, answer))

        browser.app.push_screen(
            AnswerScreen(
                meta.id,
                request,
                suggested_app(shown.record),
                shown.record.body,
                self._later(meta.id),
                see_all=info_command(meta),
                plan_at=self._plan_at(meta.id),
                fleet=self._workers_up(),
            ),
            answered,
        )

    def _plan_at(self, checkpoint_id: str) -> tuple[str, str] | None:
        """The checkpoint and store the dialogs read a program's plan of (None: another tool's checkpoint, which
        has no verdicts)."""
        return None if format_of_id(checkpoint_id).foreign else (checkpoint_id, self.browser.controller.location)

    def _later(self, checkpoint_id: str) -> str | None:
        """Where the newest checkpoint after ``checkpoint_id`` is (in the tree as read), for the dialogs' estimates."""
        newest = newest_descendant(self.browser.feed.index.metas.values(), checkpoint_id)
        return newest.location if newest is not None and newest.location else None

    def _start(self, request: RunRequest) -> None:
        self.browser.controller.started(request)
        self.browser.run_panel.start(request)

    def cancel_run(self) -> None:
        """Stop the run this app started; else offer to stop a run of the fleet (its job aborted, wherever it runs)
        or a live run started elsewhere (on this machine)."""
        browser = self.browser
        if browser.run_panel.cancel():
            return
        run = browser.feed.live_run_elsewhere(browser.ckpt_tree.chosen_id)
        if self._stop_on_fleet(run.lineage if run is not None else None):
            return
        if run is None:
            browser.notify("No run is going.", severity="information")
            return
        plan = browser.controller.stop_plan(run)
        if plan.refusal is not None:
            browser.notify(plan.refusal, severity=plan.severity, markup=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                said, failed = browser.controller.stop(plan)
                browser.notify(said, severity="error" if failed else "information", markup=False)

        browser.app.push_screen(ConfirmScreen("Stop a run started elsewhere", plan.question, yes="Stop it"), answered)

    def _stop_on_fleet(self, live: str | None) -> bool:
        """Offer to abort the job of the chosen checkpoint's run (else of the live run) when the fleet queues, runs
        or recovers it, as ``crewpoint checkpoint stop`` does; False when the fleet has neither."""
        browser = self.browser
        feed, fleet = browser.feed, browser.feed.fleet
        view = feed.fleet_view
        if fleet is None or view is None:
            return False
        chosen = feed.index.metas.get(browser.ckpt_tree.chosen_id or "")
        lineage = next((x for x in (chosen.lineage if chosen else None, live) if x and x in view.states), None)
        if lineage is None:
            return False
        question = browser.controller.fleet_stop_question(lineage, view.states[lineage])

        def answered(yes: bool | None) -> None:
            if yes:
                browser.run_worker(stop, thread=True, group="fleet-stop", exit_on_error=False)

        def stop() -> None:
            try:
                stopped = fleet.stop(lineage)
            except Exception as exc:
                said, severity = f"Cannot stop the run of the fleet: {' '.join(str(exc).split())}", "error"
            else:
                said = stopped.said() if stopped is not None else "The fleet has no job of this run any more."
                severity = "information" if stopped is not None else "warning"
            browser.app.call_from_thread(browser.notify, visible(said), severity=severity, markup=False)

        browser.app.push_screen(ConfirmScreen("Stop a run of the fleet", question, yes="Stop it"), answered)
        return True

    def run_finished(self, message: RunPanel.Finished) -> None:
        """One notification per run: success, cancelled or failed, by how it ended."""
        browser = self.browser
        cancelled = browser.run_panel.cancelled
        said, severity = browser.controller.finished(
            message.request, message.returncode, cancelled, message.error, message.queued
        )
        browser.notify(said, severity=severity, markup=False)

    def discard_edits(self) -> None:
        browser = self.browser
        meta = browser.selected.meta if browser.selected is not None else None
        question = browser.edits.discard_question(meta.id) if meta is not None else None
        if meta is None or question is None:
            browser.notify("No unsaved edits on this checkpoint.")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                browser.edits.discard(meta.id)
                browser.edits_changed(meta.id, redraw=True)

        browser.app.push_screen(ConfirmScreen("Discard edits", Text(question), yes="Discard"), answered)
