"""SSRF guard: requests to an address a merchant chose (webhook callbackUrls, provider accounts'
base URLs) reach only public addresses, checked on the address actually connected to.

A URL's host is resolved once per request; every address it resolves to is
vetted and the request is sent to a vetted address itself, never to a second
resolution, so DNS rebinding has no gap to use. The Host header, TLS SNI and
certificate checks still use the hostname (GuardedAdapter, for a requests session;
GuardedPool, for urllib3's pools alone). Neither follows a redirect or takes a
proxy from the environment.
"""
from __future__ import annotations

import functools
import ipaddress
import socket
from http.cookiejar import DefaultCookiePolicy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import SplitResult, urlsplit, urlunsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.certs import where as requests_ca_bundle
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError, SSLError
from urllib3.util import connection

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
T = TypeVar("T")

# IPv6 ranges that carry an IPv4 address in their last 32 bits (NAT64); the
# IPv4 address is what the packets finally reach, so it is the one vetted.
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class TargetRefused(Exception):
    """The target is not allowed (scheme, or an address that is not public)."""


def parse_networks(value: str) -> tuple[IPNetwork, ...]:
    """An *_ALLOWED_NETWORKS setting: comma-separated CIDRs ("" allows nothing beyond public addresses)."""
    return tuple(ipaddress.ip_network(part.strip(), strict=False)
                 for part in value.split(",") if part.strip())


def effective_address(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv4-mapped, 6to4, Teredo or NAT64 IPv6 address really reaches."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            return address.ipv4_mapped
        if address.sixtofour:
            return address.sixtofour
        if address.teredo:
            return address.teredo[1]
        if address in NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def why_not_public(address: IPAddress) -> str | None:
    """Why delivering to this address is refused ("private", "loopback", ...), or None if it is public."""
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_unspecified:
        return "unspecified"
    if address in ipaddress.ip_network("100.64.0.0/10"):
        return "carrier-grade NAT"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "site-local"
    if address.is_private:
        return "private"
    if address.is_reserved or not address.is_global:
        return "reserved"
    return None


@dataclass(frozen=True)
class AddressGuard:
    """Decides which resolved addresses a request may connect to."""

    setting: str  # the configuration key listing the allowed networks, named in every refusal
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_config(cls, config: Mapping, setting: str) -> AddressGuard:
        """The guard of one allow-list setting of the app's configuration (missing: public only)."""
        return cls(setting, parse_networks(config.get(setting, "")))

    def refusal(self, address: IPAddress) -> str | None:
        """Why this address is refused, or None when a request may connect to it."""
        reached = effective_address(address)
        if any(reached in network or address in network for network in self.allowed_networks):
            return None
        reason = why_not_public(reached)
        if reason is None:
            return None
        shown = str(address) if reached == address else f"{address} ({reached})"
        return f"Refused: target address {shown} is {reason} and not in {self.setting}"

    def resolve(self, host: str, port: int) -> list[str]:
        """Every address the host resolves to, all vetted; TargetRefused if any one is refused.

        Refusing the whole target when one address is bad keeps an attacker's DNS
        from mixing a public address with an internal one and hoping for fallback.
        """
        host = host.strip("[]")
        found = socket.getaddrinfo(host, port, connection.allowed_gai_family(), socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(info[4][0] for info in found))
        if not addresses:
            raise socket.gaierror(f"no address for {host}")
        for text in addresses:
            reason = _refusal_of(self, text)
            if reason:
                raise TargetRefused(reason)
        return addresses


@functools.lru_cache(maxsize=4096)
def _refusal_of(guard: AddressGuard, address_text: str) -> str | None:
    """guard.refusal of an address as getaddrinfo gives it, remembered: a provider's or a
    receiver's few addresses come back on every call, and ipaddress's checks of one (is_private
    walks its list of networks) were 6% of a worker's Python a Paystack call."""
    return guard.refusal(ipaddress.ip_address(address_text.split("%")[0]))


def check_url(url: str) -> None:
    """The callbackUrl must be http(s) with a host; TargetRefused otherwise."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        raise TargetRefused("Refused: callbackUrl is not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("Refused: callbackUrl must use http or https")
    if not parts.hostname:
        raise TargetRefused("Refused: callbackUrl has no host")


class GuardedAdapter(HTTPAdapter):
    """A requests transport adapter whose every connection is vetted by the guard.

    The host is resolved here, once per request; the request is then sent to a vetted address
    itself (its URL names the address, its Host header the host) and urllib3 pools connections
    per address and name. For HTTPS the name goes to TLS (urllib3's `server_hostname` pool
    setting): the SNI sent and the name OpenSSL checks the certificate against, as when the URL
    is connected to by name. Only requests' and urllib3's public API.
    """

    def __init__(self, guard: AddressGuard, pool_maxsize: int):
        self.guard = guard
        # max_retries=0: urllib3 must never repeat a request on its own (a repeat is
        # a second delivery); the retry schedule decides when to try again.
        super().__init__(pool_connections=100, pool_maxsize=pool_maxsize, max_retries=0)

    def send(self, request: requests.PreparedRequest, **kwargs) -> requests.Response:
        """Send to the first vetted address that takes the connection: another address is tried
        only when this one refused to connect (nothing was sent)."""
        url = urlsplit(request.url)
        host, port, host_header = host_port_and_header(url)
        try:
            addresses = self.guard.resolve(host, port)
        except socket.gaierror as error:
            raise requests.ConnectionError(f"Could not resolve {host}: {error}", request=request) from error

        def send_to(address: str) -> requests.Response:
            to_address = request.copy()
            shown = f"[{address}]" if ":" in address else address
            to_address.url = urlunsplit((url.scheme, f"{shown}:{port}", url.path, url.query, ""))
            to_address.headers["Host"] = host_header
            response = HTTPAdapter.send(self, to_address, **kwargs)
            response.url, response.request = request.url, request
            return response

        return to_first_connected(addresses, send_to, _not_connected)

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        """requests' pool settings, plus the host's name for TLS (from the Host header that
        send() set): the SNI sent and the name the certificate must carry."""
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        if host_params["scheme"] == "https":
            name = urlsplit("//" + request.headers["Host"]).hostname
            pool_kwargs["server_hostname"] = name
        return host_params, pool_kwargs


def _not_connected(error: Exception) -> bool:
    """A requests ConnectionError for a connection refused or failed before anything was sent
    (urllib3's NewConnectionError, wrapped by requests in a MaxRetryError): safe to try another
    address. A connect timeout is not tried elsewhere (the request's time is spent)."""
    if not isinstance(error, requests.ConnectionError):
        return False
    reason = getattr(error.args[0] if error.args else None, "reason", None)
    return isinstance(reason, NewConnectionError)  # a timeout is a ConnectTimeoutError alone


def host_port_and_header(url: SplitResult) -> tuple[str, int, str]:
    """A URL's host, its port (the scheme's when none is given) and the Host header naming
    them, as http.client writes it (no user info)."""
    port = url.port or (443 if url.scheme == "https" else 80)
    return url.hostname or "", port, url.netloc.rpartition("@")[2]


def to_first_connected(addresses: list[str], send_to: Callable[[str], T],
                       nothing_sent: Callable[[Exception], bool]) -> T:
    """send_to(address) for the vetted addresses in turn, until one takes the connection: the
    next is tried only when nothing_sent(error) says this one refused it before anything was
    sent (a request is never sent twice); the last such error is raised."""
    for address in addresses[:-1]:
        try:
            return send_to(address)
        except Exception as error:
            if not nothing_sent(error):
                raise
    return send_to(addresses[-1])


class CallFailed(Exception):
    """A GuardedPool request that got no answer. `kind` names the failure in requests' words
    (ConnectTimeout, ReadTimeout, SSLError, ConnectionError), which providers' messages show."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind

    @property
    def timed_out(self) -> bool:
        """No connection, or no answer, within its timeout."""
        return self.kind in ("ConnectTimeout", "ReadTimeout")


def failure_kind(error: Exception) -> str:
    """requests' name for a urllib3 failure: a refused connection (NewConnectionError, which
    urllib3 makes a ConnectTimeoutError too) and a broken answer are ConnectionError."""
    if isinstance(error, NewConnectionError):
        return "ConnectionError"
    if isinstance(error, ConnectTimeoutError):
        return "ConnectTimeout"
    if isinstance(error, ReadTimeoutError):
        return "ReadTimeout"
    if isinstance(error, SSLError):
        return "SSLError"
    return "ConnectionError"


class GuardedPool:
    """urllib3's connection pools behind the guard, for the calls a worker makes by the hundred
    a second (Paystack's): GuardedAdapter's rules without requests' session, whose preparing,
    merging and cookie jars took 0.44 ms of CPU a Paystack call against urllib3's 0.19 ms
    (measured one call at a time on loopback).

    The same rules as a guarded session: the host resolved once and every address vetted, the
    request sent to a vetted address with the host's Host header and TLS name (SNI and the
    certificate's check), another address tried only when one refused the connection, no
    redirect followed, no retry, no proxy, requests' certificate bundle.
    """

    def __init__(self, guard: AddressGuard, pool_maxsize: int, ca_certs: str | None = None):
        self.guard = guard
        self.pools = urllib3.PoolManager(num_pools=100, maxsize=pool_maxsize, retries=False,
                                         ca_certs=ca_certs or requests_ca_bundle())

    def request(self, method: str, url: str, *, timeouts: tuple[float, float], body: bytes | None = None,
                headers: Mapping[str, str] | None = None) -> urllib3.BaseHTTPResponse:
        """The answer, read whole (a redirect is an answer like any other); TargetRefused before
        connecting anywhere not allowed, CallFailed when no answer came."""
        url_parts = urlsplit(url)
        if url_parts.scheme not in ("http", "https") or not url_parts.hostname:
            raise CallFailed("InvalidURL", f"not an http(s) URL with a host: {url[:100]}")
        host, port, host_header = host_port_and_header(url_parts)
        try:
            addresses = self.guard.resolve(host, port)
        except socket.gaierror as error:
            raise CallFailed("ConnectionError", f"could not resolve {host}: {error}") from error
        sent = {**(headers or {}), "Host": host_header}
        target = urlunsplit(("", "", url_parts.path or "/", url_parts.query, ""))
        tls_name = {"server_hostname": host} if url_parts.scheme == "https" else None
        timeout = urllib3.Timeout(connect=timeouts[0], read=timeouts[1])

        def send_to(address: str) -> urllib3.BaseHTTPResponse:
            pool = self.pools.connection_from_host(address, port, url_parts.scheme, pool_kwargs=tls_name)
            return pool.urlopen(method, target, body=body, headers=sent, retries=False, redirect=False,
                                assert_same_host=False, timeout=timeout)

        try:
            return to_first_connected(addresses, send_to, lambda error: isinstance(error, NewConnectionError))
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise CallFailed(failure_kind(error), str(error)) from error


class NoRedirectSession(requests.Session):
    """A session that answers a redirect as it came: the Location may name any address at all."""

    def get_redirect_target(self, resp: requests.Response) -> None:
        """Never a target, so requests follows no redirect whatever allow_redirects says."""
        return None


def guarded_session(guard: AddressGuard, pool_maxsize: int) -> requests.Session:
    """A pooled session: guarded connections, no redirects, no proxies from the environment, no cookies."""
    session = NoRedirectSession()
    # A proxy would be the address connected to, so the guard could not vet the target.
    session.trust_env = False
    # One receiver's cookies must never ride along on later deliveries.
    session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    adapter = GuardedAdapter(guard, pool_maxsize)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
