"""Browser tests: a real JupyterLab on 127.0.0.1 (empty token, a temporary root directory, its
own settings, news and update checks off), driven by Playwright with the system's Chromium (never
a downloaded browser). Skipped, with the reason, only when Playwright or Chromium is absent.

Fixtures for any browser test: ``jupyterlab_server`` (session-wide server with the Python
kernel), ``browser`` (the run's one Chromium), ``lab_page`` (the test's own page: the previous
test's JupyterLab page with its documents closed, where there is one; failures leave a screenshot
in ``artifacts_dir``),
``artifacts_dir`` (``test-artifacts/`` in the repository, git-ignored); helpers ``open_in_lab``,
``wait_for_kernel_idle``, ``run_all_cells``, ``live_explorer``,
``choose_no_kernel``, ``write_notebook``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import child_env

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_LOCATIONS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")
"""Where Debian's chromium package puts the browser (the first is the binary itself)."""
START_TIMEOUT = 90.0
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"checkForUpdates": False, "fetchNews": "false"},
}


def chromium_executable() -> str | None:
    """Debian's Chromium, or a chromium on PATH."""
    for path in CHROMIUM_LOCATIONS:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> Any:
    """GET ``url`` (a JupyterLab server's REST endpoint) as JSON."""
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@dataclass
class LabServer:
    """A running JupyterLab: its base URL and root directory."""

    url: str
    """``http://127.0.0.1:PORT`` (no trailing slash)."""
    root: Path
    """The server's root directory: files written here open at ``lab/tree/NAME``."""
    log: Path
    """The server's output."""

    def api(self, path: str) -> Any:
        """GET a REST endpoint (``api/kernels``, ...) as JSON."""
        return get_json(f"{self.url}/{path}")

    def kernels(self) -> list[dict[str, Any]]:
        """The kernels running now."""
        return self.api("api/kernels")

    def shutdown_kernels(self) -> None:
        """Shut every running kernel down. The server's answer is asked again, up to three
        times a second apart, after an internal error (500): listing kernels while one is going
        away failed so once in a full run on a loaded machine."""
        for attempt in range(3):
            try:
                for k in self.kernels():
                    req = urllib.request.Request(f"{self.url}/api/kernels/{k['id']}",
                                                 method="DELETE")
                    urllib.request.urlopen(req, timeout=30).close()
                return
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or attempt == 2:
                    raise
                time.sleep(1.0)


def start_lab(tmp: Path, extra_args: tuple[str, ...] = ()) -> tuple[subprocess.Popen, LabServer]:
    """Start JupyterLab with everything it writes under ``tmp``; returns once it answers."""
    root, home = tmp / "root", tmp / "home"
    settings = home / "lab-user-settings"
    for d in (root, settings):
        d.mkdir(parents=True, exist_ok=True)
    for name, value in LAB_SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))
    env = child_env(**_checkout_front_end(tmp), JUPYTER_CONFIG_DIR=str(home / "config"),
                    JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                    JUPYTERLAB_SETTINGS_DIR=str(settings),
                    JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
    port = _free_port()
    log = tmp / "jupyterlab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root",
           f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           # REST calls from the tests (shutting a kernel down) carry no XSRF cookie.
           "--ServerApp.disable_check_xsrf=True",
           # window.jupyterapp, as JupyterLab's own UI tests have it: open_in_lab opens a notebook
           # in a page already showing JupyterLab through its commands
           "--LabApp.expose_app_in_browser=True", *extra_args]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root)
    server = LabServer(f"http://127.0.0.1:{port}", root, log)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            server.api("api/status")
            return proc, server
        except (urllib.error.URLError, ConnectionError, OSError):
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_lab(proc)
                pytest.fail(f"JupyterLab did not start; its output:\n{log.read_text()[-4000:]}")
            time.sleep(0.25)


def _checkout_front_end(tmp: Path) -> dict[str, str]:
    """``JUPYTER_PATH`` naming this checkout's built extension first, when it has one: the
    server then loads the front end under test, not a copy an earlier install left in the
    environment (the first extension of a name found wins)."""
    built = REPO / "reactant_lab" / "labextension"
    if not (built / "package.json").is_file():
        return {}
    link = tmp / "jupyter-path" / "labextensions" / "reactant-lab"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(built, target_is_directory=True)
    paths = [str(tmp / "jupyter-path"), *filter(None, [os.environ.get("JUPYTER_PATH")])]
    return {"JUPYTER_PATH": os.pathsep.join(paths)}


def stop_lab(proc: subprocess.Popen) -> None:
    """Stop the server (which shuts its kernels down); kill it if it does not stop."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of the Chromium to drive; skips the browser tests when there is none."""
    pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package")
    path = chromium_executable()
    if path is None:
        pytest.skip("browser tests need Chromium (Debian: apt-get install chromium)")
    return path


@pytest.fixture(scope="session")
def jupyterlab_server(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A JupyterLab server for the whole session, with the Python kernel available."""
    proc, server = start_lab(tmp_path_factory.mktemp("jupyterlab"))
    try:
        yield server
    finally:
        stop_lab(proc)


class Profile:
    """Chromium on one profile kept on disk (``browser``), standing in for a Playwright Browser:
    ``new_context`` gives a test its own ``Pages``.

    A fresh browser context per test forgot the compiled JavaScript with the context: Chromium
    keeps the code it compiled for a page's scripts only in a profile on disk, so every test
    compiled JupyterLab's whole front end again. Opening a notebook and waiting for its kernel
    took 4.1-4.5 CPU-s of Chromium in a fresh context (a context kept for several pages: the
    same) and 2.7-2.8 in a profile kept on disk, from its third page on (docs/testing.md).

    Loading JupyterLab at all is most of that: a page a test leaves on JupyterLab is kept
    (``Pages.close``, its documents closed) and the next test's first page is that one, where
    ``open_in_lab`` opens a notebook without loading JupyterLab again (~0.6 CPU-s, not ~3)."""

    def __init__(self, context: Any):
        self._context = context
        self._kept: Any | None = None

    def new_context(self, viewport: dict[str, int] | None = None) -> Pages:
        """A test's pages (``viewport`` sized); the profile accepts downloads (``browser``)."""
        return Pages(self, self._context, viewport)

    def take_kept(self) -> Any | None:
        """The page kept from an earlier test, if any (now the caller's)."""
        page, self._kept = self._kept, None
        return page

    def keep(self, page: Any) -> bool:
        """Keep ``page`` for the next test when it shows JupyterLab with nothing in the way (no
        dialog, no init script of the test's): its documents closed, the sidebars as a freshly
        loaded JupyterLab has them. False, the page as it was, otherwise."""
        from playwright.sync_api import Error

        if self._kept is not None or page.is_closed() or getattr(page, "rl_scripted", False) \
                or getattr(page, "rl_reloaded", False):
            return False
        try:
            kept = page.evaluate(RESET_LAB)
        except Error:  # a page that crashed or is navigating
            return False
        if kept:
            self._kept = page
        return bool(kept)


RESET_LAB = """() => {
  const app = window.jupyterapp;
  if (!app || document.querySelector('.jp-Dialog, .lm-Menu')) { return false; }
  for (const w of Array.from(app.shell.widgets('main'))) { w.dispose(); }
  history.replaceState(null, '', location.pathname.replace(/\\/lab\\/.*$/, '/lab'));
  app.shell.activateById('filebrowser');
  app.shell.collapseRight();
  localStorage.clear(); sessionStorage.clear();
  return true;
}"""
"""Close a JupyterLab page's documents (without asking to save: the test is over), leave its
``/lab/tree/<path>`` address for ``/lab`` (else JupyterLab opens that path again beside the next
document) and put its sidebars as a fresh load has them (files on the left, the right
collapsed); false where the page is no JupyterLab (``window.jupyterapp``: the server exposes it)
or a dialog or menu is open."""

OPEN_IN_LAB = """async path => {
  const app = window.jupyterapp;
  const before = Array.from(app.shell.widgets('main'));
  const opened = await app.commands.execute('docmanager:open', {path});
  for (const w of before) { if (w !== opened) { w.dispose(); } }
}"""
"""Open ``path`` in a JupyterLab page, then close everything else in its main area (the launcher
an empty main area gets): the main area is never empty meanwhile, so no launcher stays."""


class Pages:
    """What a test's own browser context was, in the shared profile: the pages it opens, of its
    viewport's size, with its init scripts and permissions, all gone at ``close``: the pages
    closed (one left on JupyterLab kept for the next test, see ``Profile``), their origins'
    storage cleared, their event handlers removed, the permissions and cookies withdrawn (the
    compiled code and the HTTP cache stay)."""

    def __init__(self, profile: Profile, context: Any, viewport: dict[str, int] | None):
        self._profile, self._context, self._viewport = profile, context, viewport
        self._pages: list[Any] = []
        self._scripts: list[str] = []
        self._handlers: list[tuple[Any, str, Any]] = []

    def new_page(self) -> Any:
        page = None if self._scripts else self._profile.take_kept()
        if page is None:
            page = self._context.new_page()
            for script in self._scripts:
                page.add_init_script(script)
            page.rl_scripted = bool(self._scripts)
        if self._viewport:
            page.set_viewport_size(self._viewport)
        self._watch(page)
        self._pages.append(page)
        return page

    def _watch(self, page: Any) -> None:
        """Record the handlers the test adds (removed at ``close``), its init scripts (a page
        given one is loaded anew by ``open_in_lab`` and not kept) and whether it reloads the page
        (then not kept either: a JupyterLab reloaded on a ``/lab/tree/<path>`` address opens the
        path twice, from the saved workspace and from the address, and the later one can come
        after the test, beside the next test's notebook)."""
        cls = type(page)
        on, add_init_script = cls.on.__get__(page), cls.add_init_script.__get__(page)
        reload = cls.reload.__get__(page)

        def on_event(event: str, f: Any) -> None:
            self._handlers.append((page, event, f))
            on(event, f)

        def script(*args: Any, **kwargs: Any) -> None:
            page.rl_scripted = page.rl_load = True
            add_init_script(*args, **kwargs)

        def reloaded(*args: Any, **kwargs: Any) -> Any:
            page.rl_reloaded = True
            return reload(*args, **kwargs)

        page.on, page.add_init_script, page.reload = on_event, script, reloaded

    def add_init_script(self, script: str) -> None:
        """Run ``script`` in every page opened from now on (as a context's init script)."""
        self._scripts.append(script)

    def grant_permissions(self, permissions: list[str]) -> None:
        self._context.grant_permissions(permissions)

    def close(self, keep: bool = False) -> None:
        """Close the pages; with ``keep`` (said by a fixture whose test passed) one left on
        JupyterLab is kept for the next test instead."""
        from playwright.sync_api import Error

        for page, event, f in self._handlers:
            if not page.is_closed():
                page.remove_listener(event, f)
        self._handlers.clear()
        for page in self._pages:
            del page.on, page.add_init_script, page.reload
            if page.is_closed() or (keep and self._profile.keep(page)):
                continue
            if page.url.startswith("http"):
                with contextlib.suppress(Error):  # a page that crashed or is navigating
                    page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
            page.close()
        self._pages.clear()
        self._context.clear_permissions()
        self._context.clear_cookies()


@pytest.fixture(scope="session")
def chromium_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the browser tests' Chromium profile, kept for the whole run."""
    return tmp_path_factory.mktemp("chromium-profile")


@dataclass
class _Chromium:
    """The browser tests' Chromium while it runs."""

    playwright: Any
    context: Any
    profile: Profile
    gone: bool = False
    """Chromium went away (crashed or was closed)."""


_RUNNING: list[_Chromium] = []
"""The browser tests' Chromium, when one runs."""


@pytest.fixture
def browser(chromium: str, chromium_profile: Path) -> Profile:
    """The one headless Chromium of the browser tests, on the run's profile: started by the first
    test that asks, kept from test to test (and module to module: a page left on JupyterLab is
    the next test's, see ``Profile``), stopped after the last browser test of the run, and
    started again when Chromium went away. Playwright's sync API allows one at a time in a
    process: other tests (tests/test_report_browser.py) start their own once this one stopped."""
    if _RUNNING and _RUNNING[0].gone:
        stop_chromium()
    if not _RUNNING:
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        try:
            context = playwright.chromium.launch_persistent_context(
                str(chromium_profile), executable_path=chromium, args=["--no-sandbox"],
                accept_downloads=True)
        except BaseException:
            playwright.stop()
            raise
        running = _Chromium(playwright, context, Profile(context))
        context.on("close", lambda _: setattr(running, "gone", True))
        _RUNNING.append(running)
    return _RUNNING[0].profile


def stop_chromium() -> None:
    """Stop the browser tests' Chromium, if it runs."""
    if not _RUNNING:
        return
    running = _RUNNING.pop()
    try:
        if not running.gone:
            running.context.close()
    finally:
        running.playwright.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the last browser test in a row (its fixtures torn down), stop Chromium."""
    yield
    if nextitem is None or not nextitem.nodeid.startswith("tests/browser/"):
        stop_chromium()


def pytest_sessionfinish(session: pytest.Session) -> None:
    stop_chromium()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """``test-artifacts/`` in the repository (git-ignored): screenshots and measurements."""
    path = REPO / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def lab_page(browser: Any, jupyterlab_server: LabServer, artifacts_dir: Path,
             request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page (own context) with page errors collected in ``page.errors``; a failing test
    leaves a screenshot named after it in ``artifacts_dir``, and the kernels it started are shut
    down."""
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    try:
        yield page
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            keep_failure(page, jupyterlab_server, artifacts_dir, request.node.name)
        context.close(keep=report is not None and report.passed)
        jupyterlab_server.shutdown_kernels()


def keep_failure(page: Any, server: LabServer, artifacts_dir: Path, name: str) -> None:
    """What a failed browser test leaves in ``artifacts_dir``: a screenshot of the page and the
    end of JupyterLab's log (which kernels started, restarted or were shut down, and why: what
    the rare rerun of a test whose kernel was interrupted while it started needs to be
    diagnosed), both named after the test (``FAILED-<test>.png``, ``.log``); a rerun's attempt
    keeps them."""
    page.screenshot(path=str(artifacts_dir / f"FAILED-{name}.png"))
    (artifacts_dir / f"FAILED-{name}.log").write_text(
        server.log.read_text(errors="replace")[-30_000:])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report


def open_in_lab(page: Any, server: LabServer, path: str) -> None:
    """Open ``path`` (relative to the server's root) in JupyterLab, and wait for its tab. A page
    already on this server's JupyterLab (kept from an earlier test, see ``Profile``) closes its
    documents and opens it there; any other page (one given an init script since, or reloaded:
    see ``Pages._watch``) loads JupyterLab in a fresh workspace: nothing an earlier test opened
    comes back, either way."""
    if (not getattr(page, "rl_load", False) and not getattr(page, "rl_reloaded", False)
            and page.url.startswith(f"{server.url}/lab")
            and page.evaluate("() => Boolean(window.jupyterapp)")):
        page.evaluate(OPEN_IN_LAB, path)
    else:
        page.goto(f"{server.url}/lab/tree/{path}?reset")
        page.rl_load = False
    name = Path(path).name
    page.locator(f'.lm-TabBar-tab[title*="{name}"], .lm-TabBar-tab:has-text("{name}")').first \
        .wait_for(timeout=60_000)


def choose_no_kernel(page: Any) -> None:
    """Answer JupyterLab's "Select Kernel" dialog (a notebook without a kernelspec) with "No
    Kernel"."""
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=30_000)
    dialog.locator("select").select_option(label="No Kernel")
    dialog.get_by_role("button", name="Select").click()
    dialog.wait_for(state="detached")


def wait_for_kernel_idle(page: Any, timeout: float = 120_000) -> None:
    """Wait until the open notebook's kernel is idle: started, connected to the page and done
    running, as the server sees it. (The notebook's execution indicator says idle from the moment
    the notebook opens, before its session has a kernel; cells run then found no kernel, and
    JupyterLab asked which kernel to start: the rare rerun of a browser test, whose first cell
    was interrupted when that dialog's answer started a second kernel.)"""
    page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"] >> visible=true').first \
        .wait_for(timeout=timeout)
    base = re.match(r"https?://[^/]+", page.url).group(0)
    deadline = time.monotonic() + timeout / 1000
    kernels: list[Any] = []
    while time.monotonic() < deadline:
        kernels = [s["kernel"] for s in get_json(f"{base}/api/sessions") if s.get("kernel")]
        if kernels and all(k.get("execution_state") == "idle" and k.get("connections", 0) >= 1
                           for k in kernels):
            return
        time.sleep(0.1)
    raise AssertionError(f"no kernel of the open notebook was idle and connected in "
                         f"{timeout / 1000:.0f} s; the server's kernels: {kernels}")


def run_all_cells(page: Any, timeout: float = 180_000) -> None:
    """Run > Run All Cells in the open notebook, and wait until no cell is queued or running."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    started = page.locator(".jp-InputArea-prompt", has_text=re.compile(r"\[[0-9*]+\]")).first
    for _ in range(3):  # a kernel that has only just connected can drop the first request
        # On a loaded machine the session can lose its kernel while it starts, and JupyterLab
        # then asks which kernel to start: the notebook's own (preselected).
        select_kernel = page.locator(".jp-Dialog", has_text="Select Kernel")
        if select_kernel.count():
            select_kernel.get_by_role("button", name="Select").click()
            select_kernel.wait_for(state="detached")
            wait_for_kernel_idle(page)
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Run All Cells$")).click()
        try:
            started.wait_for(timeout=15_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    expect(page.locator(".jp-InputArea-prompt", has_text="[*]")).to_have_count(0,
                                                                                timeout=timeout)


def live_explorer(page: Any, server: LabServer, nth: int = 0, timeout: float = 120_000) -> Any:
    """The ``nth`` live explorer of the open notebook, once it is drawn. If it never is, the test
    fails with what the notebook shows instead (each cell's output, a dialog, the kernel's
    state) and the end of JupyterLab's log: a timeout alone says nothing about why."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    explorer = page.locator(".rl-explorer.rl-live").nth(nth)
    try:
        explorer.wait_for(timeout=timeout)
    except PlaywrightTimeout:
        cells = page.locator(".jp-Notebook .jp-CodeCell")
        shown = [f"cell {i} {cells.nth(i).locator('.jp-InputArea-prompt').all_inner_texts()}: "
                 f"{''.join(cells.nth(i).locator('.jp-OutputArea').all_inner_texts())[-1500:]!r}"
                 for i in range(cells.count())]
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        status = page.locator(".jp-Notebook-ExecutionIndicator >> visible=true")
        state = status.first.get_attribute("data-status") if status.count() else None
        errors = getattr(page, "errors", None)
        pytest.fail(f"no live explorer #{nth} after {timeout / 1000:.0f} s. The notebook shows:\n"
                    + "\n".join(shown) + f"\ndialogs: {dialogs}; kernel: {state}; kernels "
                    f"running: {len(server.kernels())}; page errors: {errors}\n"
                    f"JupyterLab's log ends:\n{server.log.read_text(errors='replace')[-3000:]}")
    return explorer


def write_notebook(path: Path, cells: list[Any], kernel: bool = True) -> Path:
    """Write a Python notebook of nbformat cells. Without ``kernel`` it names neither kernel nor
    language, so JupyterLab starts none and asks which to start (see ``choose_no_kernel``)."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=cells)
    if kernel:
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}
        nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, path)
    return path


def run_notebook(page: Any, server: LabServer, name: str, source: str) -> None:
    """Write a one-cell notebook ``name`` of ``source`` in the server's root, open it in
    JupyterLab and run it to the end."""
    import nbformat

    write_notebook(server.root / name, [nbformat.v4.new_code_cell(source)])
    open_in_lab(page, server, name)
    wait_for_kernel_idle(page)
    run_all_cells(page)


def save_and_reopen(page: Any, server: LabServer) -> Any:
    """Save the open notebook, shut its kernel down and reload the page: what a reader who opens
    the saved notebook later sees (a new kernel, no widget models). Returns its first saved
    explorer, once drawn."""
    from playwright.sync_api import expect

    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    server.shutdown_kernels()
    page.reload()
    wait_for_kernel_idle(page)
    saved = page.locator(".rl-explorer.rl-saved").first
    saved.wait_for(timeout=60_000)
    return saved
