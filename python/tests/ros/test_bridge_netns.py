"""paam bridge and RemoteClient on two hosts: two network namespaces joined by a veth pair.

The test makes the "hosts" itself: namespaces ``paam-srv-<pid>-<n>`` and ``paam-cli-<pid>-<n>``
with a veth pair between them, 10.123.0.1/24 on the server side and 10.123.0.2/24 on the client
side (addresses are per namespace, so parallel runs, whose names differ by pid, cannot clash),
removed again however the test ends. paamd and ``paam bridge`` run in the server namespace
(``ip netns exec``), a RemoteClient process in the client namespace. Nothing but the veth joins
them: ROS 2 discovery and every request and response cross it as UDP, as between two machines.

Discovery, as a real two-machine setup does it (each variant a test):

* ``multicast``: ROS 2's default, ``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET``: Fast DDS's Simple
  Discovery announces each participant by UDP multicast (239.255.0.1, port 7400 + 250 x
  domain) on the veth; a LAN that carries multicast needs nothing more.
* ``static-peers``: for networks without multicast (Wi-Fi that drops it, cloud VPCs):
  ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` (no multicast) and ``ROS_STATIC_PEERS`` set to
  the other host's address, so discovery goes by unicast to that peer. (Without the peer the
  two sides do not find each other: checked by hand, not here, as it costs a timeout.)

Both sides also get ``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``: the namespaces share one kernel and
/dev/shm, and Fast DDS must not take its shared-memory transport as it could between processes
it considered on one host. The veth's byte counters confirm that the measured requests crossed
it.

The client checks the results of several requests (vector_add of three sizes, matmul, a spin)
and then measures the remote round trip of a 1 KiB vector_add (200 requests), printed as
``remote round trip across namespaces: p50 X ms, p99 Y ms (N requests)``. Reproduce with
``sudo .venv/bin/python -m pytest python/tests/ros/test_bridge_netns.py -s``.

Skipped (with the reason) where namespaces cannot be made: not root (no CAP_NET_ADMIN), no
``ip`` command, or a kernel/container that refuses them.
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import pytest

from conftest import Procs

pytestmark = pytest.mark.timeout(240)

paam = pytest.importorskip("paam")

SERVER_ADDR, CLIENT_ADDR, PREFIX = "10.123.0.1", "10.123.0.2", 24
ROUND_TRIPS = 200
_instances = itertools.count()


def _ip(*args: str) -> str:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip() or r.returncode}")
    return r.stdout


class TwoHosts:
    """Two network namespaces joined by a veth pair, with addresses."""

    def __init__(self) -> None:
        k = next(_instances)
        pid = os.getpid()
        self.server = f"paam-srv-{pid}-{k}"
        self.client = f"paam-cli-{pid}-{k}"
        # interface names: at most 15 characters
        self.server_if, self.client_if = f"pvs{pid}x{k}"[:15], f"pvc{pid}x{k}"[:15]
        self.made: list[str] = []
        self.veth_here = False

    def create(self) -> None:
        for ns in (self.server, self.client):
            _ip("netns", "add", ns)
            self.made.append(ns)
        _ip("link", "add", self.server_if, "type", "veth", "peer", "name", self.client_if)
        self.veth_here = True  # until both ends are in the namespaces (which remove them)
        _ip("link", "set", self.server_if, "netns", self.server)
        _ip("link", "set", self.client_if, "netns", self.client)
        self.veth_here = False
        for ns, dev, addr in ((self.server, self.server_if, SERVER_ADDR),
                              (self.client, self.client_if, CLIENT_ADDR)):
            _ip("-n", ns, "addr", "add", f"{addr}/{PREFIX}", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("netns", "exec", ns, "true")  # processes may enter it, too

    def remove(self) -> None:
        if self.veth_here:  # an end left in this namespace: deleting it deletes the pair
            for dev in (self.server_if, self.client_if):
                subprocess.run(["ip", "link", "del", dev], capture_output=True, timeout=30)
        for ns in self.made:  # deleting a namespace deletes its end of the veth, and the pair
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        self.made.clear()

    def veth_bytes(self) -> int:
        """Bytes the server side's veth received and sent so far."""
        stats = json.loads(_ip("-n", self.server, "-j", "-s", "link", "show", "dev",
                               self.server_if))[0]["stats64"]
        return int(stats["rx"]["bytes"]) + int(stats["tx"]["bytes"])

    def argv(self, ns: str, *argv: str) -> list[str]:
        return ["ip", "netns", "exec", ns, *argv]


@pytest.fixture
def two_hosts():
    if os.geteuid() != 0:
        pytest.skip("creating network namespaces needs root (CAP_NET_ADMIN)")
    if shutil.which("ip") is None:
        pytest.skip("no `ip` command (iproute2) to create network namespaces")
    hosts = TwoHosts()
    try:
        hosts.create()
    except RuntimeError as err:
        hosts.remove()
        pytest.skip(f"cannot create network namespaces here: {err}")
    try:
        yield hosts
    finally:
        hosts.remove()


# The remote side: register through the bridge, check results, measure round trips, report.
CLIENT = r"""
import json, sys, time
import numpy as np
import paam
from paam.ros import RemoteClient

bridge, n = sys.argv[1], int(sys.argv[2])
t0 = time.monotonic()
with RemoteClient(priority=5, kernels=["vector_add", "matmul", "spin"], bridge=bridge,
                  connect_timeout_sec=60, bridge_timeout_sec=20) as c:
    print("REGISTERED", round(time.monotonic() - t0, 2), flush=True)
    rng = np.random.default_rng(7)
    checked = 0
    for size in (1, 1000, 65536):
        a = rng.standard_normal(size).astype(np.float32)
        b = rng.standard_normal(size).astype(np.float32)
        np.testing.assert_array_equal(c.request("vector_add", a, b, timeout_sec=60), a + b)
        checked += 1
    A = rng.standard_normal((8, 16)).astype(np.float32)
    B = rng.standard_normal((16, 4)).astype(np.float32)
    np.testing.assert_allclose(c.request("matmul", A, B, timeout_sec=60), A @ B, rtol=1e-5,
                               atol=1e-5)
    checked += 1
    assert c.request("spin", duration_ms=5.0, timeout_sec=60) >= 5.0
    checked += 1
    print("CHECKED", checked, flush=True)
    sys.stdin.readline()  # the test reads the veth's counters now
    a = np.arange(128, dtype=np.float32)
    b = np.ones(128, dtype=np.float32)
    ms = []
    for i in range(n):
        a[0] = i
        t = time.perf_counter()
        out = c.request("vector_add", a, b, timeout_sec=60)
        ms.append((time.perf_counter() - t) * 1e3)
        assert out[0] == i + 1 and out[-1] == a[-1] + 1
    print("RTT " + json.dumps({"p50": float(np.percentile(ms, 50)),
                               "p99": float(np.percentile(ms, 99)), "n": n}), flush=True)
"""


def _env(mode: str, peer: str) -> dict[str, str]:
    env = dict(os.environ)
    env["FASTDDS_BUILTIN_TRANSPORTS"] = "UDPv4"
    env.pop("ROS_STATIC_PEERS", None)
    if mode == "multicast":
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SUBNET"
    else:
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        env["ROS_STATIC_PEERS"] = peer
    return env


@pytest.mark.parametrize("mode", ["multicast", "static-peers"])
def test_remote_client_reaches_the_bridge_on_another_host(two_hosts, procs: Procs, mode, capsys):
    from paam.testing import find_paamd

    sock_dir = tempfile.mkdtemp(prefix="paam-ns-")
    try:
        socket = os.path.join(sock_dir, "paamd.sock")
        server_env = _env(mode, CLIENT_ADDR)
        paamd = procs.start(two_hosts.argv(two_hosts.server, find_paamd(), "--socket", socket,
                                           "--backend", "cpu", "--device-cpu", "-2"),
                            env=server_env)
        procs.readline_until(paamd, "paamd: serving on", 30)
        name = f"bridge_{uuid.uuid4().hex[:8]}"
        bridge = procs.start(two_hosts.argv(two_hosts.server, sys.executable, "-m", "paam.cli",
                                            "bridge", "--name", name, "--socket", socket),
                             env=server_env)
        procs.readline_until(bridge, f"paam bridge '{name}' ready", 60)

        client = procs.start(two_hosts.argv(two_hosts.client, sys.executable, "-c", CLIENT,
                                            name, str(ROUND_TRIPS)),
                             env=_env(mode, SERVER_ADDR))
        procs.readline_until(client, "REGISTERED", 90)
        assert procs.readline_until(client, "CHECKED", 120) == "CHECKED 5"
        before = two_hosts.veth_bytes()
        client.stdin.write(b"go\n")
        client.stdin.flush()
        rtt = json.loads(procs.readline_until(client, "RTT ", 180)[4:])
        crossed = two_hosts.veth_bytes() - before
        assert client.wait(timeout=60) == 0
    finally:
        shutil.rmtree(sock_dir, ignore_errors=True)

    assert rtt["n"] == ROUND_TRIPS and 0 < rtt["p50"] <= rtt["p99"]
    # Each request carried two 512-byte vectors there and one back: all over the veth.
    assert crossed >= ROUND_TRIPS * 3 * 512, crossed
    with capsys.disabled():
        print(f"\nremote round trip across namespaces: p50 {rtt['p50']:.2f} ms, p99 "
              f"{rtt['p99']:.2f} ms ({rtt['n']} requests; discovery: {mode}; "
              f"{crossed / rtt['n']:.0f} veth bytes per request)")
