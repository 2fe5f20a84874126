"""Who is signed in: the dashboard user, their role's permissions, their merchant and mode."""
from __future__ import annotations

from functools import cache, wraps
from urllib.parse import urlsplit

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from flask import abort, g, jsonify, redirect, request, session, url_for
from flask_login import LoginManager, UserMixin, current_user, login_required
from werkzeug.urls import iri_to_uri

from app.payments.model import Caller, Mode
from app.store.user_sessions import LAST_SEEN_EVERY, live_session_user, note_seen
from app.web import deps as app_deps, password_hasher

from .sessions import SESSION_KEY, sessions_started_after

# What each role may do beyond reading; support reads and adds notes. decisions.md fixes the roles.
PERMISSIONS = {
    "refund": frozenset({"finance", "admin"}),
    "cancel": frozenset({"finance", "admin"}),
    "resend_webhook": frozenset({"finance", "admin"}),
    "create_payout": frozenset({"payouts", "admin"}),
    "manage_settings": frozenset({"admin"}),
    "view_overview": frozenset({"finance", "admin"}),
    # The Reconciliation pages: providers' settlements, their lines and exceptions.
    "reconcile": frozenset({"finance", "admin"}),
    # The disputes queue and answering disputes (evidence, acceptance).
    "answer_disputes": frozenset({"finance", "admin"}),
    # Sees the approvals list; approving a refund also needs "refund", a payout "create_payout".
    "approve": frozenset({"finance", "payouts", "admin"}),
    # The Batches pages; a payout batch also needs "create_payout", a refund batch "refund".
    "batches": frozenset({"finance", "payouts", "admin"}),
    # Every role: support staff, who talk to customers, are the ones who most need to note things.
    "add_note": frozenset({"support", "finance", "payouts", "admin"}),
}
ROLE_DESCRIPTIONS = {
    "support": "Reads transactions, webhooks and the audit log; adds notes to transactions",
    "finance": "Support, plus refunds, cancels and webhook resends",
    "payouts": "Support, plus new payouts and saved recipients",
    "admin": "Everything, including API tokens, webhook secrets and users",
}
# Live first: support and finance staff look up real customers' payments; the sandbox is a
# deliberate switch (its pages' URLs start /test/), marked by a banner on every page while it is on.
DEFAULT_MODE = Mode.LIVE
# What browsers remove from anywhere in a URL, and trim from its ends (WHATWG URL parsing).
_URL_IGNORED = str.maketrans("", "", "\t\n\r")
_URL_TRIMMED = "".join(map(chr, range(0x21)))
# A longer `next` is not a page of this site (and would not fit the cookie between sign-in steps).
MAX_LOCAL_PATH = 2000

# The locale a user's dates and amounts are written in until they choose one (Account page).
DEFAULT_LOCALE = "en-GB"

login_manager = LoginManager()
login_manager.login_view = "auth.login"
login_manager.login_message = "Sign in to continue."
login_manager.login_message_category = "info"


class DashboardUser(UserMixin):
    """A signed-in member of a merchant's staff in one of their sessions, read from the database
    on every request."""

    def __init__(self, row):
        self.id = row.id
        self.session_id = row.session_id
        self.merchant_id = row.merchant_id
        self.merchant_name = row.merchant_name
        self.email = row.email
        self.role = row.role
        self.active = bool(row.active)
        self.has_two_factor = bool(row.has_two_factor)
        # The merchant requires a second factor and this user has none yet: enrol first.
        self.must_enrol = bool(row.require_two_factor) and not self.has_two_factor
        # How their pages write times and amounts (app/dashboard/formatting.py): their own
        # choices, else the merchant's time zone and the default locale.
        self.locale = row.locale or DEFAULT_LOCALE
        self.own_time_zone = row.own_time_zone
        self.merchant_time_zone = row.merchant_time_zone
        self.time_zone = row.own_time_zone or row.merchant_time_zone

    @property
    def is_active(self) -> bool:
        """Deactivated users are signed out on their next request."""
        return self.active

    def can(self, permission: str) -> bool:
        """Whether the user's role allows the action (see PERMISSIONS)."""
        return self.role in PERMISSIONS[permission]


@login_manager.user_loader
def load_user(user_id: str) -> DashboardUser | None:
    """The cookie's user if its session row is live, fresh from the database, so role changes,
    deactivation and ended sessions apply at once."""
    key = session.get(SESSION_KEY)
    if not isinstance(key, str):
        return None  # a cookie from before server-side sessions, or none
    deps = app_deps()
    now = deps.clock()
    with deps.uow(write=False) as uow:
        row = live_session_user(uow.conn, key, sessions_started_after(now))
    if row is None or str(row.id) != user_id:
        return None
    if now - row.last_seen_at >= LAST_SEEN_EVERY:
        with deps.uow() as uow:
            note_seen(uow.conn, row.session_id, now)
            uow.commit()
    return DashboardUser(row)


@login_manager.unauthorized_handler
def unauthorized():
    """Send people to the login page; an htmx request gets a full-page redirect, not a fragment."""
    back = request.full_path.removesuffix("?") if request.method == "GET" else None
    target = url_for("auth.login", next=back)
    if request.headers.get("HX-Request"):
        response = jsonify(error="Sign in to continue")
        response.status_code = 401
        response.headers["HX-Redirect"] = target
        return response
    return redirect(target)


@cache
def _dummy_hash(hasher: PasswordHasher) -> str:
    return hasher.hash("no user has this password")


def check_password(row, password: str) -> bool:
    """Verify the password (Argon2id); an unknown e-mail costs the same time as a wrong password."""
    hasher = password_hasher()
    stored = row.password_hash if row is not None else _dummy_hash(hasher)
    try:
        hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False
    return row is not None and bool(row.active)


def current_mode() -> Mode:
    """The mode the user is looking at: live or sandbox, as the page's URL says
    (app/dashboard/modes.py puts it in `g`); live outside the dashboard's pages."""
    return g.get("mode", DEFAULT_MODE)


def current_caller() -> Caller:
    """The services' caller for this request: the user's merchant and mode, their e-mail, their address."""
    return Caller(current_user.merchant_id, current_mode(), current_user.email, request.remote_addr)


def local_path(target: str | None) -> str | None:
    """The path on this site a browser would go to for `target` (?next= or a form's back field),
    or None when it would leave the site or cannot be a Location (no open redirects).

    Normalised as the WHATWG URL parser does before judging: tabs and newlines removed anywhere,
    C0 controls and spaces trimmed at both ends, backslashes read as slashes; what is left must
    have no scheme or host, start with a single "/" and be at most MAX_LOCAL_PATH characters.
    Other characters are percent-encoded (iri_to_uri), so the Location header is always ASCII.
    """
    if not target:
        return None
    path = target.translate(_URL_IGNORED).strip(_URL_TRIMMED).replace("\\", "/")
    if (len(path) > MAX_LOCAL_PATH or not path.startswith("/") or path.startswith("//")
            or not path.isprintable()):
        return None
    parts = urlsplit(path)
    if parts.scheme or parts.netloc:
        return None
    return iri_to_uri(path)


def requires(permission: str):
    """View decorator: signed in, and the role allows the action (403 otherwise)."""
    def decorator(view):
        @wraps(view)
        def checked(*args, **kwargs):
            if not current_user.can(permission):
                abort(403)
            return view(*args, **kwargs)
        return login_required(checked)
    return decorator
