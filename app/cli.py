"""Flask commands: db upgrade, merchant create, user create, demo, worker."""
from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import click
from flask import Flask, current_app
from flask.cli import AppGroup, with_appcontext

from app.store.merchants import ROLES, create_merchant, create_user, merchant_by_name
from app.web import deps as app_deps


def register_cli(app: Flask) -> None:
    """Attach the command groups to the app."""
    app.cli.add_command(db)
    app.cli.add_command(merchant)
    app.cli.add_command(user)
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

    if database_url.startswith("sqlite:///"):
        Path(database_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
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
        create_user(uow.conn, found.id, email, role, password)
        uow.commit()
    click.echo(f"user {email.lower()} ({role}) created for {merchant_name}")
    if shown:
        click.echo(f"password: {password}")


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
    from app.worker import StopRequest, run_until_stopped

    stop = StopRequest()
    stop.listen()
    click.echo(f"worker {os.getpid()} started")
    run_until_stopped(current_app._get_current_object(), stop, interval=interval, once=once)
    click.echo(f"worker {os.getpid()} stopped")
