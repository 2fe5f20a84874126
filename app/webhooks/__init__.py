"""Webhooks: the outbox written beside each change, signed delivery, retries, the inbox."""
