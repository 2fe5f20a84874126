"""Which navigation item a page belongs to, decided from its endpoint here rather than in templates."""
from __future__ import annotations

from dataclasses import dataclass, replace

from flask_login import current_user


@dataclass(frozen=True)
class Section:
    """A navigation item: its label, the page it links to, and the pages it stands for."""

    label: str
    endpoint: str
    pages: tuple[str, ...]  # endpoint prefixes of the pages that mark this item as current
    permission: str | None = None  # shown only to roles with this permission

    def covers(self, endpoint: str) -> bool:
        """Whether the page with this endpoint belongs to the section."""
        return endpoint.startswith(self.pages)


@dataclass(frozen=True)
class NavItem:
    """A navigation link as a template writes it."""

    label: str
    endpoint: str
    current: bool
    badge: str = ""  # a count shown beside the label (Approvals: the requests waiting)
    badge_label: str = ""  # what the count means, for the tooltip: "2 waiting for you: ..."
    badge_words: str = ""  # the same after the count, for screen readers: "waiting for you: ..."


PROVIDER_PAGES = ("dashboard.providers", "dashboard.connect_provider",
                  "dashboard.test_provider_connection", "dashboard.confirm_disconnect_provider",
                  "dashboard.disconnect_provider")
APPROVAL_SETTINGS_PAGES = ("dashboard.approval_settings", "dashboard.set_approval_threshold",
                           "dashboard.set_user_limits")
APPROVAL_PAGES = ("dashboard.approvals_list", "dashboard.approve_request", "dashboard.reject_request")
RECIPIENT_PAGES = ("dashboard.recipients_list", "dashboard.new_recipient", "dashboard.save_recipient",
                   "dashboard.archive_recipient", "dashboard.pay_recipient", "dashboard.review_recipient_payout",
                   "dashboard.create_recipient_payout", "dashboard.save_payout_recipient")
ENDPOINT_PAGES = ("dashboard.webhook_endpoint",)
MAIN_NAV = (
    Section("Overview", "dashboard.overview", ("dashboard.overview",), "view_overview"),
    Section("Transactions", "dashboard.transactions",
            ("dashboard.transaction", "dashboard.refund", "dashboard.review", "dashboard.cancel_payment")),
    Section("New payout", "dashboard.new_payout",
            ("dashboard.new_payout", "dashboard.payout", "dashboard.create_payout"), "create_payout"),
    Section("Recipients", "dashboard.recipients_list", RECIPIENT_PAGES, "create_payout"),
    Section("Batches", "dashboard.batches_page", ("dashboard.batch",), "batches"),
    Section("Disputes", "dashboard.disputes", ("dashboard.dispute",), "answer_disputes"),
    Section("Webhooks", "dashboard.webhooks",
            ("dashboard.webhooks", "dashboard.inbox", "dashboard.provider_events")),
    Section("Reconciliation", "dashboard.reconciliation",
            ("dashboard.reconciliation", "dashboard.settlement", "dashboard.export_settlement"), "reconcile"),
    Section("Audit log", "dashboard.audit", ("dashboard.audit",)),
    Section("Approvals", "dashboard.approvals_list", APPROVAL_PAGES, "approve"),
    Section("Developers", "dashboard.developers", ("dashboard.developers", "dashboard.developer_request"),
            "manage_settings"),
    Section("Settings", "dashboard.settings", ("dashboard.settings", *PROVIDER_PAGES, *APPROVAL_SETTINGS_PAGES,
                                               *ENDPOINT_PAGES), "manage_settings"),
)
WEBHOOK_TABS = (
    Section("Sent deliveries", "dashboard.webhooks", ("dashboard.webhooks",)),
    Section("Received (inbox)", "dashboard.inbox", ("dashboard.inbox",)),
    Section("Provider events", "dashboard.provider_events", ("dashboard.provider_events",)),
)
SETTINGS_TABS = (
    Section("General", "dashboard.settings", ("dashboard.settings",), "manage_settings"),
    Section("Providers", "dashboard.providers", PROVIDER_PAGES, "manage_settings"),
    Section("Approvals and limits", "dashboard.approval_settings", APPROVAL_SETTINGS_PAGES,
            "manage_settings"),
    Section("Webhook endpoints", "dashboard.webhook_endpoints", ENDPOINT_PAGES, "manage_settings"),
)


def landing_endpoint(user) -> str:
    """The page a user starts on (after sign-in, and at /): the Overview for the roles that see it
    (finance and admin), the transactions list for the others (support, payouts)."""
    return "dashboard.overview" if user.can("view_overview") else "dashboard.transactions"


def nav_items(sections: tuple[Section, ...], endpoint: str | None) -> list[NavItem]:
    """The sections the signed-in user may open, the one the endpoint belongs to marked current."""
    return [NavItem(s.label, s.endpoint, s.covers(endpoint or ""))
            for s in sections if s.permission is None or current_user.can(s.permission)]


def with_counts(items: list[NavItem], endpoint: str, counts: dict, what: str, mode) -> list[NavItem]:
    """The item linking to endpoint with a count of what waits in both modes ("Approvals 2"),
    each mode's share said in words ("waiting for you: 1 in live, 1 in sandbox")."""
    total = sum(counts.values())
    if not total:
        return items
    # This page's mode first: it is the one the reader is in.
    modes = sorted(counts, key=lambda m: m is not mode)
    shares = ", ".join(f"{counts[m]} in {m.value}" for m in modes if counts[m])
    words = f"{what}: {shares}"
    return [replace(item, badge=str(total), badge_label=f"{total} {words}", badge_words=words)
            if item.endpoint == endpoint else item for item in items]
