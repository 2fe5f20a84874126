"""Flask commands: db upgrade, merchant create, user create, provider connect/disconnect/reencrypt,
ledger verify, reconcile verify, daily-totals verify/fold, demo, worker."""
from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import click
from flask import Flask, current_app
from flask.cli import AppGroup, with_appcontext

from app.payments.model import Caller, FieldErrors, Mode
from app.payments.money import format_amount, from_minor
from app.payments.reconcile import Outcome
from app.providers import accounts
from app.store.daily_totals import DailyMismatch, check_daily_totals, fold_changes
from app.store.db import own_sqlite_file
from app.store.encryption import SecretBoxError
from app.store.ledger import Mismatch, check_refund_totals
from app.store.settlements import (LineException, MissingPayment, StoredLine, line_exceptions,
                                  missing_from_settlement)
from app.store.merchants import ROLES, create_merchant, create_user, merchant_by_name
from app.store.provider_accounts import account_by_id
from app.web import deps as app_deps, password_hasher

CLI_ACTOR = "cli"  # who the audit log names for changes made here


def register_cli(app: Flask) -> None:
    """Attach the command groups to the app."""
    app.cli.add_command(db)
    app.cli.add_command(merchant)
    app.cli.add_command(user)
    app.cli.add_command(provider)
    app.cli.add_command(ledger)
    app.cli.add_command(reconcile)
    app.cli.add_command(daily_totals)
    app.cli.add_command(demo)
    app.cli.add_command(worker)


def alembic_config(database_url: str):
    """Alembic configuration for the migrations folder and this database."""
    from alembic.config import Config as AlembicConfig

    root = Path(__file__).resolve().parent.parent
    config = AlembicConfig(str(root / "alembic.ini"))
    config.set_main_option("script_location", str(root / "migrations"))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade_database(database_url: str) -> None:
    """Bring the database to the newest migration."""
    from alembic import command

    own_sqlite_file(database_url)
    command.upgrade(alembic_config(database_url), "head")


db = AppGroup("db", help="Database migrations.")


@db.command("upgrade")
def db_upgrade():
    """Apply every migration not yet applied."""
    upgrade_database(current_app.config["DATABASE_URL"])
    click.echo("database is up to date")


merchant = AppGroup("merchant", help="Merchants.")


@merchant.command("create")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the credentials as JSON.")
def merchant_create(name: str, as_json: bool):
    """Create a merchant with live and sandbox tokens, webhook secrets and an inbox."""
    deps = app_deps()
    with deps.uow() as uow:
        if merchant_by_name(uow.conn, name) is not None:
            raise click.ClickException(f"merchant {name} already exists")
        created = create_merchant(uow, name, current_app.config["BASE_URL"])
        uow.commit()
    if as_json:
        click.echo(json.dumps(created.as_json(), indent=2))
        return
    for key, value in created.as_json().items():
        click.echo(f"{key}: {value}")
    click.echo("Tokens and secrets are shown once; store them now.")


user = AppGroup("user", help="Dashboard users.")


@user.command("create")
@click.argument("email")
@click.option("--merchant", "merchant_name", required=True, help="Merchant the user belongs to.")
@click.option("--role", type=click.Choice(ROLES), required=True)
@click.option("--password", help="Password; a random one is generated and printed when omitted.")
def user_create(email: str, merchant_name: str, role: str, password: str | None):
    """Create a dashboard user of a merchant."""
    deps = app_deps()
    shown = password is None
    password = password or secrets.token_urlsafe(12)
    with deps.uow() as uow:
        found = merchant_by_name(uow.conn, merchant_name)
        if found is None:
            raise click.ClickException(f"no merchant named {merchant_name}")
        create_user(uow.conn, found.id, email, role, password_hasher().hash(password))
        uow.commit()
    click.echo(f"user {email.lower()} ({role}) created for {merchant_name}")
    if shown:
        click.echo(f"password: {password}")


provider = AppGroup("provider", help="Merchants' provider accounts (Paystack, Stripe).")


def _merchant_named(conn, name: str):
    """The merchant row with this name; a usage error when there is none."""
    found = merchant_by_name(conn, name)
    if found is None:
        raise click.ClickException(f"no merchant named {name}")
    return found


@provider.command("connect")
@click.argument("merchant_name")
@click.argument("provider_name", metavar="PROVIDER", type=click.Choice(accounts.PROVIDERS))
@click.option("--mode", required=True, type=click.Choice([m.value for m in Mode]),
              help="The mode whose methods the account serves.")
@click.option("--secret-key", help="The provider's secret key; asked for (without echo) when omitted.")
@click.option("--webhook-secret", help="Stripe's webhook signing secret (whsec_...); not for Paystack.")
@click.option("--base-url", help="The provider's API address, for tests and regional hosts.")
@click.option("--json", "as_json", is_flag=True, help="Print the account as JSON.")
def provider_connect(merchant_name: str, provider_name: str, mode: str, secret_key: str | None,
                     webhook_secret: str | None, base_url: str | None, as_json: bool):
    """Connect a merchant's provider account (or replace its keys) and offer its methods in MODE."""
    if secret_key is None:  # asked on stderr, so --json output stays parseable
        secret_key = click.prompt("Secret key", hide_input=True, err=True)
    deps = app_deps()
    with deps.uow(write=False) as uow:
        merchant_id = _merchant_named(uow.conn, merchant_name).id
    try:
        connected = accounts.connect(
            deps.uow, deps.providers.box, Caller(merchant_id, Mode(mode), CLI_ACTOR), provider_name,
            secret_key=secret_key, webhook_secret=webhook_secret, base_url=base_url,
            paydesk_url=current_app.config["BASE_URL"], now=deps.clock())
    except FieldErrors as refused:
        messages = [message for field_messages in refused.errors.values() for message in field_messages]
        raise click.ClickException("not connected:\n" + "\n".join(f"  {m}" for m in messages)) from None
    if as_json:
        click.echo(json.dumps(connected.as_json(), indent=2))
        return
    click.echo(_connected_text(merchant_name, connected))


def _connected_text(merchant_name: str, connected: accounts.Connected) -> str:
    """What connecting did, the webhook URL, and where to set it at the provider."""
    name = accounts.PROVIDER_NAMES[connected.provider]
    account = f"provider account {connected.provider_account_id}"
    if connected.replaced:
        done = (f"Replaced the secrets of {merchant_name}'s {name} account in {connected.mode} "
                f"({account}); its webhook URL is unchanged.")
    else:
        done = f"Connected {name} for {merchant_name} in {connected.mode} ({account})."
    steps = accounts.setup_steps(connected.provider, Mode(connected.mode))
    return "\n".join([done, f"Methods: {', '.join(connected.methods)}",
                      f"Webhook URL: {connected.webhook_url}", f"Set this webhook URL at {name}:",
                      *(f"  {number}. {step}" for number, step in enumerate(steps, 1))])


@provider.command("disconnect")
@click.argument("merchant_name")
@click.argument("account_id", metavar="PROVIDER_ACCOUNT_ID", type=click.IntRange(1, 2**63 - 1))
def provider_disconnect(merchant_name: str, account_id: int):
    """Forget a provider account's secrets and stop its methods (its history stays)."""
    deps = app_deps()
    with deps.uow(write=False) as uow:
        merchant_id = _merchant_named(uow.conn, merchant_name).id
        account = account_by_id(uow.conn, account_id)
    if account is None or account.merchant_id != merchant_id:
        raise click.ClickException(f"{merchant_name} has no provider account {account_id}")
    caller = Caller(merchant_id, account.mode, CLI_ACTOR)
    if not accounts.disconnect(deps.uow, caller, account_id, deps.clock()):
        raise click.ClickException(f"provider account {account_id} is disconnected already")
    click.echo(f"Disconnected {merchant_name}'s {accounts.PROVIDER_NAMES[account.provider]} account in "
               f"{account.mode.value} (provider account {account_id}): its secrets are forgotten and "
               "its methods take no new transactions.")


@provider.command("reencrypt")
def provider_reencrypt():
    """After putting a new key first in PAYDESK_ENCRYPTION_KEY: seal every stored secret with it."""
    deps = app_deps()
    try:
        count, two_factor, signing = accounts.reencrypt_all(deps.uow, deps.providers.box)
    except SecretBoxError as error:
        raise click.ClickException(f"nothing re-encrypted: {error}") from None
    click.echo(f"Re-encrypted the secrets of {count} provider account{'' if count == 1 else 's'}, "
               f"{two_factor} two-factor secret{'' if two_factor == 1 else 's'} "
               f"and {signing} webhook signing secret{'' if signing == 1 else 's'} "
               "under the first key of PAYDESK_ENCRYPTION_KEY; the other keys can now be removed.")


ledger = AppGroup("ledger", help="The refund ledger: totals kept on each payment's row.")


@ledger.command("verify")
def ledger_verify():
    """Check every payment's refund totals against its refunds; exit 1 if any differ."""
    with app_deps().uow(write=False) as uow:
        found = check_refund_totals(uow.conn)
    for mismatch in found.mismatches:
        click.echo(_mismatch_text(mismatch))
    if found.mismatches:
        raise click.ClickException(f"ledger: {len(found.mismatches)} of {found.payments} payments "
                                   "do not match their refunds")
    click.echo(f"ledger ok: {found.payments} payments checked")


def _mismatch_text(mismatch: Mismatch) -> str:
    """One payment whose row and refunds disagree, both sides in the payment's currency."""
    def amount(minor: int) -> str:
        return format_amount(from_minor(minor, mismatch.currency), mismatch.currency)

    return (f"{mismatch.tx_no} (merchant {mismatch.merchant_id}, {mismatch.mode}, {mismatch.currency}): "
            f"reserved {amount(mismatch.reserved_on_row)} on the row, "
            f"{amount(mismatch.reserved_by_refunds)} by its refunds; "
            f"captured {amount(mismatch.captured_on_row)} on the row, "
            f"{amount(mismatch.captured_by_refunds)} by its refunds; "
            f"held {amount(mismatch.held_on_row)} on the row, "
            f"{amount(mismatch.held_by_requests)} by its requests awaiting approval")


reconcile = AppGroup("reconcile", help="Providers' settlements against Paydesk's transactions.")


@reconcile.command("verify")
def reconcile_verify():
    """List the settlement lines that do not match and the payments missing from every settlement;
    exit 1 if there are any."""
    deps = app_deps()
    with deps.uow(write=False) as uow:
        lines = line_exceptions(uow.conn)
        missing = missing_from_settlement(uow.conn, deps.clock(), current_app.config["SETTLEMENT_DELAY"])
    for exception in lines:
        click.echo(_line_exception_text(exception))
    for payment in missing:
        click.echo(_missing_text(payment))
    if lines or missing:
        raise click.ClickException(f"reconcile: {len(lines)} settlement line{'' if len(lines) == 1 else 's'} "
                                   f"and {len(missing)} missing payment{'' if len(missing) == 1 else 's'}")
    click.echo("reconcile ok: every settlement line matched, no payment missing")


def _line_exception_text(exception: LineException) -> str:
    """A settlement line that is not matched: where it is, what it names, what was found."""
    line = exception.line
    gross = format_amount(from_minor(line.gross_minor, line.currency), line.currency)
    names = line.tx_no or line.reference or "nothing Paydesk knows"
    return (f"{line.outcome.value}: {exception.provider} settlement {exception.provider_settlement_id} "
            f"of {exception.settled_on} (merchant {exception.merchant_id}, {exception.mode}), "
            f"{line.type.value} {line.provider_transaction_id} {gross} {line.currency}, {names}{_held(line)}")


def _held(line: StoredLine) -> str:
    """What Paydesk holds for a line whose amount differs, so the difference reads at once."""
    if line.outcome is not Outcome.AMOUNT_DIFFERS:
        return ""
    amount = format_amount(from_minor(line.paydesk_amount_minor, line.paydesk_currency), line.paydesk_currency)
    return f" (Paydesk has {amount} {line.paydesk_currency})"


def _missing_text(payment: MissingPayment) -> str:
    """A Captured payment no settlement carries."""
    amount = format_amount(from_minor(payment.amount_minor, payment.currency), payment.currency)
    return (f"missing_from_settlement: {payment.tx_no} (merchant {payment.merchant_id}, {payment.mode}, "
            f"{payment.provider}) {amount} {payment.currency}, captured {payment.created_at:%Y-%m-%d %H:%M} UTC")


daily_totals = AppGroup("daily-totals", help="The Overview's per-day totals, kept by the database.")


@daily_totals.command("verify")
def daily_totals_verify():
    """Check the daily totals against the transactions; exit 1 if any differ."""
    with app_deps().uow(write=False) as uow:
        mismatches = check_daily_totals(uow.conn)
    for mismatch in mismatches:
        click.echo(_daily_mismatch_text(mismatch))
    if mismatches:
        raise click.ClickException(f"daily totals: {len(mismatches)} groups do not match their transactions")
    click.echo("daily totals ok")


@daily_totals.command("fold")
def daily_totals_fold():
    """Fold every waiting change into the daily totals now (the worker does this each round)."""
    folded = 0
    while True:
        with app_deps().uow() as uow:
            batch = fold_changes(uow.conn)
            uow.commit()
        folded += batch
        if not batch:
            break
    click.echo(f"folded {folded} change{'' if folded == 1 else 's'}")


def _daily_mismatch_text(mismatch: DailyMismatch) -> str:
    """One group whose transactions and total disagree (transactions minus total)."""
    reason = f", {mismatch.decline_reason}" if mismatch.decline_reason else ""
    return (f"merchant {mismatch.merchant_id}, {mismatch.mode}, {mismatch.day}, {mismatch.currency}, "
            f"{mismatch.kind} {mismatch.status}{reason}: {mismatch.count_difference:+d} transactions, "
            f"{mismatch.amount_difference:+d} in minor units")


@click.command()
@with_appcontext
def demo():
    """Seed the demo merchant, its users and sample transactions (safe to run again)."""
    from app.demo import seed_demo

    credentials = seed_demo(current_app)
    click.echo(credentials.describe())


@click.command()
@with_appcontext
@click.option("--once", is_flag=True, help="Run one round of every job and exit.")
@click.option("--interval", default=0.5, show_default=True, help="Seconds between rounds.")
def worker(once: bool, interval: float):
    """Background worker: webhook delivery, pending-refund recovery, payouts, expiry.

    Database errors do not end it (see app.worker); SIGTERM or SIGINT does.
    """
    from app.worker import StopRequest, lower_cpu_priority, run_until_stopped

    stop = StopRequest()
    stop.listen()
    priority = lower_cpu_priority(current_app.config["WORKER_NICENESS"])
    click.echo(f"worker {os.getpid()} started ({priority})")
    run_until_stopped(current_app._get_current_object(), stop, interval=interval, once=once)
    click.echo(f"worker {os.getpid()} stopped")
