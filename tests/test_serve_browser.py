"""`sealtop serve` in a real headless browser (Debian's chromium and chromedriver, selenium).

A real engine (tiny preset, CPU) offers its socket; `sealtop serve` runs textual-serve, which
starts one read-only `sealtop attach` per browser connection. The page's terminal draws on a
canvas, so the test reads what the app sends it: a script added before the page loads keeps a
copy of every byte that arrives on the page's websocket, decoded as text. The dashboard must
appear and a key press must reach the app (? opens the help); a tuning key changes the engine's
knob only when serve was started with --allow-control.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

TAP_JS = """
window.__tty = "";
const Native = window.WebSocket;
const dec = new TextDecoder();
window.WebSocket = function (url, protocols) {
  const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
  ws.addEventListener("message", (e) => {
    if (typeof e.data !== "string") {
      window.__tty += dec.decode(new Uint8Array(e.data), {stream: true});
      if (window.__tty.length > 4000000) window.__tty = window.__tty.slice(-2000000);
    }
  });
  return ws;
};
window.WebSocket.prototype = Native.prototype;
Object.assign(window.WebSocket, Native);
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}")


@pytest.fixture(scope="module")
def engine_socket(tmp_path_factory):
    """A running tiny engine, its stream tapped into an AttachServer at a private socket. One
    for the module, so the engine starts once: each test only reads its dashboard and compares
    partition_workers with the value before its own key press."""
    import threading

    from engine.attach import AttachServer
    from engine.config import EngineConfig
    from engine.pipeline.engine import Engine, Job

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("run")))
        cfg = EngineConfig()
        cfg.preset, cfg.partitions, cfg.partition_workers = "tiny", 1, 1
        cfg.param_cache = str(tmp_path_factory.mktemp("params"))  # not the operator's cache
        eng = Engine(cfg)
        q = eng.subscribe()
        srv = AttachServer(eng)
        done = threading.Event()

        def pump() -> None:
            while not done.is_set():
                try:
                    ev = q.get(timeout=0.1)
                except Exception:  # noqa: BLE001 - queue.Empty
                    continue
                if isinstance(ev, dict):
                    srv.handle(ev)

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        eng.start()
        for seed in range(3):
            eng.submit(Job("tiny", 1, seed + 1))
        try:
            yield eng, srv
        finally:
            eng.stop(drain=False)
            done.set()
            t.join(timeout=5)
            srv.close()


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="needs Debian's chromium and "
                    "chromium-driver (apt-get install chromium chromium-driver)")
@pytest.mark.parametrize("control", [False, True],
                         ids=["read-only", "allow-control"])
def test_serve_shows_the_dashboard_takes_keys_and_tunes_only_with_control(
        engine_socket, control: bool) -> None:
    pytest.importorskip("textual_serve")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    eng, srv = engine_socket
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    serve = subprocess.Popen(
        [sys.executable, "-m", "app.main", "serve", "--port", str(port), "--engine", str(srv.path)]
        + (["--allow-control"] if control else []),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1600,1000"):
        opts.add_argument(flag)
    driver = None
    try:
        _wait_for(lambda: _connects(port), 30, "serve to listen")
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": TAP_JS})
        driver.get(f"http://127.0.0.1:{port}/")
        tty = lambda: driver.execute_script("return window.__tty || ''")  # noqa: E731
        _wait_for(lambda: "pipeline" in tty() and "proofs" in tty(), 90, "the dashboard")
        before = eng.config.partition_workers
        term = driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea")
        term.send_keys("?")
        _wait_for(lambda: "sealtop keys" in tty(), 30, "the help screen after '?'")
        term.send_keys("?")  # ? again closes the help
        time.sleep(1.5)  # let the dashboard take the focus back before the next key
        term.send_keys("W")  # partition_workers + 1
        if control:
            _wait_for(lambda: eng.config.partition_workers == before + 1, 30,
                      "'W' to raise partition_workers")
        else:
            # keys reach the app in order: once the help drawn by a later '?' arrives, the
            # app has handled 'W' (a knob it sent would already be on its way to the engine)
            helps = tty().count("sealtop keys")
            term.send_keys("?")
            _wait_for(lambda: tty().count("sealtop keys") > helps, 30, "the help after 'W' '?'")
            time.sleep(1)
            assert eng.config.partition_workers == before, "a read-only browser changed a knob"
    finally:
        if driver is not None:
            driver.quit()
        os.killpg(serve.pid, signal.SIGTERM)
        try:
            out, _ = serve.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            out, _ = serve.communicate()
    assert ("control allowed" if control else "read-only") in out, out


def _connects(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
