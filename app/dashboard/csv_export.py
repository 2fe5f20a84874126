"""CSV downloads of the dashboard's lists: streamed, correctly quoted, safe to open in a spreadsheet."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator

from flask import Response, stream_with_context

# A spreadsheet runs a cell starting with one of these as a formula: the cells hold what
# customers and API callers wrote (references, targets, details), so they are written as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FLUSH_AT = 64 * 1024


def spreadsheet_text(value) -> str:
    """The cell's text, with a leading ' where a spreadsheet would otherwise read a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_lines(header: Iterable[str], rows: Iterable[Iterable]) -> Iterator[str]:
    """The header and every row as CSV text (the csv module's quoting), in chunks of about 64 KiB."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    for row in rows:
        writer.writerow([spreadsheet_text(cell) for cell in row])
        if buffer.tell() > _FLUSH_AT:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def csv_download(filename: str, header: Iterable[str], rows: Iterable[Iterable]) -> Response:
    """A streamed CSV attachment: rows are read while it is sent, so its size has no limit."""
    response = Response(stream_with_context(csv_lines(header, rows)), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
