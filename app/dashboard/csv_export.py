"""CSV downloads of the dashboard's lists: streamed, correctly quoted, safe to open in a spreadsheet."""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from flask import Response, stream_with_context

# A spreadsheet runs a cell starting with = + - @ tab or CR as a formula (OWASP, CSV Injection).
# A cell starts at the start of a value, and also after a separator or line break inside one: a
# spreadsheet whose separator is ; (or one that ignores quotes) starts a new cell there. The
# cells hold what customers and API callers wrote (references, targets, details), so at each
# such place a ' goes before the trigger and the spreadsheet reads text. Numbers are not spared:
# Paydesk writes no negative amount (refunds and payouts are positive, with their own kind), so a
# cell starting with - or + is text someone typed, and text it stays.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CELL_BREAKS = ",;\t\r\n"
_TRIGGER_AT_CELL_START = re.compile(
    "(?:^|(?<=[" + re.escape(_CELL_BREAKS) + "]))( *)(?=[" + re.escape("".join(FORMULA_START)) + "])")
_FLUSH_AT = 64 * 1024


def spreadsheet_text(value) -> str:
    """The cell's text, with a ' before each formula trigger where a spreadsheet could start a cell."""
    text = "" if value is None else str(value)
    return _TRIGGER_AT_CELL_START.sub(r"\1'", text)


def csv_lines(header: Iterable[str], rows: Iterable[Iterable]) -> Iterator[str]:
    """The header and every row as CSV text, every cell quoted, in chunks of about 64 KiB."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL)  # a ; or , inside a value splits no cell
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


def utc_cell(moment: datetime) -> str:
    """A moment for machines: UTC to the second, 2026-11-27 09:44:48 (the column says UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def local_cell(moment: datetime, time_zone: str) -> str:
    """A moment in a time zone with its offset, unambiguous for people and spreadsheets alike:
    2026-11-27 10:44:48+01:00."""
    return moment.astimezone(ZoneInfo(time_zone)).isoformat(sep=" ", timespec="seconds")
