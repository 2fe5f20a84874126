"""The services' rules through an in-memory unit of work and a scripted provider: no Flask, no database."""
