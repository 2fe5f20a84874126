"""Alembic environment: runs the migrations against the configured database."""
from alembic import context
from sqlalchemy import create_engine

from app.store.tables import metadata

config = context.config


def run_migrations_online() -> None:
    """Run every pending migration in one transaction per migration."""
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=metadata,
                          render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations_online()
