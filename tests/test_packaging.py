"""What ships with the package: the schema and the demo dataset, and its shape; and what the
one-file build (packaging/) stamps, collects and installs."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from flagadmin.seed.documents import demo_files

from helpers import auth


def test_package__ships_schema_and_demo_seed():
    assert "CREATE TABLE" in resources.files("flagadmin").joinpath("schema.sql").read_text()
    assert [p.name for p in demo_files()] == ["demo.json"]


def test_demo__looks_like_a_real_small_install():
    data = json.loads(demo_files()[0].read_text())
    users = data["users"]
    assert len(users) >= 4
    assert {u["rootRole"] for u in users} == {"Admin", "Editor", "Viewer"}
    assert any(u["username"] == "admin" and u["rootRole"] == "Admin" for u in users)
    assert len(data["projects"]) == 4
    assert all(any(m["role"] == "Owner" for m in p["members"]) for p in data["projects"])
    assert all(len(p["members"]) >= 2 for p in data["projects"])
    features = data["features"]
    assert len(features) == 40
    assert {f["type"] for f in features} == {
        "release",
        "experiment",
        "operational",
        "kill-switch",
        "permission",
    }
    assert sum(1 for f in features if f["archivedAt"]) >= 10
    assert data["favorites"]
    events = [e for e in data["integrationEvents"] if e["integrationId"] in (1, 2)]
    assert len(events) >= 60
    assert set(Counter(e["state"] for e in events)) == {"success", "failed", "successWithErrors"}


def test_readme__lists_every_command_and_docs_every_setting():
    from pathlib import Path

    from flagadmin.cli import cli
    from flagadmin.config import SETTINGS

    root = Path(__file__).parents[1]
    readme = (root / "README.md").read_text()
    settings_page = (root / "docs" / "settings.md").read_text()
    for setting in SETTINGS:
        assert f"| `{setting.variable}` |" in settings_page
    for command in cli.commands:
        assert f"flagadmin {command}" in readme


# --- one file to self-host (packaging/) ------------------------------------------
# What can be checked without building: the revision stamp, what the build collects, the
# scripts and the systemd unit. packaging/smoke checks the built files themselves (in CI).

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGING = REPOSITORY / "packaging"


def _bundle_module():
    """packaging/bundle.py (it is no package module: the PyInstaller spec loads it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("flagadmin_packaging_bundle", PACKAGING / "bundle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_git(folder: Path) -> Path:
    """Put a ``git`` into ``folder`` that records each call in ``folder/git-calls``; return
    that record's path."""
    calls = folder / "git-calls"
    git = folder / "git"
    git.write_text(f'#!/bin/sh\necho "git $*" >>{calls}\nexit 1\n')
    git.chmod(0o755)
    return calls


def test_version__stamped_build__prints_stamp_without_running_git(tmp_path):
    # Given: a _build_info.py as packaging/build writes it, found first on the package's path,
    # and a git on the PATH that records any call
    import subprocess
    import sys

    from flagadmin import __version__

    stamp = tmp_path / "stamp"
    stamp.mkdir()
    (stamp / "_build_info.py").write_text('REVISION = "0123456789abcdef0123456789abcdef01234567"\n')
    calls = _fake_git(tmp_path)
    program = (
        f"import flagadmin; flagadmin.__path__.insert(0, {str(stamp)!r}); "
        "from flagadmin.cli import main; main()"
    )
    # When: the command line (the console script's main) is asked for its version
    result = subprocess.run(
        [sys.executable, "-c", program, "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path)},
        cwd=REPOSITORY,
    )
    # Then: it prints the stamped revision, and git was never run
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.strip()
        == f"flagadmin {__version__} (revision 0123456789abcdef0123456789abcdef01234567)"
    )
    assert not calls.exists()


def test_ui_config__stamped_build__shows_the_same_revision_as_version(
    make_app, admin_token, tmp_path, monkeypatch
):
    # Given: a stamped build (spec 2.5 versionInfo.current.oss), no FLAGADMIN_GIT_REVISION,
    # and a git on the PATH that records any call
    import sys
    import types

    from flagadmin import revision

    stamped = types.ModuleType("flagadmin._build_info")
    stamped.REVISION = "feedface" * 5
    monkeypatch.setitem(sys.modules, "flagadmin._build_info", stamped)
    monkeypatch.setattr(revision, "_found", None)
    calls = _fake_git(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    # When: the command line finds the revision at start, and ui-config is asked
    found = revision.detect_from_checkout()
    body = make_app(git_revision=None).test_client().get("/api/admin/ui-config", headers=auth(admin_token))
    # Then: both are the stamp, and git was never run
    assert found == "feedface" * 5
    assert body.get_json()["versionInfo"]["current"]["oss"] == "feedface" * 5
    assert not calls.exists()


def test_revision__frozen_binary_without_stamp__never_runs_git(tmp_path, monkeypatch):
    # Given: a frozen program (PyInstaller sets sys.frozen) that carries no stamp
    import sys

    from flagadmin import __version__, revision

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setitem(sys.modules, "flagadmin._build_info", None)  # import fails
    monkeypatch.setattr(revision, "_found", None)
    calls = _fake_git(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    # When
    found = revision.detect_from_checkout()
    # Then: the version number stands in, and git was not asked
    assert found == __version__
    assert not calls.exists()


def test_package__every_declared_data_file__is_installed():
    # Given: the package data pyproject.toml declares, by package (what the wheel, and so both
    # built files, carry)
    import tomllib

    pyproject = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())
    package_data = pyproject["tool"]["setuptools"]["package-data"]
    # When: each package's patterns are matched in its folder of the checkout
    declared = []
    for package, patterns in package_data.items():
        folder = REPOSITORY.joinpath(*package.split(".")[1:])
        for pattern in patterns:
            matched = sorted(folder.glob(pattern))
            # Then: every pattern matches a file ...
            assert matched, f"package-data pattern {pattern} of {package} matches nothing"
            declared += [(package, p.relative_to(folder)) for p in matched]
    assert {"schema.sql", "seed/demo.json", "store/schema.postgresql.sql"} <= {
        str(REPOSITORY.joinpath(*package.split(".")[1:], path).relative_to(REPOSITORY))
        for package, path in declared
    }
    # ... and each file is in the installed package
    for package, path in declared:
        assert resources.files(package).joinpath(str(path)).is_file(), f"{package}: {path} is not installed"


def test_bundle__runtime_distributions__every_dependency_and_no_test_extra():
    # Given: what the installed flagadmin requires, without extras and with the test extra
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    requirements = [Requirement(r) for r in metadata.requires("flagadmin")]
    direct = {canonicalize_name(r.name) for r in requirements if not r.marker}
    test_extra = {canonicalize_name(r.name) for r in requirements if r.marker} - direct
    assert {"pytest", "schemathesis", "ruff"} <= test_extra
    # When: the build asks which distributions flagadmin needs at run time
    bundle = _bundle_module()
    names = {canonicalize_name(d.metadata["Name"]) for d in bundle.runtime_distributions()}
    # Then: flagadmin, each dependency and theirs (werkzeug comes with flask); no test tool
    assert {"flagadmin", "werkzeug"} | direct <= names
    assert not {"pytest", "schemathesis", "ruff"} & names


def _installed_distribution(site: Path, name: str, files: list[str], missing: tuple[str, ...] = ()):
    """Write a distribution ``name`` 1.0 into ``site``: ``files`` listed in its RECORD and
    written (but for ``missing``, listed only), with its METADATA; return it."""
    from importlib import metadata

    info = f"{name}-1.0.dist-info"
    listed = [*files, f"{info}/METADATA", f"{info}/RECORD"]
    for file in files:
        if file not in missing:
            (site / file).parent.mkdir(parents=True, exist_ok=True)
            (site / file).write_text("x")
    (site / info).mkdir(parents=True, exist_ok=True)
    (site / info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (site / info / "RECORD").write_text("".join(f"{file},,\n" for file in listed))
    return metadata.PathDistribution(site / info)


def test_bundle__data_files__data_of_a_distribution_kept_code_and_metadata_left(tmp_path):
    # Given: an installed distribution whose RECORD lists code, data, a script and metadata
    site = tmp_path / "site"
    dist = _installed_distribution(
        site,
        "pkg",
        [
            "pkg/__init__.py",
            "pkg/_speedups.cpython-311-x86_64-linux-gnu.so",
            "pkg/__pycache__/__init__.cpython-311.pyc",
            "pkg/py.typed",
            "pkg/templates/page.html",
            "pkg/data/schema.sql",
            "pkg/tests/fixture.json",
            "single_module.py",
            "../../bin/pkg-cli",
            "pkg/listed_but_missing.json",
        ],
        missing=("pkg/listed_but_missing.json",),
    )
    # When
    bundle = _bundle_module()
    pairs = bundle.data_files([dist])
    # Then: the two data files, each to its folder inside the bundle; and the metadata apart
    assert pairs == [
        (str(site / "pkg/data/schema.sql"), "pkg/data"),
        (str(site / "pkg/templates/page.html"), "pkg/templates"),
    ]
    assert bundle.metadata_files([dist]) == [(str(site / "pkg-1.0.dist-info/METADATA"), "pkg-1.0.dist-info")]


def test_bundle__shared_libraries__libraries_loaded_by_path_are_binaries_not_data(tmp_path):
    # Given: a distribution with libraries it loads by path (ctypes), extension modules, and a
    # library in its own tests
    site = tmp_path / "site"
    dist = _installed_distribution(
        site,
        "engine",
        [
            "engine/__init__.py",
            "engine/lib/libcore.so",
            "engine/lib/libhelper.so.1.2",
            "engine/_speedups.cpython-311-x86_64-linux-gnu.so",
            "engine/_stable.abi3.so",
            "engine/tests/libfixture.so",
            "engine/lib/README.txt",
        ],
    )
    # When
    bundle = _bundle_module()
    # Then: the two libraries, each to its folder, as binaries; neither is data, nor are the
    # extension modules (import analysis collects those)
    assert bundle.shared_libraries([dist]) == [
        (str(site / "engine/lib/libcore.so"), "engine/lib"),
        (str(site / "engine/lib/libhelper.so.1.2"), "engine/lib"),
    ]
    assert bundle.data_files([dist]) == [(str(site / "engine/lib/README.txt"), "engine/lib")]
    # ... and of the installed yggdrasil-engine: its Rust core, to where its binding looks for it
    from importlib import metadata

    found = bundle.shared_libraries([metadata.distribution("yggdrasil-engine")])
    assert [(Path(source).name, folder) for source, folder in found] == [
        ("libyggdrasilffi.so", "yggdrasil_engine/lib")
    ]


def test_bundle__imported_distributions__only_those_whose_code_is_imported(tmp_path):
    # Given: three distributions: a package, a single-module extension, and one never imported
    site = tmp_path / "site"
    package = _installed_distribution(site, "web", ["web/__init__.py", "web/app.py"])
    extension = _installed_distribution(site, "fastzip", ["_fastzip.cpython-311-x86_64-linux-gnu.so"])
    unused = _installed_distribution(site, "zonedata", ["zonedata/__init__.py", "zonedata/zones/Europe"])
    # When: the analysis imported web.app and bundled the extension
    found = _bundle_module().imported_distributions(
        [package, extension, unused], ["web.app", "_fastzip.cpython-311-x86_64-linux-gnu.so", "json"]
    )
    # Then
    assert [d.metadata["Name"] for d in found] == ["web", "fastzip"]


def test_bundle__glibc_floor__newest_glibc_version_an_elf_file_imports():
    # Given: two executables of this machine
    import re
    import shutil
    import sys

    files = [Path(shutil.which("sh") or "/bin/sh").resolve(), Path(sys.executable).resolve()]
    # When
    floor = _bundle_module().glibc_floor(files)
    # Then: GLIBC_x.y and the file that needs it (None only without objdump)
    if shutil.which("objdump") is None:
        assert floor is None
    else:
        assert re.fullmatch(r"GLIBC_\d+\.\d+(\.\d+)?", floor[0])
        assert floor[1] in {str(f) for f in files}


def test_scripts__build_and_smoke__executable_bash_that_parses():
    import os
    import subprocess

    for name in ("build", "smoke"):
        script = PACKAGING / name
        assert os.access(script, os.X_OK), f"packaging/{name} is not executable"
        assert script.read_text().startswith("#!/usr/bin/env bash\n")
        checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, checked.stderr


def test_build__stamps_the_revision_and_makes_both_files():
    # Given: the build script
    text = (PACKAGING / "build").read_text()
    # Then: it stamps _build_info.py from git rev-parse HEAD, freezes with the spec, zips with
    # shiv, and the stamp file stays out of git
    assert "git rev-parse HEAD" in text and "_build_info.py" in text
    assert "packaging/flagadmin.spec" in text and "dist/flagadmin.pyz" in text
    assert "_build_info.py" in (REPOSITORY / ".gitignore").read_text().split()


def test_systemd_unit__token_from_environment_file__never_on_command_line():
    # Given: the unit a self-hoster installs
    import configparser

    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    text = (PACKAGING / "flagadmin.service").read_text()
    unit.read_string(text)
    service = unit["Service"]
    # Then: settings come from an environment file; the token is nowhere in the unit itself
    assert service["EnvironmentFile"].startswith("/")
    assert "FLAGADMIN_ADMIN_TOKEN" not in service["ExecStart"] and "*:*." not in service["ExecStart"]
    assert "FLAGADMIN_ADMIN_TOKEN" not in service.get("Environment", "")
    assert service["ExecStart"].split()[1] == "serve"
    # and the stop is the graceful one: SIGTERM to the launcher, time to drain
    assert service["KillSignal"] == "SIGTERM" and service["KillMode"] == "mixed"
    assert int(service["TimeoutStopSec"]) > 30


def test_systemd_unit__systemd_analyze_verify__no_complaint(tmp_path):
    # Given: the unit, its binary path pointed at an existing program
    import shutil
    import subprocess

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    unit = tmp_path / "flagadmin.service"
    unit.write_text(
        (PACKAGING / "flagadmin.service").read_text().replace("/usr/local/bin/flagadmin", "/bin/true")
    )
    # When
    result = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    # Then: no unknown key, no bad value
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), (
        result.stdout + result.stderr
    )
