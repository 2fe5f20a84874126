"""Files a merchant sends as a dispute's evidence (issue 30's "text fields and files"): which kinds,
which types (told by the content's first bytes, not by the name the browser gave), how large.

The bytes are kept in the database (dispute_files) until a worker uploads them to the provider
when the evidence is submitted (app.payments.dispute_calls); the provider's file id is kept then,
so a retried submission does not upload the same file twice.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .model import FieldErrors

# The kinds of file a dispute's evidence takes, with what each is for. Stripe's Dispute evidence
# has a file field of the same name for each; a dispute keeps one file of each kind (a new one
# replaces the old while the evidence is a draft).
FILE_KINDS: dict[str, str] = {
    "receipt": "The receipt or invoice the customer was given",
    "customer_communication": "Messages with the customer about the purchase",
    "shipping_documentation": "Proof of delivery (a carrier's receipt, a signed delivery note)",
    "uncategorized_file": "Any other document that supports the case",
}
MAX_FILE_BYTES = 4 * 1024 * 1024  # Stripe takes larger files; 4 MB keeps a row and a request small
MAX_FILENAME = 200

# Accepted types by their first bytes.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
)


def sniff_content_type(data: bytes) -> str | None:
    """The file's type by its content (PDF, PNG or JPEG), or None for anything else."""
    return next((kind for magic, kind in _MAGIC if data.startswith(magic)), None)


def safe_filename(name: str | None) -> str:
    """The uploaded file's name without any path, printable, at most MAX_FILENAME characters."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip()
    return (base or "evidence")[-MAX_FILENAME:]


def check_file(kind: str, data: bytes) -> str:
    """The file's content type; FieldErrors for an unknown kind, an empty, too large or unaccepted file."""
    if kind not in FILE_KINDS:
        raise FieldErrors.one("Kind", f"Kind must be one of {', '.join(FILE_KINDS)}")
    if not data:
        raise FieldErrors.one("File", "File is required (a PDF, PNG or JPEG)")
    if len(data) > MAX_FILE_BYTES:
        raise FieldErrors.one("File", f"File must be at most {MAX_FILE_BYTES // (1024 * 1024)} MB")
    content_type = sniff_content_type(data)
    if content_type is None:
        raise FieldErrors.one("File", "File must be a PDF, PNG or JPEG")
    return content_type


@dataclass
class DisputeFile:
    """A file of a dispute's evidence as stored (`data` only when the worker reads it to upload)."""

    id: int
    dispute_id: int
    kind: str
    filename: str
    content_type: str
    size: int
    sha256: str
    created_at: datetime
    created_by: str
    provider_file_id: str | None = None
    uploaded_at: datetime | None = None
    data: bytes | None = None
