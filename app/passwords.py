"""Argon2id password hashing with the parameters the configuration names (PASSWORD_HASH_PROFILE)."""
from __future__ import annotations

from argon2 import PasswordHasher, profiles

# "standard" is the library's current recommendation, for every real deployment. "fast" is the
# library's cheapest setting, for the test suite only: it hashes in microseconds instead of
# about a tenth of a second, and guards nothing.
PROFILES = {
    "standard": profiles.get_default_parameters(),
    "fast": profiles.CHEAPEST,
}


def hasher_for(profile: str) -> PasswordHasher:
    """The Argon2id hasher of a profile named in PROFILES."""
    if profile not in PROFILES:
        raise ValueError(f"PASSWORD_HASH_PROFILE must be one of {', '.join(PROFILES)}, not {profile!r}")
    return PasswordHasher.from_parameters(PROFILES[profile])
