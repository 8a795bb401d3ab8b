"""The producer's TLS context, built once from the ``ssl_*`` settings.

Why once, here: kafka-python rebuilds a context (and reads every file again) for each
connection, so a wrong path or key password shows up only as connections that keep failing.
Built when the producer is created, a missing CA file, an unreadable certificate or a key that
the password does not open is a :class:`~txnproducer.errors.ConfigError` from the constructor,
naming the setting and the file (never the password). The same context then serves every
connection, and ``ssl_ciphers``, which kafka-python does not apply, is applied.

The defaults are kafka-python's and the Java client's: TLS 1.2 or newer, the broker's certificate
verified (``ssl_cafile`` or the system's CAs) and its host name checked unless
``ssl_check_hostname`` is False.
"""

from __future__ import annotations

import ssl

from txnproducer._internal.network.settings import ConnectionSettings
from txnproducer.errors import ConfigError

__all__ = ["build_ssl_context"]


def build_ssl_context(config: ConnectionSettings) -> ssl.SSLContext | None:
    """The context for ``config`` (None when the protocol does not use TLS)."""
    if config.security_protocol not in ("SSL", "SASL_SSL"):
        return None
    if config.ssl_context is not None:
        given: ssl.SSLContext = config.ssl_context  # used as given: its own checks decide
        return given
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = config.ssl_check_hostname
    _load(config, context)
    if config.ssl_ciphers is not None:
        context.set_ciphers(config.ssl_ciphers)  # validated by the config already
    return context


def _load(config: ConnectionSettings, context: ssl.SSLContext) -> None:
    if config.ssl_cafile:
        cafile = config.ssl_cafile
        _read("ssl_cafile", cafile, lambda: context.load_verify_locations(cafile=cafile))
    else:
        context.load_default_certs()
    if config.ssl_certfile:
        def load_chain() -> None:
            context.load_cert_chain(certfile=config.ssl_certfile or "", keyfile=config.ssl_keyfile,
                                    password=config.ssl_password)
        what = f"ssl_certfile {config.ssl_certfile!r}" + (
            f" / ssl_keyfile {config.ssl_keyfile!r}" if config.ssl_keyfile else "")
        try:
            load_chain()
        except FileNotFoundError as exc:
            raise ConfigError(f"{what}: file not found ({exc.filename})") from None
        except PermissionError as exc:
            raise ConfigError(f"{what}: not readable ({exc.filename})") from None
        except ssl.SSLError as exc:
            if config.ssl_password is None and "PEM" in str(exc).upper():
                hint = ("not a PEM certificate and matching private key (or the key is encrypted and "
                        "ssl_password is not set)")
            elif config.ssl_password is not None:
                hint = ("the key could not be opened with ssl_password, or certificate and key do not "
                        "belong together")
            else:
                hint = "certificate and private key do not belong together, or are not PEM"
            raise ConfigError(f"{what}: {hint} ({exc.reason or exc})") from None
    if config.ssl_crlfile:
        crlfile = config.ssl_crlfile
        _read("ssl_crlfile", crlfile, lambda: context.load_verify_locations(cafile=crlfile))
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF


def _read(setting: str, path: str, load: object) -> None:
    try:
        load()  # type: ignore[operator]
    except FileNotFoundError:
        raise ConfigError(f"{setting} {path!r}: file not found") from None
    except PermissionError:
        raise ConfigError(f"{setting} {path!r}: not readable") from None
    except ssl.SSLError as exc:
        raise ConfigError(
            f"{setting} {path!r}: not a PEM file OpenSSL can read ({exc.reason or exc})") from None
