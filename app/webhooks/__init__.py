"""Webhooks: the outbox written beside each change, signed delivery, retries, the inbox.

settings    the retry schedule, time limits, leases, threads (DeliverySettings)
outbox      claiming due events and recording each attempt's result (the SQL)
sender      one signed, guarded HTTP attempt (signing, guard)
dispatcher  the delivery threads and their start in a worker process
resend      an event queued again by hand
log         reading deliveries, attempts and the inbox, scoped to the caller
inbox       the merchant's receiver, which verifies and logs what arrives
"""
