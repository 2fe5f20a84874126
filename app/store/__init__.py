"""Storage: SQLAlchemy Core tables, the engine, repositories and the unit of work."""
