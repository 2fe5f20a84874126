"""The rules of the payment interface: money, statuses, moves, refunds. No Flask, no SQL."""
