"""stack/dbdirs.sh: the databases' folders go where their users (postgres, mysql) can enter them.

A checkout under a private directory (root's home, mode 0700) gets them in a per-checkout folder under
$HUDI_CDC_STACK_DB_ROOT, linked from .stack/; a reachable one keeps them in .stack/. No database starts
here: the scripts only choose and make the folders, as root, with the real service users.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
USERS = {"pg": "postgres", "mariadb": "mysql"}


def _users_missing() -> list[str]:
    missing = []
    for user in USERS.values():
        try:
            pwd.getpwnam(user)
        except KeyError:
            missing.append(user)
    return missing


pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="chown to the service users and su need root"),
    pytest.mark.skipif(bool(_users_missing()), reason="needs the postgres and mysql users (make stack-up)"),
]


def _place(stack: Path, db_root: Path, *names: str) -> subprocess.CompletedProcess[str]:
    calls = " && ".join(f"place_db_dir {name} {USERS[name]}" for name in names)
    script = f'. stack/env.sh && . stack/dbdirs.sh && {calls} && db_paths && echo "$PG_DIR" && echo "$MARIADB_DIR"'
    return _bash(script, stack, db_root)


def _bash(script: str, stack: Path, db_root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HUDI_CDC_STACK_DIR": str(stack), "HUDI_CDC_STACK_DB_ROOT": str(db_root)}
    return subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


def _can_enter(user: str, path: Path) -> bool:
    probe = ["su", "-s", "/bin/sh", user, "-c", 'cd -- "$1"', "--", "sh", str(path)]
    return subprocess.run(probe, stderr=subprocess.DEVNULL).returncode == 0


def _home(stack: Path, db_root: Path) -> Path:
    return db_root / f"hudi-cdc-stack-{hashlib.sha256(str(stack).encode()).hexdigest()[:12]}"


@pytest.fixture
def db_root() -> Iterator[Path]:
    """A folder every user can enter, like /var/tmp (pytest's tmp_path is under a 0700 folder)."""
    root = Path(tempfile.mkdtemp(prefix="hudi-cdc-dbroot-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def private_stack(tmp_path: Path) -> Path:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    stack = private / "checkout" / ".stack"
    stack.mkdir(parents=True)
    return stack


def test_a_private_checkout_gets_its_databases_outside_linked_from_stack(private_stack: Path, db_root: Path) -> None:
    assert not _can_enter("postgres", private_stack)
    done = _place(private_stack, db_root, "pg", "mariadb")
    assert done.returncode == 0, done.stderr
    home = _home(private_stack, db_root)
    for name, user in USERS.items():
        link = private_stack / name
        assert link.is_symlink() and link.resolve() == home / name
        assert pwd.getpwuid((home / name).stat().st_uid).pw_name == user
        assert _can_enter(user, home / name)
    # The other scripts hand the service users the links' targets.
    assert done.stdout.split() == [str(home / "pg"), str(home / "mariadb")]
    assert (home / "checkout").read_text().strip() == str(private_stack)

    # Again (every setup.sh runs it): the same folders, what they hold kept.
    (home / "pg" / "data").mkdir()
    (home / "pg" / "data" / "PG_VERSION").write_text("15\n")
    again = _place(private_stack, db_root, "pg", "mariadb")
    assert again.returncode == 0, again.stderr
    assert (private_stack / "pg" / "data" / "PG_VERSION").exists()

    # stack/reset.sh's part: the outside folder and the links go, and the next setup chooses again.
    dropped = _bash(". stack/env.sh && . stack/dbdirs.sh && drop_db_home", private_stack, db_root)
    assert dropped.returncode == 0, dropped.stderr
    assert not home.exists()
    assert not any((private_stack / name).is_symlink() for name in USERS)


def test_a_reachable_checkout_keeps_its_databases_in_stack(db_root: Path) -> None:
    stack = db_root / "checkout" / ".stack"
    stack.mkdir(parents=True)
    stack.parent.chmod(0o755)
    stack.chmod(0o755)
    done = _place(stack, db_root, "pg", "mariadb")
    assert done.returncode == 0, done.stderr
    for name, user in USERS.items():
        assert (stack / name).is_dir() and not (stack / name).is_symlink()
        assert pwd.getpwuid((stack / name).stat().st_uid).pw_name == user
    assert done.stdout.split() == [str(stack / "pg"), str(stack / "mariadb")]
    assert not _home(stack, db_root).exists()


def test_what_a_failed_setup_left_in_a_private_stack_moves_out(private_stack: Path, db_root: Path) -> None:
    # The old scripts made .stack/pg/run, then initdb failed: no database in it.
    (private_stack / "pg" / "run").mkdir(parents=True)
    (private_stack / "pg" / "initdb.log").write_text("initdb: error: could not access directory\n")
    done = _place(private_stack, db_root, "pg")
    assert done.returncode == 0, done.stderr
    assert (private_stack / "pg").resolve() == _home(private_stack, db_root) / "pg"


def test_a_database_the_user_cannot_reach_is_not_thrown_away(private_stack: Path, db_root: Path) -> None:
    (private_stack / "pg" / "data").mkdir(parents=True)
    (private_stack / "pg" / "data" / "PG_VERSION").write_text("15\n")
    done = _place(private_stack, db_root, "pg")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "holds a database" in done.stderr and "make stack-reset" in done.stderr
    assert (private_stack / "pg" / "data" / "PG_VERSION").exists()


def test_leftovers_of_a_removed_stack_are_not_reused(private_stack: Path, db_root: Path) -> None:
    # .stack was deleted (rm -rf, git clean) and made again: its old databases went with it.
    stale = _home(private_stack, db_root) / "pg" / "data"
    stale.mkdir(parents=True)
    (stale / "PG_VERSION").write_text("15\n")
    done = _place(private_stack, db_root, "pg")
    assert done.returncode == 0, done.stderr
    assert not (private_stack / "pg" / "data").exists()


def test_nowhere_reachable_fails_in_one_line_naming_the_setting(private_stack: Path, tmp_path: Path) -> None:
    unreachable = tmp_path / "also-private"
    unreachable.mkdir(mode=0o700)
    done = _place(private_stack, unreachable, "pg")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "HUDI_CDC_STACK_DB_ROOT" in done.stderr and "postgres" in done.stderr
    assert not (private_stack / "pg").exists() and not (_home(private_stack, unreachable) / "pg").exists()


def test_a_folder_someone_else_made_in_the_shared_root_is_refused(private_stack: Path, db_root: Path) -> None:
    squatted = _home(private_stack, db_root)
    squatted.mkdir()
    os.chown(squatted, pwd.getpwnam("postgres").pw_uid, -1)
    done = _place(private_stack, db_root, "pg")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "HUDI_CDC_STACK_DB_ROOT" in done.stderr
