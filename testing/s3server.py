"""A real S3-protocol HTTP server (moto's server mode) for tests, in a subprocess.

A subprocess rather than moto's in-process mocks: the code under test then goes through
aiobotocore's real HTTP stack, and moto's patching cannot leak into other tests.
Use as a plugin (``pytest_plugins = ["testing.s3server"]`` or ``-p testing.s3server``) to get
the session-scoped ``s3_endpoint`` fixture, or call ``start_moto_server()`` directly.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

TEST_REGION = "us-east-1"
TEST_ACCESS_KEY_ID = "test"
TEST_SECRET_ACCESS_KEY = "test"

_START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers_http(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/moto-api/", timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP status means the server is up
    except OSError:
        return False


def _stopper(proc: subprocess.Popen[bytes]) -> Callable[[], None]:
    def stop() -> None:
        if proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    return stop


def start_moto_server() -> tuple[str, Callable[[], None]]:
    """Start moto on a free 127.0.0.1 port; return its URL and a function that stops it.

    Retries on another port if the one picked was taken between probing and binding.
    """
    env = {**os.environ, "AWS_DEFAULT_REGION": TEST_REGION}
    last_error = "did not start"
    for _ in range(3):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        stop = _stopper(proc)
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                last_error = f"exited with code {proc.returncode}"
                break
            if _answers_http(url):
                return url, stop
            time.sleep(0.1)
        else:
            last_error = f"did not answer within {_START_TIMEOUT:.0f}s"
        stop()
    raise RuntimeError(f"moto server {last_error}")


def s3_client_kwargs(endpoint_url: str) -> dict[str, Any]:
    """Arguments for ``aiobotocore`` ``create_client("s3", ...)`` against the test server."""
    return {
        "endpoint_url": endpoint_url,
        "region_name": TEST_REGION,
        "aws_access_key_id": TEST_ACCESS_KEY_ID,
        "aws_secret_access_key": TEST_SECRET_ACCESS_KEY,
    }


async def create_bucket(endpoint_url: str, bucket: str) -> None:
    """Create a bucket on the test server (each test gets its own, so tests stay independent)."""
    from aiobotocore.session import get_session

    async with get_session().create_client("s3", **s3_client_kwargs(endpoint_url)) as client:
        await client.create_bucket(Bucket=bucket)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """URL of a moto S3 server shared by the whole test session."""
    url, stop = start_moto_server()
    try:
        yield url
    finally:
        stop()
