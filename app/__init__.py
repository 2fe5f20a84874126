"""Paydesk: the application factory."""
from __future__ import annotations

from datetime import timedelta

from flask import Flask
from flask_wtf.csrf import CSRFProtect
from werkzeug.middleware.proxy_fix import ProxyFix

from app.config import Config
from app.errors import HEALTH_CHECK_PATH, PaydeskFlask, init_errors
from app.headers import init_headers
from app.passwords import hasher_for
from app.payments.deps import Deps
from app.providers.http import ALLOWED_NETWORKS_SETTING as PROVIDER_NETWORKS, Timeouts
from app.providers.registry import ProviderRegistry
from app.providers.simulator import providers
from app.store.encryption import SecretBox
from app.store.method_cache import MethodCache
from app.store.provider_accounts import account_by_id
from app.store.provider_calls import Announcer
from app.store.db import make_engine
from app.store.unit_of_work import UnitOfWork
from app.util import utcnow
from app.web import install_deps, install_password_hasher
from app.webhooks.guard import AddressGuard

csrf = CSRFProtect()


def create_app(config: Config | None = None) -> Flask:
    """Build the web application: configuration, database, blueprints and CLI."""
    config = config or Config()
    app = PaydeskFlask(__name__, template_folder="../templates", static_folder="../static",
                       instance_path=str(config.INSTANCE_PATH))
    app.config.from_object(config)
    install_password_hasher(app, hasher_for(config.PASSWORD_HASH_PROFILE))
    if config.PROXY_FIX_HOPS:
        # Behind N trusted proxies: the client address (audit log, rate limits) and scheme come
        # from their X-Forwarded-* headers.
        hops = config.PROXY_FIX_HOPS
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)
    engine = make_engine(config.DATABASE_URL, pool_size=config.DB_POOL_SIZE,
                         ping_idle_after=config.DB_PING_IDLE_AFTER)
    method_cache = MethodCache(config.TOKEN_CACHE_SECONDS)
    box = SecretBox(config.PAYDESK_ENCRYPTION_KEY)
    # PostgreSQL's NOTIFY of provider calls committed due; on SQLite the workers poll.
    announcer = Announcer(engine) if engine.dialect.name == "postgresql" else None

    def unit_of_work(write: bool = True) -> UnitOfWork:
        return UnitOfWork(engine, write=write, method_cache=method_cache, box=box, announcer=announcer)

    def read_account(account_id: int):
        with unit_of_work(write=False) as uow:
            return account_by_id(uow.conn, account_id)

    install_deps(app, Deps(
        uow=unit_of_work,
        providers=ProviderRegistry(
            providers(config.SIMULATOR_LATENCY), read_account, box,
            return_url=config.CHECKOUT_URL + "/{tx_no}/return",
            timeouts=Timeouts(config.PROVIDER_CONNECT_TIMEOUT, config.PROVIDER_READ_TIMEOUT),
            clock=utcnow, guard=AddressGuard.from_config(app.config, PROVIDER_NETWORKS)),
        clock=utcnow,
        pending_expiry=config.PENDING_EXPIRY,
        demo_mode=config.DEMO_MODE,
        request_log_retention=timedelta(days=config.REQUEST_LOG_RETENTION_DAYS),
        hand_over=(lambda tx: announcer.announce_due([tx])) if announcer is not None else None,
    ))
    app.extensions["paydesk.engine"] = engine

    from app.api import api
    from app.checkout import checkout
    from app.auth import init_auth
    from app.cli import register_cli
    from app.dashboard import init_dashboard
    from app.providers.inbound import provider_webhooks
    from app.webhooks.inbox import inbox

    init_errors(app)
    init_headers(app)
    csrf.init_app(app)
    csrf.exempt(api)
    csrf.exempt(inbox)  # receivers are called by machines, authenticated by signature
    csrf.exempt(provider_webhooks)
    app.register_blueprint(api)
    app.register_blueprint(checkout)
    app.register_blueprint(inbox)
    app.register_blueprint(provider_webhooks)
    init_auth(app)
    init_dashboard(app)
    register_cli(app)

    @app.get(HEALTH_CHECK_PATH)
    def health():
        """Load balancer check: the process answers and the database is reachable (else 503)."""
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        return {"status": "ok"}

    return app
