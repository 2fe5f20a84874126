"""Webhook delivery, signing, SSRF guard, inbox and resend, over real HTTP."""
