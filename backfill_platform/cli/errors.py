"""What the command line says when it cannot go on: one message and a non-zero exit, never a traceback.

Every command runs inside `RefusingGroup`, which turns the platform's refusals (a spec, an archive, a
range, a promotion or a replay refused: `ValueError`s and the refusal types) and the environment's
predictable failures (no AWS region or credentials, a catalog that cannot be reached, a file that cannot
be opened) into a `click.ClickException`. The message comes from data, so control characters are made
visible (`operations.terminal.visible`) and secrets are masked (`masking.mask`: a URL's `user:password@`, a
bearer token, a secret variable's value). A catalog that cannot be used (`LakehouseConfigError`) and one that
answers an error (PyIceberg's, or an HTTP error of `requests`) are refusals too, their text masked. Anything
else is a bug of the platform and keeps its traceback, its message masked.
"""

from __future__ import annotations

import click

from backfill_platform.masking import mask, mask_exception
from backfill_platform.operations.terminal import visible


def message_of(error: BaseException) -> str | None:
    """The one-line message of an error the command line answers with a refusal, or None for a bug."""
    from backfill_platform.lakehouse.preflight import LakehouseConfigError
    from backfill_platform.pipeline.archive.opening import ArchiveReadError
    from backfill_platform.pipeline.promotion.adopt import AdoptRefused
    from backfill_platform.pipeline.promotion.gate import PromotionRefused
    from backfill_platform.pipeline.promotion.revert import RevertRefused
    from backfill_platform.pipeline.replay.delivery import ReplayError

    refusals = AdoptRefused | PromotionRefused | RevertRefused | ReplayError | ArchiveReadError | ValueError
    if isinstance(error, refusals):
        return str(error)
    if isinstance(error, LakehouseConfigError):
        return str(error)
    module = type(error).__module__
    name = type(error).__name__
    if module.startswith("pyiceberg") and name in ("NoSuchTableError", "NoSuchNamespaceError"):
        return f"the Iceberg catalog has no such {'table' if 'Table' in name else 'namespace'}: {error}"
    if module.startswith("pyiceberg") and isinstance(error, _rest_errors()):
        # The class says what went wrong; the server's body is not echoed (it may repeat the request).
        return (
            f"the Iceberg catalog answered a table call with an error ({name}); nothing was changed by this "
            "command: see the catalog server's log"
        )
    if module.startswith(("pyiceberg.exceptions", "requests.exceptions")):
        first = str(error).strip().splitlines()[0] if str(error).strip() else name
        return f"the Iceberg catalog answered an error ({name}): {first[:400]}"
    if module.startswith("botocore") and name == "NoRegionError":
        return "no AWS region is configured: set AWS_REGION (or AWS_DEFAULT_REGION, or the profile's region)"
    if module.startswith("botocore") and name in ("NoCredentialsError", "PartialCredentialsError"):
        return f"AWS credentials are missing or incomplete: {error}"
    if module.startswith("botocore") and name in ("EndpointConnectionError", "ConnectTimeoutError"):
        return f"an AWS endpoint cannot be reached: {error}"
    if module.startswith(("sqlalchemy", "psycopg", "sqlite3")) and "OperationalError" in name:
        first = str(error).strip().splitlines()[0] if str(error).strip() else name
        return f"the Iceberg catalog's database cannot be reached or used: {first}"
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror or error}"
    return None


def _rest_errors() -> tuple[type[BaseException], ...]:
    """PyIceberg's errors of a REST catalog's answer (a 4xx or 5xx, an expired or refused token)."""
    from pyiceberg import exceptions

    names = (
        "RESTError",
        "ServerError",
        "ServiceUnavailableError",
        "BadRequestError",
        "ForbiddenError",
        "UnauthorizedError",
        "AuthorizationExpiredError",
        "OAuthError",
        "TooManyRequestsError",
    )
    return tuple(getattr(exceptions, n) for n in names if hasattr(exceptions, n))


def refusal(error: BaseException) -> click.ClickException | None:
    message = message_of(error)
    if message is None:
        return None
    return click.ClickException(visible(mask(message)))


class RefusingGroup(click.Group):
    """A command group whose commands answer refusals with one message (see the module docstring)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as error:
            answer = refusal(error)
            if answer is None:
                raise mask_exception(error)  # noqa: B904 - the same error, its traceback kept
            raise answer from None
