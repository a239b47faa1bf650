"""The setup folder's run contract (nsysgen-expect.json), or why FOLDER is not a setup."""

from __future__ import annotations

from pathlib import Path

from nsysgen.reports.contract import EXPECT_FILE, ContractError, Expect, read_expect
from nsysgen.shipped.verify.model import MANIFEST_FILE, SETUP_FOLDER, SETUPS_SHOWN, BadInput


def load_expect(folder: Path | None) -> Expect:
    """The expectations of the setup in `folder`, FOLDER on the command line. It has no default:
    the one copy of this script sits above the setup folders (the top of the generated tree),
    and `nsysgen verify` runs it from inside the installed package; neither is a setup."""
    if folder is None:
        here = Path(__file__).resolve().parent  # the standalone copy: its tree's setups
        raise BadInput(f"no FOLDER given: pass {SETUP_FOLDER}{_what_is_in(here)}")
    path = folder / EXPECT_FILE
    try:
        return read_expect(path)
    except (FileNotFoundError, NotADirectoryError):
        raise BadInput(
            f"{path} not found: {folder} is not {SETUP_FOLDER}{_what_is_in(folder)}"
        ) from None
    except (OSError, ValueError) as error:
        raise BadInput(f"{path}: not readable as JSON ({error})") from None
    except ContractError as error:
        raise BadInput(str(error)) from None


def _what_is_in(folder: Path) -> str:
    """What `folder`, which is not a setup, holds that helps: the setup folders right below
    it (the top of a generated tree), or a manifest: a folder an older nsysgen compiled."""
    if (folder / MANIFEST_FILE).is_file():
        return f"; an nsysgen folder ({MANIFEST_FILE}) without expectations: regenerate it"
    try:
        setups = sorted(p.parent.name for p in folder.glob(f"*/{EXPECT_FILE}"))
    except OSError:
        return ""
    if not setups:
        return ""
    more = f", ... ({len(setups)} in all)" if len(setups) > SETUPS_SHOWN else ""
    return f"; the setup folders in {folder}: {', '.join(setups[:SETUPS_SHOWN])}{more}"
