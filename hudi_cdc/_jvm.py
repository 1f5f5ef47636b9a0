"""Small helpers for errors that come back from the JVM through py4j."""

from __future__ import annotations

__all__ = ["java_message"]


def java_message(exc: BaseException) -> str:
    """``Class: message`` of a py4j Java exception, else the first line of ``exc``."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            cause = java
            # The useful message is usually on the innermost cause.
            while cause.getCause() is not None and cause.getCause() != cause:
                cause = cause.getCause()
            return f"{cause.getClass().getName()}: {cause.getMessage()}"
        except Exception:  # the JVM side may be gone
            pass
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
