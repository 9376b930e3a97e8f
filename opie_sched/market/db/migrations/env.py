"""Alembic environment: runs on the engine given in the config's
attributes (see :mod:`opie_sched.market.db.migration`)."""

from alembic import context

from opie_sched.market.db import models

config = context.config
target_metadata = models.Base.metadata


def run_migrations_online():
    engine = config.attributes['engine']
    with engine.connect() as connection:
        context.configure(connection=connection,
                          target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
