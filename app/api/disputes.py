"""The /api/v1/disputes endpoints: list and read a merchant's disputes, send evidence, accept, and
the sandbox's outcome helper. Same token, scoping and error shapes as the rest of the API."""
from __future__ import annotations

from datetime import datetime

from flask import g, request

from app.payments import dispute_service
from app.payments.disputes import (
    EVIDENCE_FIELDS,
    MAX_EVIDENCE_TEXT,
    Dispute,
    DisputeNotFound,
    DisputeRejected,
    DisputeStatus,
)
from app.payments.dispute_files import FILE_KINDS, MAX_FILE_BYTES, DisputeFile
from app.payments.formats import iso_utc
from app.payments.model import FieldErrors, Mode
from app.payments.money import quantize
from app.payments.schemas import require_object, shown_field_name
from app.util import could_be_key
from app.web import deps, json_response

from . import api, query
from .limits import DEFAULT_DISPUTE_LIMIT, MAX_DISPUTE_LIMIT, MAX_DISPUTE_NO_LENGTH
from .paging import Cursor, page_limit
from .routes import read_json

SANDBOX_DISPUTE_OUTCOMES = (DisputeStatus.WON, DisputeStatus.LOST)


@api.errorhandler(DisputeNotFound)
def dispute_not_found(error: DisputeNotFound):
    return json_response({"error": str(error)}, 404)


@api.errorhandler(DisputeRejected)
def dispute_rejected(error: DisputeRejected):
    return json_response({"error": str(error)}, 409)


def dispute_body(dispute: Dispute) -> dict:
    """A dispute as the API shows it."""
    return {
        "disputeId": dispute.dispute_no,
        "txNo": dispute.payment_tx_no,
        "status": dispute.status.value,
        "amount": quantize(dispute.amount, dispute.currency),
        "currency": dispute.currency,
        "reason": dispute.reason,
        "dueBy": iso_utc(dispute.due_by),
        "provider": dispute.provider,
        "providerDisputeId": dispute.provider_dispute_id,
        "providerStatus": dispute.provider_status,
        "evidence": dispute.evidence,
        "evidenceSubmittedAt": iso_utc(dispute.evidence_submitted_at),
        "evidenceSubmittedBy": dispute.evidence_submitted_by,
        "pendingAction": dispute.action.value if dispute.action else None,
        "lastError": dispute.action_error,
        "createdAt": iso_utc(dispute.created_at),
        "updatedAt": iso_utc(dispute.updated_at),
    }


def file_body(file: DisputeFile) -> dict:
    """An evidence file as the API shows it (never its bytes)."""
    return {
        "fileId": file.id,
        "kind": file.kind,
        "filename": file.filename,
        "contentType": file.content_type,
        "size": file.size,
        "sha256": file.sha256,
        "uploaded": file.provider_file_id is not None,
        "providerFileId": file.provider_file_id,
        "createdAt": iso_utc(file.created_at),
        "createdBy": file.created_by,
    }


# A multipart body may be a little larger than its file: the form's boundaries and `kind`.
FILE_BODY_LIMIT = MAX_FILE_BYTES + 64 * 1024


@api.url_value_preprocessor
def _file_body_limit(endpoint: str | None, _values: dict | None) -> None:
    """The files endpoint takes bodies up to FILE_BODY_LIMIT (every other one MAX_CONTENT_LENGTH);
    set before any before_request reads the body."""
    if endpoint == "api.add_dispute_file":
        request.max_content_length = FILE_BODY_LIMIT


def _dispute_no(text: str) -> str:
    if not could_be_key(text, MAX_DISPUTE_NO_LENGTH):
        raise DisputeNotFound(text[:MAX_DISPUTE_NO_LENGTH])
    return text


def _statuses() -> list[str] | None:
    return query.words("status", {word: word for word in sorted(s.value for s in DisputeStatus)})


def _due_before() -> datetime | None:
    return query.moment("dueBefore")


# The listing's cursors (app.api.paging).
CURSOR = Cursor("d:", "Cursor is not one this API gave")


@api.get("/disputes")
def list_disputes():
    """The token's disputes, newest first; ?status=, ?dueBefore=, ?limit= and ?cursor= (nextCursor)."""
    statuses, due_before = _statuses(), _due_before()
    limit, position = page_limit(DEFAULT_DISPUTE_LIMIT, MAX_DISPUTE_LIMIT), CURSOR.position()
    with deps().uow(write=False) as uow:
        found = uow.disputes.listing(g.caller, statuses=statuses, due_before=due_before,
                                     before_id=position, limit=limit + 1)
    page = found[:limit]
    next_cursor = CURSOR.encode(page[-1].id) if len(found) > limit else None
    return json_response({"disputes": [dispute_body(d) for d in page], "nextCursor": next_cursor})


@api.get("/disputes/<dispute_id>")
def get_dispute(dispute_id: str):
    """One dispute, with its history of status moves."""
    dispute = dispute_service.get(deps(), g.caller, _dispute_no(dispute_id))
    with deps().uow(write=False) as uow:
        moves = uow.disputes.history(dispute.id)
    files = dispute_service.files(deps(), dispute)
    return json_response({**dispute_body(dispute), "files": [file_body(f) for f in files], "history": [
        {"from": m["from_status"], "to": m["to_status"], "source": m["source"], "note": m["note"],
         "at": iso_utc(m["at"])} for m in moves]})


def read_evidence(body: object) -> tuple[dict[str, str], bool]:
    """The evidence fields and `submit` of a request body; FieldErrors for anything else."""
    body = require_object(body)
    errors: dict[str, list[str]] = {}
    fields: dict[str, str] = {}
    for key, value in body.items():
        name = key[:1].upper() + key[1:]  # a known field's name, PascalCase as every field error's
        if key == "submit":
            if not isinstance(value, bool):
                errors[name] = ["Submit must be true or false"]
        elif key not in EVIDENCE_FIELDS:
            errors[shown_field_name(key)] = ["Unknown field"]
        elif not isinstance(value, str) or len(value) > MAX_EVIDENCE_TEXT or \
                not value.replace("\n", "").replace("\r", "").replace("\t", "").isprintable():
            errors[name] = [f"{name} must be a text of at most {MAX_EVIDENCE_TEXT} characters"]
        else:
            fields[key] = value.strip()
    if errors:
        raise FieldErrors(errors)
    return fields, body.get("submit", False)


def _answer(dispute: Dispute):
    """200 with the dispute when nothing is owed to its provider; 202 while a worker takes it there."""
    return json_response(dispute_body(dispute), 202 if dispute.action else 200)


@api.post("/disputes/<dispute_id>/evidence")
def send_evidence(dispute_id: str):
    """Keep the evidence draft; with submit true, have a worker submit it to the provider (202)."""
    dispute_no = _dispute_no(dispute_id)
    fields, submit = read_evidence(read_json())
    return _answer(dispute_service.save_evidence(deps(), g.caller, dispute_no, fields, submit=submit))


@api.post("/disputes/<dispute_id>/files")
def add_dispute_file(dispute_id: str):
    """Keep a file (multipart `file`, and `kind`) for the evidence; a worker uploads it to the
    provider when the evidence is submitted. 201 with the file; 400 for a file Paydesk does not take."""
    dispute_no = _dispute_no(dispute_id)
    if not request.mimetype == "multipart/form-data":
        raise FieldErrors.one("Body", "The body must be multipart/form-data with a file and its kind")
    unknown = sorted((set(request.form) | set(request.files)) - {"file", "kind"})
    if unknown:
        raise FieldErrors({shown_field_name(key): ["Unknown field"] for key in unknown})
    kind = request.form.get("kind", "")
    if kind not in FILE_KINDS:
        raise FieldErrors.one("Kind", f"Kind must be one of {', '.join(FILE_KINDS)}")
    upload = request.files.get("file")
    if upload is None:
        raise FieldErrors.one("File", "File is required (a PDF, PNG or JPEG)")
    data = upload.stream.read(MAX_FILE_BYTES + 1)
    kept = dispute_service.add_file(deps(), g.caller, dispute_no, kind, upload.filename, data)
    return json_response(file_body(kept), 201)


@api.post("/disputes/<dispute_id>/accept")
def accept_dispute(dispute_id: str):
    """Accept the dispute: a worker tells the provider (202); its amount is no longer refundable."""
    dispute_no = _dispute_no(dispute_id)
    if request.get_data(cache=True):
        body = require_object(read_json())
        if body:
            raise FieldErrors({shown_field_name(key): ["Unknown field"] for key in body})
    return _answer(dispute_service.accept(deps(), g.caller, dispute_no))


@api.post("/sandbox/disputes/<dispute_id>/outcome")
def sandbox_dispute_outcome(dispute_id: str):
    """Sandbox only: close a dispute as the card network would, won or lost, with its webhooks."""
    if g.caller.mode is not Mode.SANDBOX:
        return json_response({"error": "Sandbox only"}, 403)
    dispute_no = _dispute_no(dispute_id)
    body = require_object(read_json())
    unknown = sorted(set(body) - {"outcome"})
    if unknown:
        raise FieldErrors({shown_field_name(key): ["Unknown field"] for key in unknown})
    if body.get("outcome") not in [o.value for o in SANDBOX_DISPUTE_OUTCOMES]:
        raise FieldErrors.one("Outcome", "Outcome must be won or lost")
    dispute = dispute_service.sandbox_outcome(deps(), g.caller, dispute_no, DisputeStatus(body["outcome"]))
    return json_response(dispute_body(dispute))
