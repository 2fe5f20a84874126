"""The dashboard's forms. Money forms carry no validators of their own: the services check
them, so the dashboard shows exactly the messages the API gives."""
from __future__ import annotations

import re
from decimal import Decimal

from email_validator import EmailNotValidError, validate_email
from flask_wtf import FlaskForm
from markupsafe import Markup
from wtforms import (
    DateField,
    EmailField,
    SelectMultipleField,
    SelectChoice,
    SelectField,
    StringField,
    TextAreaField,
)
from wtforms.validators import DataRequired, InputRequired, Length, Optional, ValidationError

from app.payments.formats import storable_text
from app.store.merchants import ROLES
from app.payments.tokens import SCOPES, parse_limits, parse_networks

from .formatting import LOCALES, locale_name, time_zones


_PLAIN_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def form_amount(text: str | None) -> Decimal | str | None:
    """A typed amount as an exact Decimal (never through float).

    Anything that is not a plain decimal number goes to the service as it is, so the
    service's own field error ("Amount must be a number") is what the user reads.
    """
    text = (text or "").strip()
    if not text:
        return None
    return Decimal(text) if _PLAIN_DECIMAL.fullmatch(text) else text


def blank_to_none(text: str | None) -> str | None:
    """Empty form inputs are missing fields for the services."""
    text = (text or "").strip()
    return text or None


class RefundForm(FlaskForm):
    """Amount, reason (kept in UserDefinedField1) and description (UserDefinedField2).

    Its inputs are written out in _refund_panel.html, beside the arithmetic they belong to.
    """

    class Meta:
        csrf = False  # CSRFProtect checks every POST already (form field or X-CSRFToken header)

    amount = StringField("Amount to refund")
    reason = StringField("Reason")
    description = TextAreaField("Description")


class PayoutForm(FlaskForm):
    """A payout: method, destination account, amount and the customer it is for."""

    class Meta:
        csrf = False

    method = SelectField("Payout method")
    currency = SelectField("Currency")
    country = SelectField("Country", description="Optional; narrows the bank list")
    holder = StringField("Account holder", render_kw={"autocomplete": "off"})
    account_number = StringField("Account number", render_kw={"autocomplete": "off",
                                                              "spellcheck": "false"})
    amount = StringField("Amount", render_kw={"inputmode": "decimal", "autocomplete": "off"})
    reference = StringField("Reference", description="Your unique reference for this payout")
    statement_descriptor = StringField("Statement text", description="At most 22 characters")
    callback_url = StringField("Callback URL", description="Where status webhooks are sent")
    first_name = StringField("First name", description="Left blank: the account holder's")
    last_name = StringField("Last name", description="Left blank: the account holder's")
    email = StringField("E-mail", render_kw={"type": "email"})
    customer_reference = StringField("Customer reference")


def storable(_form, field) -> None:
    """Text the databases can store, with the API's message for text they cannot."""
    if field.data and not storable_text(field.data):
        raise ValidationError(f"{field.label.text} must not contain control characters")


class TokenForm(FlaskForm):
    """A new API token for the current mode."""

    class Meta:
        csrf = False

    label = StringField("Label", validators=[Length(max=100), storable],
                        description="What uses this token, e.g. 'checkout server'")
    scopes = SelectMultipleField("Scopes", choices=[SelectChoice(s, s) for s in SCOPES], default=list(SCOPES),
                                 validators=[DataRequired("Choose at least one scope")])
    expires_on = DateField("Expires on", validators=[Optional()],
                           description="Optional: the token is refused from the start of that day, UTC")
    networks = TextAreaField("Allowed networks", validators=[Optional(), Length(max=2000), storable],
                             description=Markup("Optional: CIDRs, one a line or comma-separated, e.g. "
                                                "<code>203.0.113.0/24</code>"))
    limits = TextAreaField("Daily limits", validators=[Optional(), Length(max=2000), storable],
                           description="Optional, one a line: refund EUR 500.00 or payout NGN 100000 "
                                       "(per UTC day and currency)")

    def validate_networks(self, field) -> None:
        """CIDRs that ipaddress reads."""
        try:
            parse_networks(field.data or "")
        except ValueError as error:
            raise ValidationError(str(error)) from None

    def validate_limits(self, field) -> None:
        """Lines of kind, currency and amount."""
        try:
            parse_limits(field.data or "")
        except ValueError as error:
            raise ValidationError(str(error)) from None


def sign_in_address(_form, field) -> None:
    """A well-formed e-mail address; .test names are allowed (the demo users have them)."""
    try:
        validate_email(field.data or "", check_deliverability=False, test_environment=True)
    except EmailNotValidError as error:
        raise ValidationError(f"Enter a valid e-mail address: {error}") from None


class NewUserForm(FlaskForm):
    """A new dashboard user of the merchant (who chooses their own password through an invitation)."""

    class Meta:
        csrf = False

    email = EmailField("E-mail", validators=[InputRequired("Enter an e-mail address"),
                                             Length(max=254), sign_in_address])
    role = SelectField("Role", choices=[SelectChoice(r, r.title()) for r in ROLES])


def _zone_choices(first: SelectChoice | None = None) -> list[SelectChoice]:
    return ([first] if first else []) + [SelectChoice(z, z.replace("_", " ")) for z in time_zones()]


class MerchantTimeZoneForm(FlaskForm):
    """The time zone every member of the merchant reads times in, unless they choose their own."""

    class Meta:
        csrf = False

    time_zone = SelectField("Time zone", validate_choice=True,
                            description="Times on every page and in the CSV's local-time column; "
                                        "the API and stored times stay UTC.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.time_zone.choices = _zone_choices()


class DisplayForm(FlaskForm):
    """How the signed-in user reads dates, times and amounts: locale and time zone."""

    class Meta:
        csrf = False

    locale = SelectField("Date and number format", validate_choice=True,
                         description="Dates, times and amounts on every page follow it.")
    time_zone = SelectField("Time zone", validate_choice=True)

    def __init__(self, *args, merchant_zone: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.locale.choices = [SelectChoice(tag, f"{locale_name(tag)} ({tag})") for tag in LOCALES]
        self.time_zone.choices = _zone_choices(
            SelectChoice("", f"The merchant's: {merchant_zone.replace('_', ' ')}"))
