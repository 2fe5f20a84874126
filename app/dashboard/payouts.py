"""New payouts: method, destination account (its bank from the method's list, or read from the
IBAN; a NUBAN's holder named by the provider), amount, customer."""
from __future__ import annotations

import pycountry
from flask import abort, flash, render_template, request, url_for
from flask_login import current_user
from wtforms import SelectChoice

from app.auth.users import current_caller, requires
from app.payments import account_names, approvals, bank_lists, create
from app.payments.account_names import AccountName, NameState
from app.payments.approvals import ApprovalKind, LimitExceeded
from app.payments.accounts import iban_bank
from app.payments.model import (
    BankListNotReady,
    BankListRefused,
    DuplicateReference,
    FieldErrors,
    PaymentMethod,
    SimulatedLiveMoney,
)
from app.payments.provider import ProviderUnavailable
from app.payments.schemas import PAYOUT_ACTION, CreateTransactionRequest, parse_create
from app.store.merchants import merchant_by_id
from app.web import deps

from . import dashboard, once
from .approvals import money_controls, threshold_text
from .formatting import money
from .forms import PayoutForm, blank_to_none, form_amount
from .htmx import load_page, page_or_fragment

# Which form input each of the create service's field errors belongs to.
FIELD_OF_ERROR = {
    "Amount": "amount", "Currency": "currency", "Reference": "reference",
    "StatementDescriptor": "statement_descriptor", "CallbackUrl": "callback_url",
    "Billing.FirstName": "first_name", "Billing.LastName": "last_name", "Billing.Email": "email",
    "Billing.CustomerReference": "customer_reference", "Billing.Country": "country",
    "Payment.PaymentMethod": "method", "Payment.Bank": "bank", "Payment.Holder": "holder",
    "Payment.AccountNumber": "account_number",
}
# The create service's messages name the API's fields; the form says it in its own words.
FORM_WORDS_OF_FIELD = {
    "Billing.FirstName": "Customer first name", "Billing.LastName": "Customer last name",
    "Billing.Email": "Customer e-mail", "Billing.CustomerReference": "Customer reference",
    "Billing.Country": "Country", "Payment.PaymentMethod": "Payout method", "Payment.Bank": "Bank",
    "Payment.Holder": "Account holder", "Payment.AccountNumber": "Account number",
    "StatementDescriptor": "Statement text", "CallbackUrl": "Callback URL",
    "TransactionAction": "Transaction action",
}
BANK_LIST_MAX_AGE = 3600
# The account number's label by the method's account rule: what the user has in hand.
ACCOUNT_LABELS = {"iban": "IBAN", "nuban": "Account number (NUBAN)", "msisdn": "Mobile number"}
# What the form says while a provider names the account, and when it finds none.
NAMING = "Confirming the account holder's name with the bank…"
NOT_CONFIRMED = "The bank did not confirm this account: {refusal}"
NAME_WORDS = {"states": NameState, "naming": NAMING, "not_confirmed": NOT_CONFIRMED}


def in_form_words(message: str) -> str:
    """A service message with the API's field names replaced by the form's: "Billing.FirstName is
    required" -> "Customer first name is required"."""
    for api_name, words in FORM_WORDS_OF_FIELD.items():
        message = message.replace(api_name, words)
    return message


def _payout_methods() -> list[PaymentMethod]:
    with deps().uow(write=False) as uow:
        return [m for m in uow.methods.list(current_caller()) if m.is_payout]


def country_name(alpha2: str) -> str:
    """English short name of a country code (NG -> Nigeria)."""
    found = pycountry.countries.get(alpha_2=alpha2)
    return getattr(found, "common_name", None) or (found.name if found else alpha2)


class Destination:
    """The chosen method, currency and country, and the bank list (or refusal) they lead to."""

    def __init__(self, methods: list[PaymentMethod], method_id: str | None, currency: str | None,
                 country: str | None):
        self.methods = methods
        self.method = next((m for m in methods if m.method_id == method_id), methods[0] if methods else None)
        method = self.method
        self.currency = currency if method and currency in method.currencies else \
            (method.currencies[0] if method else None)
        self.country = country if method and country in method.countries else None
        self.banks: list = []
        self.refusal: str | None = None
        self.fetching = False  # a provider account's list not stored yet: a worker is fetching it
        self.needs_country = False
        # An IBAN names its bank: no list to pick from, the bank read from the IBAN is shown.
        self.bank_from_iban = bool(method) and create.bank_from_account(method)
        if method is None or self.bank_from_iban or not method.bank_list:
            return  # (a method without a bank list pays to the account it names: no bank to choose)
        if len(method.countries) > 1 and not self.country:
            self.needs_country = True  # a whole region's banks is no list to pick from
            return
        try:
            self.banks = bank_lists.list_banks(deps(), current_caller(), method.method_id,
                                               self.currency, self.country)
        except BankListRefused as error:
            self.refusal = str(error)
        except BankListNotReady as error:
            self.refusal = str(error)
            self.fetching = True  # the picker asks again by itself (htmx) until the list is stored
        except ProviderUnavailable:
            self.refusal = "The bank list could not be fetched from the provider. Try again in a moment."

    @property
    def account_label(self) -> str:
        """The account number's label for the method: "IBAN", "Account number (NUBAN)", ..."""
        method = self.method
        if method is None:
            return "Account number"
        if account_names.names_accounts(method, self.currency):
            return ACCOUNT_LABELS["nuban"]
        return ACCOUNT_LABELS.get(method.account_rule or "", "Account number")

    @staticmethod
    def iban_bank_of(account_number: str | None):
        """The bank an IBAN typed so far belongs to, or None."""
        return iban_bank(account_number) if account_number else None

    @property
    def names_accounts(self) -> bool:
        """Whether the account's holder is named by the provider as it is typed (NUBANs)."""
        return bool(self.method) and account_names.names_accounts(self.method, self.currency)

    def fill_choices(self, form: PayoutForm) -> None:
        """Give the form's selects the merchant's methods, the method's currencies and countries."""
        form.method.choices = [SelectChoice(m.method_id, m.name) for m in self.methods]
        form.method.data = self.method.method_id if self.method else None
        form.currency.choices = [SelectChoice(c) for c in (self.method.currencies if self.method else [])]
        form.currency.data = self.currency
        countries = sorted(((country_name(c), c) for c in (self.method.countries if self.method else [])))
        form.country.choices = [SelectChoice("", "Any country")] + [
            SelectChoice(code, name) for name, code in countries]  # by name, as people look for them
        form.country.data = self.country or ""
        form.account_number.label.text = self.account_label


def bank_name(payout) -> str | None:
    """The display name of a payout's bank, from the bank list of its method."""
    code = payout.payment_details.get("bank")
    if not code:
        return None
    try:
        banks = bank_lists.list_banks(deps(), current_caller(), payout.payment_method, payout.currency,
                                      payout.billing.get("country"))
    except (BankListRefused, BankListNotReady, ProviderUnavailable):
        return None  # the page shows the code alone
    return next((bank.name for bank in banks if bank.code == code), None)


def destination_of(source) -> Destination:
    """The destination a form or query string names (method, currency, country), among the
    merchant's payout methods."""
    return Destination(_payout_methods(), source.get("method"), source.get("currency"),
                       blank_to_none(source.get("country")))


def _new_form() -> PayoutForm:
    with deps().uow(write=False) as uow:
        merchant = merchant_by_id(uow.conn, current_user.merchant_id)
    form = PayoutForm(formdata=None)
    form.callback_url.data = merchant.default_callback_url or ""
    form.statement_descriptor.data = merchant.name[:22]
    return form


@dashboard.get("/payouts/new")
@requires("create_payout")
def new_payout():
    """The payout form, with the bank list of the first (or chosen) payout method."""
    form, destination = _blank_form(request.args)
    return render_template("dashboard/payout_new.html", form=form, destination=destination,
                           bank_errors=[], error_summary=[], selected_bank=None, review=None, focus=None)


@dashboard.get("/payouts/new/destination")
@requires("create_payout")
def payout_destination():
    """htmx: currency, country and bank picker for the method just chosen."""
    form, destination = _blank_form(request.args)
    return page_or_fragment("dashboard/payout_new.html", "dashboard/_payout_destination.html",
                            form=form, destination=destination, bank_errors=[], error_summary=[],
                            selected_bank=None)


def _blank_form(args):
    """A new payout form and its destination (method, currency, country in args), choices filled."""
    form = _new_form()
    # A method chosen again keeps the account typed so far (its label and checks follow the method).
    form.holder.data = args.get("holder", "")
    form.account_number.data = args.get("account_number", "")
    destination = destination_of(args)
    destination.fill_choices(form)
    return form, destination


@dashboard.get("/payouts/banks")
@requires("create_payout")
def payout_banks():
    """htmx: the searchable bank list of a method, currency and country; cacheable for an hour."""
    destination = destination_of(request.args)
    response = page_or_fragment("dashboard/_bank_picker.html", "dashboard/_bank_picker.html",
                                destination=destination, bank_errors=[], selected_bank=None)
    if destination.banks:
        response.headers["Cache-Control"] = f"private, max-age={BANK_LIST_MAX_AGE}"
    return response


@dashboard.get("/payouts/iban-bank")
@requires("create_payout")
def iban_bank_hint():
    """htmx, while an account number is typed: the IBAN's own bank, and whether it is the one chosen."""
    return render_template("dashboard/_iban_bank.html",
                           bank=iban_bank(request.args.get("account_number", "")),
                           chosen=(request.args.get("bank") or "").strip().upper())


# The payout form's fields the account name hint reads, and asks again with.
ACCOUNT_NAME_FIELDS = ("method", "currency", "bank", "account_number", "holder")


@dashboard.get("/payouts/account-name")
@requires("create_payout")
def account_name_hint():
    """htmx, while a NUBAN is typed or its bank chosen, and on the review: whose the account is,
    as the provider names it; asked again every second while a worker asks the provider."""
    args = request.args
    named = _account_name(args.get("method", ""), args.get("currency"), args.get("bank"),
                          args.get("account_number"))
    holder = args.get("holder", "")
    differs = bool(named and named.name and holder.strip()) and not same_name(holder, named.name)
    # The next ask carries the form's fields only: any other query name, "mode" or one of
    # url_for's own (_external, _scheme), would choose the URL it goes to.
    asked = {name: args[name] for name in ACCOUNT_NAME_FIELDS if name in args}
    return render_template("dashboard/_account_name.html", named=named, differs=differs,
                           again=url_for("dashboard.account_name_hint", **asked), **NAME_WORDS)


def same_name(typed: str, named: str) -> bool:
    """Whether a typed holder is the name the bank has, in any case and word order (banks often
    put the surname first: "OKAFOR CHINEDU")."""
    return sorted(typed.casefold().split()) == sorted(named.casefold().split())


def _account_name(method: str, currency: str | None, bank: str | None,
                  account_number: str | None) -> AccountName | None:
    return account_names.account_name(deps(), current_caller(), method, blank_to_none(currency),
                                      blank_to_none(bank), blank_to_none(account_number))


def _posted_body(form: PayoutForm) -> dict:
    """The posted payout exactly as the API would get it. The holder is typed once: customer names
    left blank are the holder's (all but the last word, and the last word)."""
    first_name, last_name = blank_to_none(form.first_name.data), blank_to_none(form.last_name.data)
    holder = blank_to_none(form.holder.data)
    if holder and not first_name and not last_name:
        first_name, last_name = split_name(holder)
    body = {
        "amount": form_amount(form.amount.data),
        "currency": blank_to_none(request.form.get("currency")),
        "reference": blank_to_none(form.reference.data),
        "statementDescriptor": blank_to_none(form.statement_descriptor.data),
        "callbackUrl": blank_to_none(form.callback_url.data),
        "transactionAction": PAYOUT_ACTION,
        "billing": {
            "firstName": first_name,
            "lastName": last_name,
            "email": blank_to_none(form.email.data),
            "customerReference": blank_to_none(form.customer_reference.data),
        },
        "payment": {
            "paymentMethod": request.form.get("method"),
            "bank": blank_to_none(request.form.get("bank")),
            "holder": blank_to_none(form.holder.data),
            "accountNumber": blank_to_none(form.account_number.data),
        },
    }
    if blank_to_none(request.form.get("country")):
        body["billing"]["country"] = request.form["country"].strip()
    return body


def split_name(holder: str) -> tuple[str, str]:
    """A holder's name as customer first and last name: "Ada Obi Chioma" -> ("Ada Obi", "Chioma");
    a one-word name is both."""
    words = holder.split()
    if len(words) == 1:
        return words[0], words[0]
    return " ".join(words[:-1]), words[-1]


def _posted_payout() -> tuple[PayoutForm, Destination, dict]:
    """The posted form, its destination (404 without a payout method) and the request it makes."""
    form = PayoutForm()
    destination = destination_of(request.form)
    if destination.method is None:
        abort(404)
    return form, destination, _posted_body(form)


@dashboard.post("/payouts/review")
@requires("create_payout")
def review_payout():
    """Step 1: check the payout with the create's own checks, then show what would be sent, to
    confirm; with step=edit, the form again as it was filled in."""
    form, destination, body = _posted_payout()
    if request.form.get("step") == "edit":
        return _form_page(form, destination, focus="amount")
    try:
        payout_request, checked = create.check_create_body(deps(), current_caller(), body)
        four_eyes = money_controls(ApprovalKind.PAYOUT, payout_request.amount, payout_request.currency)
    except FieldErrors as error:
        return _form_with_errors(form, destination, _with_name_refusal(error.errors, body))
    except DuplicateReference as error:
        return _form_with_errors(form, destination, {"Reference": [str(error)]})
    except LimitExceeded as error:
        return _form_with_errors(form, destination, {"Amount": [str(error)]})
    except SimulatedLiveMoney as error:
        return _form_with_errors(form, destination, {"": [str(error)]})
    except BankListNotReady as error:
        return _form_with_errors(form, destination, {"": [str(error)]})
    named = _named(body)
    if named is not None and named.state is NameState.REFUSED:
        return _form_with_errors(form, destination, _with_name_refusal({}, body, named))
    # The confirmation carries a one-time key: a second submit of it (double click, a POST
    # sent again) gets the first payout (or approval request) back instead of sending the money twice.
    return _payout_page(form=form, destination=destination,
                        review=_summary(payout_request, checked, destination, named),
                        request_key=once.new_key(), needs_approval=four_eyes,
                        threshold=threshold_text(payout_request.currency) if four_eyes else None)


def _named(body: dict) -> AccountName | None:
    """Whose the posted account is, as its provider names it (NUBANs), or None."""
    payment = body["payment"]
    return _account_name(payment["paymentMethod"] or "", body["currency"], payment["bank"],
                         payment["accountNumber"])


def _with_name_refusal(errors: dict[str, list[str]], body: dict,
                       named: AccountName | None = None) -> dict[str, list[str]]:
    """The field errors, and the provider's refusal to name the account on the account number
    (asked here when the checks stopped before it), so one pass shows every error."""
    if "Payment.AccountNumber" in errors or "Payment.Bank" in errors:
        return errors
    if named is None:
        named = _named(body)
    if named is None or named.state is not NameState.REFUSED:
        return errors
    return {**errors, "Payment.AccountNumber": [NOT_CONFIRMED.format(refusal=named.refusal)]}


def _summary(payout: CreateTransactionRequest, checked: create.CheckedCreate, destination: Destination,
             named: AccountName | None) -> dict:
    """What the review shows of a checked payout, in the form's words."""
    bank = checked.payment_details.get("bank")
    if destination.bank_from_iban and bank:
        found = iban_bank(checked.payment_details["accountNumber"])
        bank_label = f"{found.name} ({bank})" if found else bank
    else:
        bank_label = next((f"{b.name} ({b.code})" for b in destination.banks if b.code == bank), bank)
    billing = payout.billing
    return {
        "amount": money(payout.amount, payout.currency), "method": destination.method.name,
        "bank": bank_label, "holder": payout.payment.holder,
        "account_number": checked.payment_details["accountNumber"],
        "customer": f"{billing.first_name} {billing.last_name}", "email": billing.email,
        "customer_reference": billing.customer_reference,
        "country": country_name(billing.country) if billing.country else None,
        "reference": payout.reference, "statement_descriptor": payout.statement_descriptor,
        "callback_url": payout.callback_url, "account_label": destination.account_label,
        "named": named,
        "name_differs": bool(named and named.name) and not same_name(payout.payment.holder, named.name),
        "name_again": url_for(
            "dashboard.account_name_hint", method=destination.method.method_id, currency=payout.currency,
            bank=bank or "", account_number=checked.payment_details["accountNumber"],
            holder=payout.payment.holder, review="1"),
    }


@dashboard.post("/payouts")
@requires("create_payout")
def create_payout():
    """Step 2: create the reviewed payout through the API's own service (once per review), then
    show its page."""
    form, destination, body = _posted_payout()
    caller = current_caller()
    try:
        payout_request = _parsed(body)
        if money_controls(ApprovalKind.PAYOUT, payout_request.amount, payout_request.currency):
            return _request_approval(payout_request, body)
        payout = once.run_once(deps(), caller, "payout", request.form.get("request_key", ""), body,
                               lambda on_created: create.create_transaction(
                                   deps(), caller, payout_request, on_created))
    except FieldErrors as error:
        return _form_with_errors(form, destination, error.errors)
    except DuplicateReference as error:
        return _form_with_errors(form, destination, {"Reference": [str(error)]})
    except once.FormReused:
        return _form_with_errors(form, destination, {"": [
            "This confirmation was already used for another payout; review the payout again."]})
    except LimitExceeded as error:
        return _form_with_errors(form, destination, {"Amount": [str(error)]})
    except SimulatedLiveMoney as error:
        return _form_with_errors(form, destination, {"": [str(error)]})
    except BankListNotReady as error:
        return _form_with_errors(form, destination, {"": [str(error)]})
    flash(f"Payout {payout.tx_no} created: {payout.status.value}.", "success")
    return load_page(url_for("dashboard.transaction", tx_no=payout.tx_no))


def _parsed(body: dict) -> CreateTransactionRequest:
    """The posted payout read as the API reads it; a body with field errors is also checked by the
    create's own checks, so every error comes at once (create.check_create_body)."""
    try:
        return parse_create(body)
    except FieldErrors:
        create.check_create_body(deps(), current_caller(), body)
        raise


def _payout_page(status: int = 200, **context):
    """The payout page, or for htmx its form or review part (#payout) alone."""
    context = {"bank_errors": [], "error_summary": [], "selected_bank": request.form.get("bank"),
               "review": None, "focus": None, **NAME_WORDS, **context}
    return page_or_fragment("dashboard/payout_new.html", "dashboard/_payout.html", status, **context)


def _form_page(form: PayoutForm, destination: Destination, focus: str | None = None):
    """The form again as it was filled in (Edit on the review)."""
    destination.fill_choices(form)
    return _payout_page(form=form, destination=destination, focus=focus)


def _request_approval(create: CreateTransactionRequest, body: dict):
    """A reviewed payout above the threshold: checked as its create would be, then left for a
    second user (once per review: the confirmation's key names the request)."""
    key = request.form.get("request_key", "")
    if not (0 < len(key) <= once.MAX_KEY_LENGTH and key.isascii() and key.isprintable()):
        key = once.new_key()
    awaiting = approvals.request_payout(deps(), current_caller(), create,
                                        {**body, "amount": str(create.amount)}, key)
    flash(f"The payout of {money(awaiting.amount, awaiting.currency)} to {create.payment.holder} awaits "
          "another user's approval.", "info")
    return load_page(url_for("dashboard.approvals_list", _anchor=f"approval-{awaiting.id}"))


def spread_errors(form, errors: dict[str, list[str]], field_of_error: dict[str, str]) -> tuple[list, list]:
    """Put the create service's errors, in the form's words, on the form's fields; the bank
    picker's errors and the summary's (field, message) pairs are returned."""
    bank_errors, summary = [], []
    for name, messages in errors.items():
        field_name = field_of_error.get(name)
        messages = [in_form_words(message) for message in messages]
        if field_name == "bank":
            bank_errors.extend(messages)
        elif field_name:
            getattr(form, field_name).errors = list(messages)
        summary.extend((field_name, message) for message in messages)
    return bank_errors, summary


def _form_with_errors(form: PayoutForm, destination: Destination, errors: dict[str, list[str]]):
    destination.fill_choices(form)
    bank_errors, summary = spread_errors(form, errors, FIELD_OF_ERROR)
    return _payout_page(422, form=form, destination=destination, bank_errors=bank_errors,
                        error_summary=summary)
