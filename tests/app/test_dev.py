"""dev.py app: the install says what it does and shows pip's progress; the URL is printed once the
app answers (issue 16: a silent five-minute install, then the URL lost in the output)."""

from __future__ import annotations

import http.server
import importlib.util
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
dev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dev)


def test_install_announces_itself_and_shows_progress(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(dev, "VENV", tmp_path)
    monkeypatch.setattr(dev, "PY", Path(__import__("sys").executable))
    monkeypatch.setattr(dev, "_check", lambda cmd, what: calls.append(cmd))
    dev.ensure_venv("all")
    out = capsys.readouterr().out
    assert "installing Diversity Explorer" in out and "a few minutes" in out and "installed in" in out
    assert "-q" not in calls[0] and "--progress-bar" in calls[0]
    dev.ensure_venv("all")  # stamped: nothing to do, nothing printed
    assert capsys.readouterr().out == "" and len(calls) == 1


def test_url_banner_once_the_app_answers(capsys):
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        url = dev.app_url(["--server.port", str(port)])
        assert url == f"http://127.0.0.1:{port}"  # the address the server listens on (issue 26, item 17)

        class Running:
            def poll(self):
                return None

        assert dev.wait_until_ready(url, Running(), timeout=20)
        out = capsys.readouterr().out
        assert f"Diversity Explorer is ready: {url}" in out and "=====" in out
    finally:
        server.shutdown()
    assert dev.app_url(["--server.port=9000"]) == "http://127.0.0.1:9000"
    assert dev.app_url([]) == "http://127.0.0.1:8501"
