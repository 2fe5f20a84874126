"""The worker's dispute calls: evidence and acceptances the merchant committed, taken to the
provider beside the requests (never on a request's thread, as every provider call since issue 29).

A request commits the dispute with its action due now (app.payments.dispute_service) and answers
202. A worker round claims each due action for CLAIM_FOR (others skip it meanwhile), calls the
provider outside any unit of work, and records the answer in one. A worker killed mid-call loses
nothing: its claim lapses and the next round makes the same call again, under the same
idempotency key at Stripe (the evidence's digest or the acceptance), so Stripe does not act
twice. A provider that cannot answer is asked again later; one that refuses clears the action and
keeps its words on the dispute (`action_error`) for the merchant to read.

Evidence files go up first: each file the provider does not have yet is uploaded and its id kept
at once (a retry uploads none twice), then the evidence names them (Stripe). Paystack's evidence
takes no files; its acceptance needs the dispute's receipt uploaded, named in its resolve.

The worker also asks the providers where open disputes stand every CHECK_EVERY, so a missed
webhook does not leave a dispute open for ever (check_open_disputes).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import timedelta

from .deps import Deps
from .dispute_files import DisputeFile
from .dispute_service import record_action_done, record_from_provider
from .disputes import OPEN_STATUSES, Action, Dispute, DisputeCallRefused
from .money import to_minor
from .provider import ProviderUnavailable
from .retries import retry_after

CLAIM_FOR = timedelta(seconds=60)
# How often a worker asks the provider where an open dispute stands, in case a webhook was missed.
CHECK_EVERY = timedelta(hours=6)
BATCH = 20


def idempotency_key(dispute: Dispute, files: Sequence[DisputeFile] = ()) -> str:
    """The same for every attempt of the same action: the acceptance, or the evidence by its digest,
    its files' contents included (changed evidence after a refusal is a new request to the provider)."""
    if dispute.action is Action.ACCEPT:
        return f"{dispute.dispute_no}-accept"
    sent: object = dispute.evidence
    if files:
        sent = [dispute.evidence, sorted((f.kind, f.sha256) for f in files)]
    digest = hashlib.sha256(json.dumps(sent, sort_keys=True).encode()).hexdigest()[:16]
    return f"{dispute.dispute_no}-evidence-{digest}"


def run_due_dispute_calls(deps: Deps, limit: int = BATCH) -> int:
    """Take the due dispute actions to their providers, one after another; how many were taken."""
    now = deps.clock()
    with deps.uow(write=False) as uow:
        due = uow.disputes.due_actions(now, limit)
    taken = 0
    for dispute_id in due:
        with deps.uow() as uow:
            claimed = uow.disputes.claim_action(dispute_id, now, now + CLAIM_FOR)
            uow.commit()
        if claimed:
            call_provider(deps, dispute_id)
            taken += 1
    return taken


def call_provider(deps: Deps, dispute_id: int) -> None:
    """Make a claimed dispute's call and record the answer (or when to ask again, or the refusal)."""
    with deps.uow(write=False) as uow:
        dispute = uow.disputes.by_id_for_worker(dispute_id)
        payment = uow.transactions.get_for_worker(dispute.payment_id)
        method = uow.methods.of_transaction(payment)
    action = dispute.action
    if action is None:
        return
    try:
        if method is None:
            raise ProviderUnavailable(f"Payment method {payment.payment_method} is no longer configured")
        connector = deps.providers.for_method(method)
        if action is Action.SUBMIT_EVIDENCE:
            files = _upload_files(deps, connector, dispute) if getattr(connector, "evidence_takes_files", False) else []
            sent = {"files": {f.kind: f.provider_file_id for f in files}} if files else {}
            facts = connector.submit_dispute_evidence(dispute.provider_dispute_id, dispute.evidence,
                                                      idempotency_key(dispute, files), **sent)
        elif getattr(connector, "accept_needs_receipt", False):
            receipts = _upload_files(deps, connector, dispute, kinds={"receipt"})
            if not receipts:
                raise DisputeCallRefused(f"{dispute.provider} needs a receipt file to accept the dispute")
            facts = connector.accept_dispute(dispute.provider_dispute_id, idempotency_key(dispute),
                                             amount_minor=to_minor(dispute.amount, dispute.currency),
                                             receipt=receipts[0].provider_file_id)
        else:
            facts = connector.accept_dispute(dispute.provider_dispute_id, idempotency_key(dispute))
    except ProviderUnavailable as error:
        _not_answered(deps, dispute_id, action, str(error))
        return
    except DisputeCallRefused as refused:
        _refused(deps, dispute_id, action, str(refused))
        return
    with deps.uow() as uow:
        current = uow.disputes.by_id_for_worker(dispute_id, for_update=True)
        if current.action is action:  # (else another worker recorded it first)
            record_action_done(uow, current, facts.status, facts.provider_status, source="worker",
                               now=deps.clock())
            uow.commit()


def _upload_files(deps: Deps, connector, dispute: Dispute, kinds: set[str] | None = None) -> list[DisputeFile]:
    """Upload the dispute's evidence files the provider does not have yet (one with a provider
    file id is not uploaded again: a retry after an outage or a killed worker), keeping each id
    as it comes; the files (of `kinds`, else all), all uploaded."""
    with deps.uow(write=False) as uow:
        files = [f for f in uow.disputes.files(dispute.id, with_data=True) if kinds is None or f.kind in kinds]
    for file in files:
        if file.provider_file_id is None:
            file.provider_file_id = connector.upload_dispute_file(
                dispute.provider_dispute_id, file.filename, file.data, file.content_type,
                f"{dispute.dispute_no}-file-{file.id}-{file.sha256[:16]}")
            with deps.uow() as uow:
                uow.disputes.file_uploaded(file.id, file.provider_file_id, deps.clock())
                uow.commit()
        file.data = None
    return files


def _not_answered(deps: Deps, dispute_id: int, action: Action, error: str) -> None:
    """Ask again later, later the more attempts have failed (retries.retry_after)."""
    now = deps.clock()
    with deps.uow() as uow:
        current = uow.disputes.by_id_for_worker(dispute_id, for_update=True)
        if current.action is not action:
            return
        current.action_due_at = now + retry_after(current.action_attempts)
        current.action_error = error[:500]
        current.updated_at = now
        uow.disputes.save(current)
        uow.commit()


def _refused(deps: Deps, dispute_id: int, action: Action, error: str) -> None:
    """The provider refused: nothing is owed any more; its words stay on the dispute and in its history."""
    now = deps.clock()
    with deps.uow() as uow:
        current = uow.disputes.by_id_for_worker(dispute_id, for_update=True)
        if current.action is not action:
            return
        current.action, current.action_due_at, current.action_error = None, None, error[:500]
        current.updated_at = now
        uow.disputes.save(current)
        uow.disputes.add_history(current, current.status, "worker", error, now)
        uow.commit()


def check_open_disputes(deps: Deps, limit: int = BATCH) -> int:
    """Ask the providers where open disputes stand that nobody asked about for CHECK_EVERY (a
    missed or lost webhook), and record the answers as their webhooks would be; how many were asked.
    A provider that cannot answer is asked again at the next check."""
    now = deps.clock()
    checked_before = now - CHECK_EVERY
    with deps.uow(write=False) as uow:
        due = uow.disputes.due_status_checks(checked_before, [s.value for s in OPEN_STATUSES], limit)
    asked = 0
    for dispute_id in due:
        with deps.uow() as uow:
            claimed = uow.disputes.claim_status_check(dispute_id, checked_before, now)
            uow.commit()
        if not claimed:
            continue
        with deps.uow(write=False) as uow:
            dispute = uow.disputes.by_id_for_worker(dispute_id)
            payment = uow.transactions.get_for_worker(dispute.payment_id)
            method = uow.methods.of_transaction(payment)
        asked += 1
        try:
            if method is None:
                continue
            facts = deps.providers.for_method(method).dispute_status(dispute.provider_dispute_id)
        except (ProviderUnavailable, DisputeCallRefused):
            continue
        record_from_provider(deps, payment, dispute.provider, dispute.provider_account_id, facts, source="worker")
    return asked
