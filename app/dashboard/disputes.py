"""Disputes in the dashboard (finance and admin): the queue of open disputes by deadline, a
dispute's page with its payment's whole story, the evidence form (Paydesk's draft, edited) and
the acceptance, both through the same services as the API."""
from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import BooleanField, SelectChoice, SelectField, StringField, TextAreaField
from wtforms.validators import DataRequired, Length

from app.auth.users import current_caller, requires
from app.payments import dispute_service
from app.payments.dispute_files import FILE_KINDS, MAX_FILE_BYTES
from app.payments.disputes import (
    EVIDENCE_FIELDS,
    LOST_STATUSES,
    MAX_EVIDENCE_TEXT,
    OPEN_STATUSES,
    Dispute,
    DisputeNotFound,
    DisputeRejected,
    DisputeStatus,
)
from app.payments.formats import code_in_words
from app.payments.model import FieldErrors
from app.util import could_be_key
from app.web import deps

from . import dashboard
from .formatting import deadline_words, field_label
from .transactions import detail_context

PERMISSION = "answer_disputes"
MAX_DISPUTE_NO_LENGTH = 40
CLOSED_SHOWN = 20
ACCEPT_CONFIRMATION = "I accept this dispute: its amount goes back to the customer and cannot be refunded"


class EvidenceForm(FlaskForm):
    """The evidence text fields, one per EVIDENCE_FIELDS entry (the API reads the same list)."""

    class Meta:
        csrf = False  # CSRFProtect checks every POST already


# The evidence fields that hold one line, and the input each is typed in (the customer's details
# are not the user's own: the browser is not to fill them in); the others are text areas.
ONE_LINE_EVIDENCE = {"customerName": "text", "customerEmail": "email", "customerPhone": "tel", "serviceDate": "text"}
TEXT_ROWS = {"uncategorizedText": 8}


def _evidence_field(name: str, words: str):
    label = field_label(name[:1].upper() + name[1:])
    validators = [Length(max=MAX_EVIDENCE_TEXT)]
    if name in ONE_LINE_EVIDENCE:
        return StringField(label, description=words, validators=validators,
                           render_kw={"type": ONE_LINE_EVIDENCE[name], "autocomplete": "off", "spellcheck": "false"})
    return TextAreaField(label, description=words, validators=validators, render_kw={"rows": TEXT_ROWS.get(name, 3)})


for _name, _words in EVIDENCE_FIELDS.items():
    setattr(EvidenceForm, _name, _evidence_field(_name, _words))


class AcceptForm(FlaskForm):
    """Accepting needs its confirmation ticked."""

    class Meta:
        csrf = False

    confirm = BooleanField(ACCEPT_CONFIRMATION, validators=[DataRequired("Tick the box to accept the dispute.")])


class FileForm(FlaskForm):
    """One evidence file and its kind (the API's POST /disputes/{id}/files takes the same)."""

    class Meta:
        csrf = False

    kind = SelectField("Kind of document",
                       choices=[SelectChoice(k, code_in_words(k)) for k in FILE_KINDS],
                       description="; ".join(f"{code_in_words(k)}: {w.lower()}"
                                             for k, w in FILE_KINDS.items()))
    file = FileField("File", description="A PDF, PNG or JPEG of at most 4 MB. It goes to the provider "
                                         "when the evidence is submitted.")


# A multipart body may be a little larger than its file (boundaries, kind, CSRF token).
FILE_BODY_LIMIT = MAX_FILE_BYTES + 64 * 1024


@dashboard.url_value_preprocessor
def _file_body_limit(endpoint: str | None, _values: dict | None) -> None:
    """The file form takes bodies up to FILE_BODY_LIMIT; set before the CSRF check reads the body."""
    if endpoint == "dashboard.dispute_file":
        request.max_content_length = FILE_BODY_LIMIT


def _dispute_or_404(dispute_no: str) -> Dispute:
    if not could_be_key(dispute_no, MAX_DISPUTE_NO_LENGTH):
        abort(404)
    try:
        return dispute_service.get(deps(), current_caller(), dispute_no)
    except DisputeNotFound:
        abort(404)


@dashboard.app_context_processor
def dispute_words() -> dict:
    """deadline(dispute) for the queue and the dispute page: the deadline in people's words."""
    return {"deadline": lambda dispute: deadline_words(dispute.due_by, deps().clock())}


def needing_response() -> dict:
    """The signed-in user's merchant's disputes awaiting an answer, per mode (the menu's count)."""
    with deps().uow(write=False) as uow:
        return uow.disputes.needing_response(current_user.merchant_id)


@dashboard.get("/disputes")
@requires(PERMISSION)
def disputes():
    """Open disputes, the nearest deadline first; then the latest closed ones."""
    caller = current_caller()
    with deps().uow(write=False) as uow:
        open_disputes = uow.disputes.open_queue(caller, [s.value for s in OPEN_STATUSES])
        closed = uow.disputes.listing(caller, statuses=[s.value for s in DisputeStatus if s not in OPEN_STATUSES],
                                      limit=CLOSED_SHOWN)
    return render_template("dashboard/disputes.html", open_disputes=open_disputes, closed=closed)


@dashboard.get("/disputes/<dispute_no>")
@requires(PERMISSION)
def dispute(dispute_no: str):
    """One dispute: its deadline, status moves, the payment's story and the answer forms."""
    found = _dispute_or_404(dispute_no)
    return _page(found, EvidenceForm(data=found.evidence), AcceptForm())


def _page(found: Dispute, evidence_form: EvidenceForm, accept_form: AcceptForm, status: int = 200,
          file_form: FileForm | None = None):
    with deps().uow(write=False) as uow:
        moves = uow.disputes.history(found.id)
        files = uow.disputes.files(found.id)
    story = detail_context(found.payment_tx_no)
    return render_template("dashboard/dispute.html", dispute=found, moves=moves, form=evidence_form,
                           accept_form=accept_form, files=files, file_form=file_form or FileForm(),
                           lost=found.status in LOST_STATUSES,
                           answerable=found.status is DisputeStatus.NEEDS_RESPONSE and found.action is None,
                           **story), status


@dashboard.post("/disputes/<dispute_no>/evidence")
@requires(PERMISSION)
def dispute_evidence(dispute_no: str):
    """Save the evidence draft, or (the Submit button) have a worker send it to the provider."""
    found = _dispute_or_404(dispute_no)
    form = EvidenceForm()
    if not form.validate():
        return _page(found, form, AcceptForm(), 422)
    submit = request.form.get("step") == "submit"  # the form's two buttons: save or submit
    fields = {name: (form.data[name] or "").strip() for name in EVIDENCE_FIELDS}
    try:
        saved = dispute_service.save_evidence(deps(), current_caller(), dispute_no, fields, submit=submit)
    except FieldErrors as refused:
        for name, messages in refused.errors.items():  # in the form's words, not the API's
            shown = getattr(form, name[:1].lower() + name[1:])
            shown.errors = [message.replace(name, shown.label.text, 1) for message in messages]
        return _page(found, form, AcceptForm(), 422)
    except DisputeRejected as refused:
        flash(str(refused), "error")
        return redirect(url_for("dashboard.dispute", dispute_no=dispute_no), 303)
    if not submit:
        flash("Evidence draft saved.", "success")
    elif saved.action:
        flash("Evidence is being sent to the provider; this page shows when it has taken it.", "success")
    else:
        flash(f"Evidence submitted: the dispute is {saved.status.value.replace('_', ' ')}.", "success")
    return redirect(url_for("dashboard.dispute", dispute_no=dispute_no), 303)


@dashboard.post("/disputes/<dispute_no>/files")
@requires(PERMISSION)
def dispute_file(dispute_no: str):
    """Keep a file for the evidence (a worker uploads it to the provider with the evidence)."""
    found = _dispute_or_404(dispute_no)
    form = FileForm()
    upload = request.files.get("file")
    data = upload.stream.read(MAX_FILE_BYTES + 1) if upload else b""
    try:
        if not form.validate():
            raise FieldErrors.one("Kind", "Choose the kind of document")
        dispute_service.add_file(deps(), current_caller(), dispute_no, form.kind.data, upload and upload.filename,
                                 data)
    except FieldErrors as refused:
        for name, messages in refused.errors.items():
            getattr(form, name.lower()).errors = list(messages)
        return _page(found, EvidenceForm(data=found.evidence), AcceptForm(), 422, file_form=form)
    except DisputeRejected as refused:
        flash(str(refused), "error")
        return redirect(url_for("dashboard.dispute", dispute_no=dispute_no), 303)
    flash(f"File {upload.filename} kept; it goes to {found.provider} with the evidence.", "success")
    return redirect(url_for("dashboard.dispute", dispute_no=dispute_no), 303)


@dashboard.post("/disputes/<dispute_no>/accept")
@requires(PERMISSION)
def dispute_accept(dispute_no: str):
    """Accept the dispute once its confirmation is ticked."""
    found = _dispute_or_404(dispute_no)
    form = AcceptForm()
    if not form.validate():
        return _page(found, EvidenceForm(data=found.evidence), form, 422)
    try:
        accepted = dispute_service.accept(deps(), current_caller(), dispute_no)
    except DisputeRejected as refused:
        flash(str(refused), "error")
        return redirect(url_for("dashboard.dispute", dispute_no=dispute_no), 303)
    flash("Dispute accepted." if accepted.action is None
          else "Acceptance is being sent to the provider.", "success")
    return redirect(url_for("dashboard.dispute", dispute_no=dispute_no), 303)

